"""The shared contracts (SPEC §4.4, §4.5) against the in-memory backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.persistence import MemoryPersistence, MemoryStorage
from tests.core.persistence.contract import COORDINATOR_CONTRACT, PERSISTENCE_CONTRACT, Case, case_id
from tests.core.persistence.helpers import BackendKit, Rig


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory", MemoryPersistence, {"store": MemoryStorage()})).start()
    yield rig
    await rig.close()


@pytest.mark.parametrize("case", PERSISTENCE_CONTRACT, ids=case_id)
async def test_session_persistence_contract_memory(rig: Rig, case: Case) -> None:
    """SessionPersistence contract: memory"""
    await case(rig)


@pytest.mark.parametrize("case", COORDINATOR_CONTRACT, ids=case_id)
async def test_persistence_coordinator_orchestration_memory(rig: Rig, case: Case) -> None:
    """PersistenceCoordinator orchestration: memory"""
    await case(rig)
