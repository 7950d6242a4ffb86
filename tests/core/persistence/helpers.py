"""A real kernel stack for persistence tests: the session store plus one backend plugin.

A :class:`BackendKit` says how to mount a backend over storage that survives remounts
(the same MemoryStorage, directory or database file), so "a fresh backend instance"
is a :meth:`Rig.remount`. Live sessions are created through their own plugin fiber,
so a test can dispose that fiber to detach the session (the HMR situations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dsh.core.llm import to_json
from dsh.core.persistence import SESSION_PERSISTENCE, CoordinatedPersistence, SessionPersistence
from dsh.core.session import (
    SESSION_FLUSH,
    SESSIONS,
    Session,
    SessionEvent,
    SessionHeader,
    SessionMeta,
    SessionStore,
    parse_session_header,
    session_event_line,
)
from dsh.kernel import Context, Fiber, PluginSpec
from tests.core.session.helpers import (  # the event builders, shared with the session tests
    assistant_message,
    event,
    log,
    one_turn_log,
    step,
    text,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)

CWD = "/w"


__all__ = [
    "assistant_message",
    "event",
    "log",
    "one_turn_log",
    "step",
    "text",
    "tool_call_block",
    "tool_result",
    "turn_end",
    "turn_start",
    "user_message",
]


def meta(id: str, cwd: str | None = None, **extra: Any) -> SessionHeader:
    """``{version: 1, id, createdAt: 1000, cwd?}`` plus ``extra`` wire keys (``parentSession``, ...)."""
    header: dict[str, Any] = {"version": 1, "id": id, "createdAt": 1000}
    if cwd is not None:
        header["cwd"] = cwd
    header.update(extra)
    return parse_session_header(header)


def seqs(events: Sequence[SessionEvent]) -> list[int]:
    return [event.seq for event in events]


def types(events: Sequence[SessionEvent]) -> list[str]:
    return [event.type for event in events]


def texts(events: Sequence[SessionEvent]) -> list[str]:
    """The JSON line of each event (what "byte-identical" compares)."""
    return [session_event_line(event) for event in events]


def open_turn(turn: int, start: int) -> list[SessionEvent]:
    """``turn/start`` + ``step/start`` of a turn a crash interrupted."""
    return log(("turn/start", turn_start(turn)), ("step/start", step(turn, 1)), start=start)


def short_turn(turn: int, start: int) -> list[SessionEvent]:
    """``turn/start`` + ``turn/end {completed}``."""
    return log(("turn/start", turn_start(turn)), ("turn/end", turn_end(turn)), start=start)


def replay(session: Session, events: Sequence[SessionEvent]) -> None:
    """Append ``events``' types and data to the live ``session`` (fresh seqs and times)."""
    for item in events:
        session.append(item.type, to_json(item.data))  # type: ignore[union-attr]


RETIRED_OR_BOUND = r"already has a persisted log on disk that does not match|already bound to a different live session"
"""The refusal of a new session reusing the id of a disposed one that stored events (both ``ID_COLLISION``): the
stored log's, once the disposed session's retirement (``session/disposed``) has forgotten it, else the still-bound
owner's (the retirement in flight)."""


@dataclass
class BackendKit:
    """One backend under test: its plugin, a config over shared storage, a tail corrupter."""

    name: str
    plugin: type[CoordinatedPersistence]
    config: Any
    corrupt_tail: Callable[[str, str | None], None] | None = None


class Rig:
    """A root context with a SessionStore; mounts the kit's backend on demand."""

    def __init__(self, kit: BackendKit) -> None:
        self.kit = kit
        self.ctx = Context()
        self.fiber: Fiber | None = None

    async def start(self) -> Rig:
        await self.ctx.plugin(SessionStore)
        return self

    async def close(self) -> None:
        await self.ctx.dispose()

    @property
    def store(self) -> SessionStore:
        return self.ctx[SESSIONS]

    @property
    def persistence(self) -> SessionPersistence:
        return self.ctx[SESSION_PERSISTENCE]

    @property
    def backend(self) -> CoordinatedPersistence:
        """The mounted backend instance itself (for white-box access to ``inits``)."""
        assert self.fiber is not None
        instance: CoordinatedPersistence = self.fiber.instance
        return instance

    async def mount(self) -> SessionPersistence:
        self.fiber = await self.ctx.plugin(self.kit.plugin, self.kit.config)
        return self.persistence

    async def unmount(self) -> None:
        assert self.fiber is not None
        await self.fiber.dispose()
        self.fiber = None

    async def remount(self) -> SessionPersistence:
        """Dispose the backend (draining it) and mount a fresh instance over the same storage."""
        await self.unmount()
        return await self.mount()

    async def live(
        self, id: str, seed: Sequence[SessionEvent] | None = None, cwd: str | None = CWD
    ) -> tuple[Fiber, Session]:
        """A live session created through its own plugin fiber (dispose it to detach the session)."""
        made: list[Session] = []

        def apply(ctx: Context, _config: object) -> None:
            made.append(
                ctx[SESSIONS].create(id, seed=seed, meta=SessionMeta() if cwd is None else SessionMeta(cwd=cwd))
            )

        fiber = await self.ctx.plugin(PluginSpec(name=f"creator of {id}", apply=apply, inject=["sessions"]))
        return fiber, made[0]

    async def init(self, session: Session) -> None:
        """Wait for the backend's adoption of ``session``."""
        await self.backend.inits[session]

    async def flush(self, session: Session) -> None:
        await self.ctx.parallel(SESSION_FLUSH, session)


def one_user_turn(turn: int = 1, start: int = 0) -> list[SessionEvent]:
    """turn/start, user "hi", turn/end: a short balanced turn."""
    return log(
        ("turn/start", turn_start(turn)),
        ("user/message", user_message("hi")),
        ("turn/end", turn_end(turn)),
        start=start,
    )
