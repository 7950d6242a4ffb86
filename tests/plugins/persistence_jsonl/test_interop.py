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

from dsh.core.session import dumps_json
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path
from tests.core.persistence.helpers import BackendKit, Rig, replay, seqs
from tests.core.session.helpers import one_turn_log, tool_call_block, tool_result

PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = PROJECT_ROOT / "tests" / "examples" / "acp" / "reference"


def conformance_logs() -> list[Path]:
    """Every recorded session log; fails (never skips) when the folder is missing."""
    assert CONFORMANCE.is_dir(), f"conformance folder missing: {CONFORMANCE} (restore it from the repository)"
    logs = sorted(CONFORMANCE.glob("*/session.jsonl"))
    assert logs, f"no */session.jsonl under {CONFORMANCE}"
    return logs


def read_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


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
    meta = {key: header[key] for key in ("cwd", "createdAt") if key in header}
    root = tmp_path / "sessions"
    stored = Path(log_path(str(root), header.get("cwd"), header["id"]))
    stored.parent.mkdir(parents=True)
    shutil.copyfile(source, stored)

    rig = await Rig(BackendKit("jsonl", SessionPersistenceJsonl, {"root": str(root)})).start()
    try:
        persistence = await rig.mount()
        assert await persistence.list() == [{key: value for key, value in header.items() if key != "type"}]
        loaded = await persistence.load(header["id"])
        assert [json.loads(dumps_json(item)) for item in loaded.events] == events
        assert stored.read_bytes() == source.read_bytes()
        session = rig.store.create(header["id"], seed=loaded.events, meta=meta)  # type: ignore[arg-type]
        await rig.init(session)
        assert session.derive_messages() == expected_messages(events)
        assert session.header == loaded.meta
        await rig.flush(session)
        assert stored.read_bytes() == source.read_bytes()
    finally:
        await rig.close()

    copy_root = tmp_path / "copy"
    rig = await Rig(BackendKit("jsonl", SessionPersistenceJsonl, {"root": str(copy_root)})).start()
    try:
        await rig.mount()
        fork = rig.store.create(header["id"], seed=loaded.events, meta=meta)  # type: ignore[arg-type]
        await rig.init(fork)
        await rig.flush(fork)
        copied = Path(log_path(str(copy_root), header.get("cwd"), header["id"]))
        if events:
            assert read_lines(copied) == original
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
    assert [json.loads(dumps_json(item)) for item in loaded.events] == written[1:]
    assert [json.loads(dumps_json(item)) for item in session.events] == written[1:]
    assert {"type": "session", **loaded.meta} == written[0]
    assert seqs(loaded.events) == list(range(len(session.events)))
