"""Following a session another process writes: ``session/load`` of a held session (the live tail over ACP).

A ``session/load`` whose resume is refused with ``SESSION_LOCKED`` (another live
process holds the session's writer lock, or its PostgreSQL lease) does not fail: the
bridge answers it from the stored log and keeps *following* the session on this
connection, read-only. :class:`SessionFollowing` owns those followed sessions:

* **Replay, then follow.** :meth:`~SessionFollowing.open` reads the stored log (reads
  only: no lock is claimed, nothing is repaired), sends it as ``session/update``
  notifications exactly like a load replay, and starts one task that follows the log
  from the last replayed seq (``SessionPersistence.follow``: each event once, in seq
  order, once its writer stored it). The task waits until the load is answered, so
  every followed update comes after the answer. One presenter serves the replay and
  the follow, so a tool call replayed before its result was stored is still presented
  with its arguments. User messages are shown too (``user_message_chunk``): the prompt
  was typed on another connection.
* **Stopping.** :meth:`~SessionFollowing.stop` ends one follow at once (synchronously:
  no update of it is sent after it returns) and hands back what was followed, so a
  takeover continues exactly after the last update sent; :meth:`~SessionFollowing.close`
  stops them all and returns the tasks still winding down, which the bridge awaits on
  teardown (no task outlives the connection). A follow that ends by itself (the
  session was deleted) or fails (damaged storage: logged) stays registered, read-only.
* **Refusing.** :func:`writer_still_runs` is the error of a prompt while the writer
  still holds the session: ``-32000``, naming the holder as the persistence error
  gives it (its pid, and its host for PostgreSQL); :func:`read_only` (also ``-32000``)
  refuses what would change a followed session: ``session/set_mode``, the model
  switch, ``_session/steering``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, cast

from acp.exceptions import RequestError

from dsh.acp.opening import Servers
from dsh.acp.stream import Notify, TerminalContext, ToolLookup, ToolPresenter, stream_session_event_update
from dsh.core.persistence import PersistenceBackend, PersistenceError, SessionPersistence, continuing
from dsh.core.session import SessionEvent
from dsh.kernel import unwrap

SESSION_FOLLOWED: Final = -32000
"""The JSON-RPC error code of a prompt on a session another process still writes."""


def writer_still_runs(session_id: str, refusal: PersistenceError) -> RequestError:
    """The error of prompting a followed session whose writer still holds it (``refusal`` names it)."""
    return RequestError(
        SESSION_FOLLOWED,
        f"session {session_id} is followed read-only on this connection: {refusal} "
        "(this connection follows it until that writer ends; a prompt after that takes it over)",
    )


def read_only(session_id: str) -> RequestError:
    """The error of a request that would change a followed session (its mode, its model, steering)."""
    return RequestError(
        SESSION_FOLLOWED,
        f"session {session_id} is followed read-only on this connection (another process writes it); "
        "a session/prompt takes it over once that writer has ended",
    )


@dataclass
class Followed:
    """One session followed on this connection.

    ``last_seq`` is the seq of the last event sent as updates (-1 for none);
    ``servers`` are the MCP servers its load asked for, started when a prompt takes it over.
    """

    session_id: str
    servers: Servers
    terminal: TerminalContext
    presenter: ToolPresenter
    last_seq: int = -1
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class SessionFollowing:
    """The followed sessions of one bridge (see the module docstring)."""

    def __init__(
        self,
        persistence: SessionPersistence,
        tools: ToolLookup,
        notify: Notify,
        warn: Callable[[str], None],
    ) -> None:
        self._persistence = persistence
        self._tools = tools
        self._notify = notify
        self._warn = warn
        self._followed: dict[str, Followed] = {}
        self._ending: set[asyncio.Task[None]] = set()

    def get(self, session_id: str) -> Followed | None:
        """The follow of ``session_id`` on this connection, or None."""
        return self._followed.get(session_id)

    async def open(self, session_id: str, servers: Servers, terminal: TerminalContext) -> None:
        """Replay the stored log of ``session_id`` as updates and follow it once the load is answered.

        The stored log is read through the backend's storage hooks (every dsh backend
        has them); a session deleted meanwhile is followed from nothing and its follow
        ends at once.
        """
        backend = cast(PersistenceBackend, unwrap(self._persistence))
        followed = Followed(session_id, servers, terminal, ToolPresenter(self._tools, self._warn))
        self.send(followed, continuing(await backend.read_after(session_id, -1) or [], -1))
        answered = asyncio.Event()
        asyncio.get_running_loop().call_soon(answered.set)  # after the load answer is written
        followed.task = asyncio.get_running_loop().create_task(
            self._follow(followed, answered), name=f"acp: follow {session_id}"
        )
        followed.task.add_done_callback(self._ended)
        self._followed[session_id] = followed

    def send(self, followed: Followed, events: Sequence[SessionEvent]) -> None:
        """Send ``events`` (continuing ``followed.last_seq``) as the updates of its log."""
        for event in events:
            stream_session_event_update(
                followed.session_id, event, self._notify, followed.presenter, followed.terminal, True
            )
            followed.last_seq = event.seq

    async def _follow(self, followed: Followed, answered: asyncio.Event) -> None:
        await answered.wait()
        events = self._persistence.follow(followed.session_id, followed.last_seq)
        try:
            async for event in events:
                self.send(followed, (event,))
        finally:
            await events.aclose()

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._ending.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._warn(f"acp: following a session stopped: {error}")

    def stop(self, session_id: str) -> Followed | None:
        """End the follow of ``session_id`` now (no update of it is sent after this); None when it has none."""
        followed = self._followed.pop(session_id, None)
        if followed is not None:
            self._cancel(followed)
        return followed

    def _cancel(self, followed: Followed) -> None:
        task = followed.task
        assert task is not None  # set by open() before the follow is registered
        if not task.done():
            self._ending.add(task)
            task.cancel()

    def close(self) -> list[asyncio.Task[None]]:
        """Stop every follow; the tasks still winding down (await them)."""
        for followed in list(self._followed.values()):
            self.stop(followed.session_id)
        return list(self._ending)
