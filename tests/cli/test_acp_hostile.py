"""`dsh acp` as a real subprocess against hostile input (issue: "nothing lost, nobody in").

* a line of 1,000 ``[`` (deeper than the JSON decoder follows) and 10,000 seeded
  fuzzed frames (mutated requests: flipped and cut bytes, deep nesting, NaN and
  Infinity ids, random JSON values) never end the server; stdout carries nothing but
  JSON-RPC frames; each well-formed request is answered exactly once; a session and
  a prompt still work afterwards, and end of input exits 0;
* without an API key the server answers ``initialize`` and fails ``session/new`` /
  ``session/prompt`` with the configuration message, then exits 2 at end of input.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli.helpers import child_env, spawn

SEED = 20261201
FUZZED = 10_000
METHODS = ("initialize", "authenticate", "session/load", "session/prompt", "session/cancel", "no/such")


def _request(rng: random.Random, request_id: str) -> dict[str, Any]:
    method = rng.choice(METHODS)
    params: dict[str, Any] = {
        "initialize": {"protocolVersion": 1},
        "authenticate": {"methodId": "none"},
        "session/load": {"sessionId": f"unknown-{request_id}", "cwd": "/nowhere", "mcpServers": []},
        "session/prompt": {"sessionId": f"unknown-{request_id}", "prompt": [{"type": "text", "text": "hi"}]},
        "session/cancel": {"sessionId": f"unknown-{request_id}"},
        "no/such": {},
    }[method]
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _mutate(rng: random.Random, line: bytes) -> bytes:
    choice = rng.randrange(7)
    data = bytearray(line)
    if choice == 0:  # flip a few bytes
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice == 1:  # cut a piece out
        start = rng.randrange(len(data))
        del data[start : start + rng.randint(1, 20)]
    elif choice == 2:  # truncate
        del data[rng.randrange(1, len(data)) :]
    elif choice == 3:  # nest deeply, balanced or not
        depth = rng.choice((500, 1_000, 5_000))
        data = bytearray(b"[" * depth + (b"]" * depth if rng.random() < 0.5 else b""))
    elif choice == 4:  # a non-finite id
        data = bytearray(
            b'{"jsonrpc":"2.0","id":' + rng.choice((b"NaN", b"Infinity", b"-Infinity")) + b',"method":"initialize"}'
        )
    elif choice == 5:  # random JSON that is no request
        value: Any = rng.choice([None, True, 3, 1.5, "s", [1, [2]], {"a": {"b": []}}, {"jsonrpc": "2.0"}])
        data = bytearray(json.dumps(value).encode())
    else:  # random bytes
        data = bytearray(rng.randbytes(rng.randint(1, 60)))
    return bytes(data).replace(b"\n", b" ").replace(b"\r", b" ")


async def _read_frames(stream: asyncio.StreamReader, frames: list[dict[str, Any]], bad: list[bytes]) -> None:
    while line := await stream.readline():
        try:
            frame = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if not (isinstance(frame, dict) and frame.get("jsonrpc") == "2.0"):
            bad.append(line)
            continue
        if not (
            ("id" in frame and ("result" in frame) != ("error" in frame)) or frame.get("method") == "session/update"
        ):
            bad.append(line)
            continue
        frames.append(frame)


async def _answered(frames: list[dict[str, Any]], wanted: set[str]) -> None:
    while not wanted <= {frame.get("id") for frame in frames}:
        await asyncio.sleep(0.05)


async def test_no_frame_ends_dsh_acp_and_stdout_stays_frames_only(tmp_path: Path) -> None:
    """(issue acceptance) a 1,000-deep '[' frame and 10,000 fuzzed frames: answered, no crash, frames only"""
    workspace = tmp_path / "work"
    workspace.mkdir()
    process = await spawn("acp", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert process.stdin is not None
    assert process.stdout is not None
    frames: list[dict[str, Any]] = []
    bad: list[bytes] = []
    reader = asyncio.ensure_future(_read_frames(process.stdout, frames, bad))
    rng = random.Random(SEED)
    wellformed: set[str] = set()
    process.stdin.write(b"[" * 1000 + b"\n")
    for number in range(FUZZED):
        if rng.random() < 0.3:  # ids "w<n>" are sent intact; a mutated "m<n>" frame can never forge one
            wellformed.add(f"w{number}")
            line = json.dumps(_request(rng, f"w{number}")).encode()
        else:
            line = _mutate(rng, json.dumps(_request(rng, f"m{number}")).encode())
        process.stdin.write(line + b"\n")
        if number % 500 == 0:
            await process.stdin.drain()
    await process.stdin.drain()
    await asyncio.wait_for(_answered(frames, wellformed), timeout=240)
    counts = Counter(frame.get("id") for frame in frames if "id" in frame)
    assert {request_id: counts[request_id] for request_id in wellformed} == dict.fromkeys(wellformed, 1)
    assert frames[0] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    unknown = [f for f in frames if f.get("id") in wellformed and "unknown session" in json.dumps(f.get("error"))]
    assert unknown
    assert all(f["error"]["code"] == -32602 for f in unknown)
    # still serving: a session and a prompt work after all that
    for frame in (
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": "new", "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
    ):
        process.stdin.write(json.dumps(frame).encode() + b"\n")
    await asyncio.wait_for(_answered(frames, {"init", "new"}), timeout=60)
    session_id = next(f for f in frames if f.get("id") == "new")["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "echo alive"}]}
    process.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": "go", "method": "session/prompt", "params": prompt}).encode()
    )
    process.stdin.write(b"\n")
    await asyncio.wait_for(_answered(frames, {"go"}), timeout=60)
    assert next(f for f in frames if f.get("id") == "go")["result"] == {"stopReason": "end_turn"}
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), timeout=60) == 0
    await reader
    assert bad == []


async def test_dsh_acp_without_a_key_answers_initialize_and_fails_sessions_with_the_fix(tmp_path: Path) -> None:
    """(issue acceptance) no API key: initialize answered; session/new and session/prompt fail naming the key"""
    process = await spawn("acp", env=child_env(key=None, home=tmp_path), cwd=tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}},
    ]
    for request in requests:
        process.stdin.write(json.dumps(request).encode() + b"\n")
    await process.stdin.drain()
    answers = {}
    for _ in requests:
        frame = json.loads(await process.stdout.readline())
        answers[frame["id"]] = frame
    assert answers[1]["result"]["protocolVersion"] == 1
    for request_id in (2, 3):
        assert answers[request_id]["error"]["code"] == -32603
        assert "DEEPSEEK_API_KEY" in answers[request_id]["error"]["message"]
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), timeout=60) == 2
    assert await process.stdout.read() == b""
    assert "DEEPSEEK_API_KEY" in (await process.stderr.read()).decode()


async def test_dsh_acp_with_an_unwritable_sessions_root_answers_initialize_and_fails_sessions_naming_it(
    tmp_path: Path,
) -> None:
    """(check before spending) a sessions root that is a file: said before any session, to the editor and on stderr"""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    process = await spawn(
        "--sessions-root", str(blocker / "sessions"), "acp", env=child_env(home=tmp_path), cwd=tmp_path
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}},
    ]
    for request in requests:
        process.stdin.write(json.dumps(request).encode() + b"\n")
    await process.stdin.drain()
    answers = {}
    for _ in requests:
        frame = json.loads(await process.stdout.readline())
        answers[frame["id"]] = frame
    assert answers[1]["result"]["protocolVersion"] == 1
    message = answers[2]["error"]["message"]
    assert f"the sessions root {blocker / 'sessions'} is not a directory (its parent {blocker} is not a directory)" in (
        message
    )
    assert "--sessions-root" in message
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), timeout=60) == 1
    assert "--sessions-root" in (await process.stderr.read()).decode()
