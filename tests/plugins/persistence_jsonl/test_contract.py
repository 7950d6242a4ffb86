"""The shared contracts (SPEC §4.4, §4.5) against the JSONL backend."""

from __future__ import annotations

import pytest

from tests.core.persistence.contract import COORDINATOR_CONTRACT, PERSISTENCE_CONTRACT, Case, case_id
from tests.core.persistence.helpers import Rig


@pytest.mark.parametrize("case", PERSISTENCE_CONTRACT, ids=case_id)
async def test_session_persistence_contract_jsonl(rig: Rig, case: Case) -> None:
    """SessionPersistence contract: jsonl"""
    await case(rig)


@pytest.mark.parametrize("case", COORDINATOR_CONTRACT, ids=case_id)
async def test_persistence_coordinator_orchestration_jsonl(rig: Rig, case: Case) -> None:
    """PersistenceCoordinator orchestration: jsonl"""
    await case(rig)
