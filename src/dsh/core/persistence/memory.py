"""MemoryPersistence: a dict-backed backend (tests, demos, ephemeral runs).

Nothing survives the process. Two instances given the same :class:`MemoryStorage`
(config ``store``) see the same sessions, which is how a reload is simulated.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from dsh.core.persistence.backend import StoredPrefix
from dsh.core.persistence.coordinated import CoordinatedPersistence
from dsh.core.persistence.errors import PersistenceError
from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import Context


class MemoryStorage:
    """The stored logs of a :class:`MemoryPersistence`, by id, in creation order."""

    def __init__(self) -> None:
        self.logs: dict[str, tuple[SessionHeader, list[SessionEvent]]] = {}


class MemoryConfig(BaseModel):
    """``store``: share storage with other instances; a fresh one when absent."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    store: MemoryStorage | None = None


class MemoryPersistence(CoordinatedPersistence):
    """In-memory ``session_persistence`` plugin. Never reports a torn tail.

    Storage holds the immutable headers and events themselves (the lists are its
    own: a caller's list is never kept, nor one handed out). Storage has no cwd
    scopes: ``load_live`` ignores ``cwd``.
    """

    name = "session-persistence-memory"
    inject = ("sessions",)
    Config = MemoryConfig

    def __init__(self, ctx: Context, config: MemoryConfig) -> None:
        self.storage = config.store if config.store is not None else MemoryStorage()
        super().__init__(ctx)

    async def load_stored(self, id: str) -> StoredPrefix | None:
        stored = self.storage.logs.get(id)
        if stored is None:
            return None
        meta, events = stored
        return StoredPrefix(meta, list(events))

    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        return await self.load_stored(id)

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        id = meta.id
        if not materialized:
            if id in self.storage.logs:
                raise PersistenceError(
                    f'refusing to materialize "{id}": a log already exists in this storage (load/resume it instead)',
                    "SESSION_EXISTS",
                )
            self.storage.logs[id] = (meta, [])
        self.storage.logs[id][1].extend(events)

    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        self.storage.logs[meta.id][1].extend(closers)

    async def delete_stored(self, id: str) -> None:
        self.storage.logs.pop(id, None)

    async def list(self) -> builtins.list[SessionHeader]:
        return [meta for meta, _events in self.storage.logs.values()]
