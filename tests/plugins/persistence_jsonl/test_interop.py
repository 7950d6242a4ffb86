"""Interop with logs the reference implementation wrote, and with our own logs across instances.

Each ``tests/examples/acp/reference/<case>/session.jsonl`` (the reference conformance
cases kept in the repository; a missing folder fails) loads through the JSONL backend into a live session
whose derived history matches the file, and re-serializes to the same JSON values.
"""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from dsh.core.llm import to_json
from dsh.core.session import SessionMeta, header_line, session_event_line
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path
from tests.core.persistence.helpers import (
    BackendKit,
    Rig,
    meta,
    one_turn_log,
    one_user_turn,
    replay,
    seqs,
    tool_call_block,
    tool_result,
)
from tests.sealing import sealed, unsealed

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = PROJECT_ROOT / "tests" / "examples" / "acp" / "reference"


def conformance_logs() -> list[Path]:
    """Every recorded session log; fails (never skips) when the folder is missing."""
    assert CONFORMANCE.is_dir(), f"conformance folder missing: {CONFORMANCE} (restore it from the repository)"
    logs = sorted(CONFORMANCE.glob("*/session.jsonl"))
    assert logs, f"no */session.jsonl under {CONFORMANCE}"
    return logs


def read_lines(path: Path) -> list[Any]:
    """The JSON of each line, without the line checksum this backend adds (other writers add none)."""
    return [json.loads(line) for line in unsealed(path.read_bytes()).decode().splitlines()]


def expected_messages(events: list[Any]) -> list[dict[str, Any]]:
    """The model-facing history the log should derive to (written independently of derive_messages)."""
    messages: list[dict[str, Any]] = []
    for item in events:
        data = item["data"]
        if item["type"] == "user/message":
            messages.append({"role": "user", "content": data["content"]})
        elif item["type"] == "assistant/message":
            messages.append({"role": "assistant", "content": data["content"]})
        elif item["type"] == "tool/result":
            block = {"type": "tool-result", "toolCallId": data["callId"], "content": data["content"]}
            block["isError"] = data["isError"]
            messages.append({"role": "user", "content": [block]})
        else:
            assert item["type"] in {
                "turn/start",
                "turn/end",
                "step/start",
                "step/end",
                "assistant/chunk",
                "usage",
                "tool/call",
            }
    return messages


@pytest.mark.parametrize("source", conformance_logs(), ids=lambda path: path.parent.name)
async def test_a_reference_log_loads_into_a_live_session_and_re_serializes_to_the_same_json(
    source: Path, tmp_path: Path
) -> None:
    """(interop: a session.jsonl written by the reference loads, derives and re-serializes)"""
    original = read_lines(source)
    header, events = original[0], original[1:]
    given = SessionMeta(cwd=header.get("cwd", UNSET), created_at=header["createdAt"])
    root = tmp_path / "sessions"
    stored = Path(log_path(str(root), header.get("cwd"), header["id"]))
    stored.parent.mkdir(parents=True)
    shutil.copyfile(source, stored)

    rig = await Rig(BackendKit("jsonl", SessionPersistenceJsonl, {"root": str(root)})).start()
    try:
        persistence = await rig.mount()
        assert to_json(await persistence.list()) == [{key: value for key, value in header.items() if key != "type"}]
        loaded = await persistence.load(header["id"])
        assert to_json(loaded.events) == events
        assert stored.read_bytes() == source.read_bytes()
        session = rig.store.create(header["id"], seed=loaded.events, meta=given)
        await rig.init(session)
        assert to_json(session.derive_messages()) == expected_messages(events)
        assert session.header == loaded.meta
        await rig.flush(session)
        assert stored.read_bytes() == source.read_bytes()
    finally:
        await rig.close()

    copy_root = tmp_path / "copy"
    rig = await Rig(BackendKit("jsonl", SessionPersistenceJsonl, {"root": str(copy_root)})).start()
    try:
        await rig.mount()
        fork = rig.store.create(header["id"], seed=loaded.events, meta=given)
        await rig.init(fork)
        await rig.flush(fork)
        copied = Path(log_path(str(copy_root), header.get("cwd"), header["id"]))
        if events:
            assert read_lines(copied) == original
            assert unsealed(copied.read_bytes()) == source.read_bytes()
        else:
            assert not copied.exists()
    finally:
        await rig.close()


async def test_a_session_written_here_loads_in_a_fresh_instance_and_re_serializes_to_the_same_json(
    rig: Rig, root: Path
) -> None:
    """(interop: our own log round-trips through a fresh backend instance)"""
    await rig.mount()
    _fiber, session = await rig.live("ours")
    replay(session, one_turn_log())
    session.append("assistant/message", {"turn": 2, "step": 1, "content": [tool_call_block("c1", "bash", '{"x":"é"}')]})
    session.append("tool/result", tool_result(2, 1, "c1", "ok ✓"))
    await rig.flush(session)
    written = read_lines(Path(log_path(str(root), "/w", "ours")))
    fresh = await rig.remount()
    loaded = await fresh.load("ours")
    assert to_json(loaded.events) == written[1:]
    assert to_json(list(session.events)) == written[1:]
    assert json.loads(header_line(loaded.meta)) == written[0]
    assert seqs(loaded.events) == list(range(len(session.events)))


UNKNOWN_LINES = [
    '{"type":"turn/start","seq":0,"time":5,"data":{"turn":1,"trigger":{"kind":"message","source":{"kind":"user"}}}}',
    '{"type":"user/message","seq":1,"time":5,"data":{"content":[{"type":"hologram","frames":[1,2.5,{"z":null}]},'
    '{"type":"text","text":"hi"}],"source":{"kind":"user"}}}',
    '{"type":"plugin/telemetry","seq":2,"time":6,"data":{"cpu":[0.25,{"k":"v"}],"ok":true}}',
    '{"type":"turn/end","seq":3,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}',
]
"""A log from a newer writer: an event type and a content block type this version does not know."""


async def test_unknown_event_and_block_types_survive_load_resume_and_append_byte_identical(
    rig: Rig, root: Path
) -> None:
    """(SPEC §0.6: unknown variants are kept and written back unchanged, never dropped)"""
    header = header_line(meta("newer", "/w"))
    path = Path(log_path(str(root), "/w", "newer"))
    path.parent.mkdir(parents=True)
    before = "".join(line + "\n" for line in [header, *UNKNOWN_LINES]).encode()
    path.write_bytes(before)
    persistence = await rig.mount()
    loaded = await persistence.load("newer")
    assert [session_event_line(item) for item in loaded.events] == UNKNOWN_LINES
    assert path.read_bytes() == before
    _fiber, session = await rig.live("newer", seed=loaded.events)
    await rig.init(session)
    replay(session, one_user_turn(turn=2))
    await rig.flush(session)
    after = path.read_bytes()
    assert after.startswith(before)
    assert seqs(session.events) == list(range(7))
    assert after[len(before) :] == sealed(
        "".join(session_event_line(item) + "\n" for item in session.events[4:]).encode()
    )
    reloaded = await (await rig.remount()).load("newer")
    assert [session_event_line(item) for item in reloaded.events] == unsealed(after).decode().splitlines()[1:]
