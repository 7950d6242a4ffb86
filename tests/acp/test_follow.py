"""``session/load`` of a session another writer holds: replay, live follow, refused prompts, takeover, teardown.

The other writer is a second JSONL backend instance over the same sessions root, in this
process: it claims the session's real writer lock (an ``flock`` of its own open file, so
the bridge's backend is refused exactly as it would be by another process) and appends
events the way a running writer stores them.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from dsh.acp.following import SESSION_FOLLOWED
from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence
from dsh.core.session import SessionEvent, SessionStore, TurnEndEvent, TurnStartEvent
from dsh.kernel import Context, unwrap
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.scripted import text_response
from tests.acp.client import AcpTestClient, RpcResponseError, message_text
from tests.acp.helpers import CWD, bridge_stack
from tests.acp.test_load import persist_turn
from tests.core.session.helpers import (
    assistant_message,
    log,
    step,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)


class OtherWriter:
    """A second backend over ``root`` holding the writer lock of ``session_id`` until :meth:`close`."""

    def __init__(self, ctx: Context, persistence: SessionPersistence, session_id: str, stored: int) -> None:
        self._ctx = ctx
        self.persistence = persistence
        self.session_id = session_id
        self.next_seq = stored
        self._closed = False

    @classmethod
    async def hold(cls, root: Path, session_id: str) -> OtherWriter:
        ctx = Context()
        await ctx.plugin(SessionStore)
        await ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
        persistence = ctx[SESSION_PERSISTENCE]
        loaded = await persistence.load(session_id)
        return cls(ctx, persistence, session_id, len(loaded.events))

    async def store(self, *entries: tuple[str, Any]) -> None:
        events = log(*entries, start=self.next_seq)
        await self.persistence.append(self.session_id, events)
        self.next_seq += len(events)

    async def close(self) -> None:
        """Release the lock (once), as the writer's process ending does."""
        if not self._closed:
            self._closed = True
            await self._ctx.dispose()


def call(call_id: str) -> tuple[str, Any]:
    return "tool/call", {"turn": 2, "step": 1, "callId": call_id, "name": "bash", "arguments": '{"command":"ls"}'}


def cards(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (u["sessionUpdate"], u["toolCallId"], u["status"])
        for u in updates
        if u["sessionUpdate"].startswith("tool_call")
    ]


async def settled(client: AcpTestClient, count: int) -> None:
    """Wait until the client has ``count`` updates."""
    await client.wait_for(lambda c: len(c.updates) >= count)


def follow_tasks() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks() if task.get_name().startswith("acp: follow ")]


async def follows_left(count: int) -> None:
    """Wait until ``count`` follow tasks exist (a stopped follow's task ends after it is cancelled)."""

    async def poll() -> None:
        while len(follow_tasks()) != count:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), 10)


async def test_a_held_session_is_replayed_then_followed_read_only_and_taken_over_once_its_writer_ends(
    tmp_path: Path,
) -> None:
    session_id = await persist_turn(tmp_path, "remember this", "remembered answer")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path, [text_response("mine now")]) as follower:
            await follower.client.initialize()
            answer = await follower.client.load_session(session_id, CWD)
            assert answer == {"_meta": {"following": {"writer": answer["_meta"]["following"]["writer"]}}}
            assert "in use by another dsh process" in answer["_meta"]["following"]["writer"]
            assert message_text(follower.updates, "user_message_chunk") == "remember this"
            assert message_text(follower.updates) == "remembered answer"
            assert follower.agents.get(session_id) is None  # nothing runs it here
            replayed = len(follower.updates)
            await writer.store(
                ("turn/start", turn_start(2)),
                ("user/message", user_message("more")),
                ("step/start", step(2, 1)),
                ("assistant/message", assistant_message(2, 1, tool_call_block("c1"), tool_call_block("c2"))),
                call("c1"),
            )
            await settled(follower.client, replayed + 2)
            assert message_text(follower.updates[replayed:], "user_message_chunk") == "more"
            assert cards(follower.updates[replayed:]) == [("tool_call", "c1", "in_progress")]
            with pytest.raises(RpcResponseError) as refused:
                await follower.client.prompt(session_id, "let me")
            assert refused.value.error["code"] == SESSION_FOLLOWED
            message = refused.value.error["message"]
            assert f"session {session_id} is followed read-only on this connection" in message
            assert "in use by another dsh process" in message
            assert await follower.client.request("session/cancel", {"sessionId": session_id}) is None  # a no-op
            for method, params in (
                ("session/set_config_option", {"configId": "model", "value": "mock"}),
                ("_session/steering", {"prompt": [{"type": "text", "text": "faster"}]}),
            ):
                changed = await follower.client.send(method, {"sessionId": session_id, **params})
                assert changed["error"] == {
                    "code": SESSION_FOLLOWED,
                    "message": f"session {session_id} is followed read-only on this connection "
                    "(another process writes it); a session/prompt takes it over once that writer has ended",
                }
            await writer.store(("tool/result", tool_result(2, 1, "c1", "a b")), call("c2"))
            await settled(follower.client, replayed + 4)
            await writer.close()  # ends inside its turn: c2 never answered, turn 2 never ended
            before = len(follower.updates)
            assert await follower.client.prompt(session_id, "take over") == {"stopReason": "end_turn"}
            assert cards(follower.updates[replayed:]) == [
                ("tool_call", "c1", "in_progress"),
                ("tool_call_update", "c1", "completed"),
                ("tool_call", "c2", "in_progress"),
                ("tool_call_update", "c2", "failed"),  # the takeover's repair, sent before the turn
            ]
            assert message_text(follower.updates[before:]) == "mine now"
            events = follower.agent(session_id).session.events
            assert [event.seq for event in events] == list(range(len(events)))
            starts = [event.data.turn for event in events if type(event) is TurnStartEvent]
            ends = [event.data.turn for event in events if type(event) is TurnEndEvent]
            assert starts == ends == [1, 2, 3]
            await follows_left(0)
    finally:
        await writer.close()


async def test_loading_a_followed_session_again_replays_it_and_follows_it_once(tmp_path: Path) -> None:
    session_id = await persist_turn(tmp_path, "hi", "first answer")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path) as follower:
            await follower.client.initialize()
            await follower.client.load_session(session_id, CWD)
            await follower.client.load_session(session_id, CWD)
            assert message_text(follower.updates) == "first answer" * 2
            await follows_left(1)
            replayed = len(follower.updates)
            await writer.store(("turn/start", turn_start(2)), ("user/message", user_message("again")))
            await settled(follower.client, replayed + 1)
            await writer.store(("turn/end", turn_end(2)))
            await asyncio.sleep(0.3)  # a second follow would have sent the message twice by now
            assert follower.updates[replayed:] == [
                {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "again"}}
            ]
            await follower.close_client_transport()
            assert follow_tasks() == []  # the teardown ended the follow
    finally:
        await writer.close()


async def test_two_prompts_at_once_on_a_followed_session_take_it_over_once(tmp_path: Path) -> None:
    session_id = await persist_turn(tmp_path, "hi", "first answer")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path, [text_response("taken")]) as follower:
            await follower.client.initialize()
            await follower.client.load_session(session_id, CWD)
            await writer.close()
            first = follower.client.prompt_future(session_id, "one")
            second = follower.client.prompt_future(session_id, "two")
            assert (await first)["result"] == {"stopReason": "end_turn"}
            assert (await second)["error"] == {
                "code": -32602,
                "message": f"Invalid params: session {session_id} is being taken over by another prompt",
            }
    finally:
        await writer.close()


async def test_a_followed_session_that_is_deleted_ends_its_follow_and_cannot_be_taken_over(
    tmp_path: Path,
) -> None:
    session_id = await persist_turn(tmp_path, "hi", "first answer")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path) as follower:
            await follower.client.initialize()
            await follower.client.load_session(session_id, CWD)
            (task,) = follow_tasks()
            replayed = len(follower.updates)
            await writer.store(("turn/start", turn_start(2)), ("user/message", user_message("bye")))
            await settled(follower.client, replayed + 1)  # the follow has read the log
            await writer.persistence.delete(session_id)
            await asyncio.wait_for(asyncio.wait({task}), 10)
            assert task.exception() is None  # deleted: the follow ends by itself
            await writer.close()
            with pytest.raises(RpcResponseError) as refused:
                await follower.client.prompt(session_id, "anyone?")
            assert refused.value.error["code"] == -32603
            assert "not found" in str(refused.value.error)
    finally:
        await writer.close()


async def test_a_follow_whose_log_is_damaged_stops_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session_id = await persist_turn(tmp_path, "hi", "first answer")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path) as follower:
            await follower.client.initialize()
            await follower.client.load_session(session_id, CWD)
            (task,) = follow_tasks()
            (path,) = (tmp_path / "sessions").rglob("*.jsonl")
            lines = path.read_text().splitlines(keepends=True)
            path.write_text("".join([lines[0], "not json\n", *lines[2:]]))
            with caplog.at_level(logging.WARNING):
                await asyncio.wait_for(asyncio.wait({task}), 10)
            assert "acp: following a session stopped" in caplog.text
    finally:
        await writer.close()


async def test_a_load_of_a_held_session_that_finishes_after_a_client_disconnect_follows_nothing(
    tmp_path: Path,
) -> None:
    session_id = await persist_turn(tmp_path, "hi", "x")
    writer = await OtherWriter.hold(tmp_path / "sessions", session_id)
    try:
        async with bridge_stack(tmp_path) as loader:
            await loader.client.initialize()
            service = unwrap(loader.persistence)
            real_read = service.read_after
            entered = asyncio.Event()
            gate = asyncio.Event()

            async def gated_read(read_id: str, after_seq: int) -> list[SessionEvent] | None:
                entered.set()
                await gate.wait()
                return await real_read(read_id, after_seq)

            service.read_after = gated_read  # type: ignore[method-assign]
            pending = loader.client.send("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
            await entered.wait()
            loader.client.close()
            await loader.bridge.quiesce()
            gate.set()  # the stored log is read AFTER the teardown
            frame = await pending
            assert frame["error"] == {
                "code": -32602,
                "message": "Invalid params: connection closed during session/load",
            }
            await follows_left(0)
    finally:
        await writer.close()


async def test_a_load_whose_stored_log_is_damaged_fails_without_following(tmp_path: Path) -> None:
    session_id = await persist_turn(tmp_path, "hi", "x")
    (path,) = (tmp_path / "sessions").rglob("*.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([lines[0], "not json\n", *lines[2:]]))
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        with pytest.raises(RpcResponseError) as refused:
            await loader.client.load_session(session_id, CWD)
        assert refused.value.error["code"] == -32603
        assert follow_tasks() == []
