"""The shared contracts against the SQLite backend: SPEC §4.4 on ``:memory:``, §4.5 on a file."""

from __future__ import annotations

import pytest

from tests.core.persistence.contract import COORDINATOR_CONTRACT, PERSISTENCE_CONTRACT, Case, case_id
from tests.core.persistence.helpers import Rig


@pytest.mark.parametrize("case", PERSISTENCE_CONTRACT, ids=case_id)
async def test_session_persistence_contract_sqlite(memory_rig: Rig, case: Case) -> None:
    """SessionPersistence contract: sqlite"""
    await case(memory_rig)


@pytest.mark.parametrize("case", COORDINATOR_CONTRACT, ids=case_id)
async def test_persistence_coordinator_orchestration_sqlite(rig: Rig, case: Case) -> None:
    """PersistenceCoordinator orchestration: sqlite"""
    await case(rig)
