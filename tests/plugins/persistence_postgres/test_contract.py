"""The shared contracts against the PostgreSQL backend (SPEC §4.4 and §4.5), each test on an empty schema."""

from __future__ import annotations

import pytest

from tests.core.persistence.contract import COORDINATOR_CONTRACT, PERSISTENCE_CONTRACT, Case, case_id
from tests.core.persistence.helpers import Rig


@pytest.mark.parametrize("case", PERSISTENCE_CONTRACT, ids=case_id)
async def test_session_persistence_contract_postgres(rig: Rig, case: Case) -> None:
    """SessionPersistence contract: postgres"""
    await case(rig)


@pytest.mark.parametrize("case", COORDINATOR_CONTRACT, ids=case_id)
async def test_persistence_coordinator_orchestration_postgres(rig: Rig, case: Case) -> None:
    """PersistenceCoordinator orchestration: postgres"""
    await case(rig)
