"""Fuzz (issue acceptance): random and malformed frames never break the ACP server.

Hypothesis sends frame sequences to the bridge over an in-memory transport, on the
example's real plugin tree (``examples/base-core.yml`` through the loader, the agent
loop, JSONL persistence) with a model that always answers: invalid JSON, JSON that is
no request, wrong types, unknown methods and session ids, huge strings, stray
responses, cancel storms and prompts. The oracle, per JSON-RPC 2.0:

* every frame the server writes is a well-formed response or ``session/update``;
* each request with a valid id is answered exactly once; input whose id cannot be
  read (not JSON, not an object, an id of a forbidden type) gets one error with id
  null; notifications and stray responses get nothing;
* the server survives: a new session's well-formed prompt still ends ``end_turn``.

One subprocess smoke sends similar garbage (plus invalid UTF-8 and a 1 MB line) to a
real ``start.py`` and checks that stdout stays pure and a prompt still completes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.acp import Config, MemoryTransport, memory_transport_pair, run_acp
from dsh.agent_loop import AgentLoop
from dsh.core.llm import LLM, GenerateOptions, LlmAdapter, StreamChunk, to_json
from dsh.kernel import Context, load_tree
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.scripted import text_response
from tests.examples.acp.harness import PROJECT, child_env, shut_down, spawn_agent
from tests.examples.acp.normalize import dump

BASE_CORE = PROJECT / "examples" / "base-core.yml"
MODEL = "fuzz-model"
SESSION = "<live-session>"
"""Stands for the id of the session opened before the fuzz frames (filled in when sent)."""

NULL_ERROR = "null-error"
SILENT = "silent"


class AlwaysAnswers(LlmAdapter):
    """Every model call streams a short text answer."""

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        return self._play()

    async def _play(self) -> AsyncIterator[StreamChunk]:
        for chunk in text_response("ok"):
            yield chunk


# ---------------------------------------------------------------------------- frames
@dataclass(frozen=True)
class Frame:
    """One line to send and what it must cause: a response with ``id``, a null-id error, or nothing."""

    build: Callable[[int, str], list[str]]
    """``build(request_id, session_id) -> lines``."""
    expect: str
    """``"response"`` (answered once under the request id), :data:`NULL_ERROR` or :data:`SILENT`."""


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
LINE_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=40)
METHODS = st.sampled_from(
    ["initialize", "authenticate", "session/new", "session/load", "session/prompt", "session/cancel"]
)
SESSION_IDS = st.sampled_from([SESSION, "00000000-0000-0000-0000-000000000000", ""]) | st.text(max_size=10)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _fill(value: Any, session_id: str) -> Any:
    if value == SESSION:
        return session_id
    if isinstance(value, list):
        return [_fill(item, session_id) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, session_id) for key, item in value.items()}
    return value


def _request(method: str, params: Any) -> Frame:
    return Frame(
        lambda rid, sid: [dump({"jsonrpc": "2.0", "id": rid, "method": method, "params": _fill(params, sid)})],
        "response",
    )


def _notification(method: str, params: Any) -> Frame:
    return Frame(lambda rid, sid: [dump({"jsonrpc": "2.0", "method": method, "params": _fill(params, sid)})], SILENT)


def _fixed(line: str, expect: str) -> Frame:
    return Frame(lambda rid, sid: [line], expect)


def _prompt_params(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


FRAMES = st.one_of(
    LINE_TEXT.filter(lambda text: text.strip() != "" and not _is_json(text)).map(lambda t: _fixed(t, NULL_ERROR)),
    st.just("   ").map(lambda t: _fixed(t, SILENT)),
    (JSON_LEAF | st.lists(JSON, max_size=3)).map(lambda v: _fixed(dump(v), NULL_ERROR)),
    st.builds(
        lambda bad, method: Frame(
            lambda rid, sid: [dump({"jsonrpc": "2.0", "id": bad, "method": method, "params": {}})], NULL_ERROR
        ),
        st.booleans() | st.lists(st.integers(), max_size=2) | st.dictionaries(st.text(max_size=3), st.integers()),
        METHODS,
    ),
    st.builds(
        lambda version: Frame(
            lambda rid, sid: [dump({"jsonrpc": version, "id": rid, "method": "initialize"})], "response"
        ),
        st.sampled_from(["1.0", "2", None]) | st.integers(),
    ),
    st.builds(_request, METHODS | st.text(max_size=15), JSON),
    st.builds(_request, METHODS, st.dictionaries(st.sampled_from(["sessionId", "cwd", "prompt"]), JSON, max_size=3)),
    st.builds(_request, st.just("session/prompt"), st.builds(_prompt_params, SESSION_IDS, LINE_TEXT)),
    st.builds(_request, st.just("session/prompt"), st.just(_prompt_params(SESSION, "x" * 200_000))),
    st.builds(_request, st.just("x" * 100_000), st.none()),
    st.builds(_notification, METHODS | st.text(max_size=15), JSON),
    st.builds(
        lambda ids: Frame(
            lambda rid, sid: [
                dump({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": _fill(item, sid)}})
                for item in ids
            ],
            SILENT,
        ),
        st.lists(SESSION_IDS, min_size=1, max_size=30),
    ),
    JSON.map(lambda v: _fixed(dump({"jsonrpc": "2.0", "id": 12345, "result": v}), SILENT)),
)


# ----------------------------------------------------------------------------- oracle
def _well_formed(frame: Any) -> bool:
    if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0":
        return False
    if "method" in frame:
        return frame["method"] == "session/update" and set(frame) == {"jsonrpc", "method", "params"}
    if set(frame) == {"jsonrpc", "id", "result"}:
        return True
    error = frame.get("error")
    return (
        set(frame) == {"jsonrpc", "id", "error"}
        and isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    )


class FuzzClient:
    """Reads every server line from the client end and collects the answers by request id.

    A line that is not a well-formed frame fails the reader; :meth:`answer` then raises
    that failure (or reports that the server went away) instead of waiting forever.
    """

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport
        self.frames: list[Any] = []
        self.by_id: dict[Any, list[Any]] = {}
        self.changed = asyncio.Event()
        self.reading = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while (line := await self.transport.read_line()) is not None:
                frame = json.loads(line)
                assert _well_formed(frame), line[:300]
                self.frames.append(frame)
                if "method" not in frame:
                    self.by_id.setdefault(frame["id"], []).append(frame)
                self.changed.set()
        finally:
            self.changed.set()

    async def answer(self, request_id: Any) -> Any:
        while request_id not in self.by_id:
            if self.reading.done():
                self.reading.result()
                raise AssertionError(f"the server closed without answering request {request_id!r}")
            self.changed.clear()
            await self.changed.wait()
        return self.by_id[request_id][0]


async def _fuzz(frames: list[Frame], root: Path) -> None:
    ctx = Context()
    await load_tree(ctx, BASE_CORE)
    await ctx.plugin(AgentLoop, {"agents": []})
    await ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
    ctx[LLM].register_adapter([MODEL], AlwaysAnswers())
    server, client_end = memory_transport_pair()
    serving = asyncio.ensure_future(run_acp(ctx, Config(model=MODEL), transport=server))
    client = FuzzClient(client_end)
    ids = itertools.count(1)
    must_answer: list[int] = []
    null_errors = 0

    async def call(method: str, params: Any) -> Any:
        rid = next(ids)
        must_answer.append(rid)
        client_end.write_line(dump({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return await client.answer(rid)

    try:
        await call("initialize", {"protocolVersion": 1})
        live = (await call("session/new", {"cwd": str(root), "mcpServers": []}))["result"]["sessionId"]
        for frame in frames:
            rid = next(ids)
            for line in frame.build(rid, live):
                client_end.write_line(line)
            if frame.expect == "response":
                must_answer.append(rid)
            elif frame.expect == NULL_ERROR:
                null_errors += 1
        fresh = (await call("session/new", {"cwd": str(root), "mcpServers": []}))["result"]["sessionId"]
        final = await call("session/prompt", _prompt_params(fresh, "still alive?"))
        assert final["result"] == {"stopReason": "end_turn"}
        for rid in must_answer:
            await client.answer(rid)
        answered = {key: len(value) for key, value in client.by_id.items() if key is not None}
        assert answered == dict.fromkeys(must_answer, 1)
        nulls = client.by_id.get(None, [])
        assert len(nulls) == null_errors
        assert all(frame["error"]["code"] in (-32700, -32600) for frame in nulls)
    finally:
        client_end.close()
        await serving
        await client.reading
        await ctx.dispose()


async def test_the_oracle_can_fail() -> None:
    """(port) the fuzz oracle rejects frames a JSON-RPC server must never write, and its helpers are exact"""
    assert not _well_formed([])
    assert not _well_formed({"jsonrpc": "1.0", "id": 1, "result": {}})
    assert not _well_formed({"jsonrpc": "2.0", "method": "session/other", "params": {}})
    assert not _well_formed({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}})
    assert not _well_formed({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}})
    assert _well_formed({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    assert _is_json(" [1] ")
    assert not _is_json("{")
    assert _fill([SESSION, {"k": [SESSION]}, 3], "s1") == ["s1", {"k": ["s1"]}, 3]
    server, client_end = memory_transport_pair()
    gone = FuzzClient(client_end)
    server.write_line(dump({"jsonrpc": "2.0", "id": 1, "result": {}}))
    server.close()
    assert (await gone.answer(1))["result"] == {}
    with pytest.raises(AssertionError, match="closed without answering request 2"):
        await gone.answer(2)
    server, client_end = memory_transport_pair()
    broken = FuzzClient(client_end)
    server.write_line('{"jsonrpc":"2.0","id":1}')
    with pytest.raises(AssertionError, match='"id":1'):
        await broken.answer(1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(FRAMES, min_size=1, max_size=12))
def test_random_and_malformed_frames_are_answered_or_ignored_and_the_server_survives(frames: list[Frame]) -> None:
    """(issue acceptance) fuzz: each frame answered or ignored per JSON-RPC; no crash; a prompt still completes"""
    with tempfile.TemporaryDirectory(prefix="acp-fuzz-") as root:
        asyncio.run(_fuzz(frames, Path(root)))


# ------------------------------------------------------------------------ subprocess
HELLO_OVERRIDE = [{"kind": "chunks", "chunks": text_response("alive")}]
GARBAGE: list[bytes] = [
    b"not json",
    b"{",
    b"\xff\xfe\x00garbage",
    b"[]",
    b"[1,2,3]",
    b"42",
    b'"string"',
    b"null",
    b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"1.0","id":1,"method":"initialize"}',
    b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}',
    b'{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}',
    b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":7,"prompt":"x"}}',
    b'{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}',
    b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"unknown"}}',
    b'{"jsonrpc":"2.0","id":5,"result":{}}',
    b'{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"' + b"x" * 1_000_000 + b'"}}',
]


async def test_a_real_start_py_survives_garbage_and_keeps_stdout_pure(tmp_path: Path) -> None:
    """(issue acceptance) fuzz smoke over real pipes: garbage in, only frames out, a prompt still completes"""
    override = tmp_path / "override.json"
    override.write_text(json.dumps(to_json(HELLO_OVERRIDE)), encoding="utf-8")
    fixture = tmp_path / "fixture.jsonl"
    fixture.write_text('{"type":"session","version":1,"id":"x","createdAt":0}\n', encoding="utf-8")
    env = child_env(
        {
            "DSH_SNAPSHOT": "replay",
            "DSH_SNAPSHOT_FILE": str(fixture),
            "DSH_SNAPSHOT_OVERRIDE": str(override),
            "DSH_SNAPSHOT_SESSIONS_ROOT": str(tmp_path / "sessions"),
        },
        tmp_path,
    )
    async with spawn_agent(tmp_path, env) as client:
        for line in GARBAGE:
            client.send_line(line)
        await client.wait_for(lambda: any(frame.get("id") == 6 for frame in client.frames))
        await client.request("initialize", {"protocolVersion": 1})
        session = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = _prompt_params(session["sessionId"], "still alive?")
        assert await client.request("session/prompt", prompt) == {"stopReason": "end_turn"}
        for _ in range(50):
            client.notify("session/cancel", {"sessionId": session["sessionId"]})
        assert await client.request("authenticate", {"methodId": "none"}) == {}
        assert await shut_down(client) == 0
    assert client.bad_lines == []
    assert all(_well_formed(frame) for frame in client.frames)
    errors = {frame["id"]: frame["error"]["code"] for frame in client.frames if "error" in frame and frame["id"]}
    assert errors[1] == -32600  # jsonrpc 1.0
    assert errors[2] == -32601
    assert errors[3] == -32602
    assert errors[4] == -32602
    assert 5 not in errors  # a stray response is ignored
    null_errors = [frame for frame in client.frames if "error" in frame and frame["id"] is None]
    assert len(null_errors) == 10
