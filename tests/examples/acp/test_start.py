"""``examples/acp-agent/start.py``: tree choice, ``.env``, paths, shutdown (SPEC §16.4 ``start``)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh.kernel import Context, LoaderError
from tests.examples.acp.harness import START, child_env, harvest_session_log, shut_down, spawn_agent
from tests.examples.acp.normalize import json_lines

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}
HEADER_ONLY = '{"type":"session","version":1,"id":"00000000-0000-0000-0000-000000000000","createdAt":0}\n'
HELLO = [
    {
        "kind": "chunks",
        "chunks": [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hello"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hello"}},
            {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ],
    }
]


@pytest.fixture(scope="module")
def start() -> ModuleType:
    """start.py imported as a module (its ``main`` guard keeps it from running)."""
    spec = importlib.util.spec_from_file_location("dsh_example_acp_agent_start", START)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------- .env
def test_load_dotenv_sets_only_unset_keys_and_reads_the_usual_forms(
    start: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(port) .env: KEY=VALUE, comments, export prefix, quotes; the environment wins"""
    for key in ("DSH_T_PLAIN", "DSH_T_QUOTED", "DSH_T_SINGLE", "DSH_T_EXPORTED", "DSH_T_KEPT", "DSH_T_EMPTY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DSH_T_KEPT", "from-env")
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# a comment\n\n"
        "DSH_T_PLAIN=plain value\n"
        'DSH_T_QUOTED="quoted # not a comment"\n'
        "DSH_T_SINGLE='single'\n"
        "export DSH_T_EXPORTED = spaced\n"
        "DSH_T_KEPT=from-file\n"
        "DSH_T_EMPTY=\n",
        encoding="utf-8",
    )
    start.load_dotenv(dotenv)
    assert os.environ["DSH_T_PLAIN"] == "plain value"
    assert os.environ["DSH_T_QUOTED"] == "quoted # not a comment"
    assert os.environ["DSH_T_SINGLE"] == "single"
    assert os.environ["DSH_T_EXPORTED"] == "spaced"
    assert os.environ["DSH_T_KEPT"] == "from-env"
    assert os.environ["DSH_T_EMPTY"] == ""


def test_load_dotenv_reports_malformed_lines_on_stderr_and_goes_on(
    start: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """(port) .env errors go to stderr only, never stop the start"""
    monkeypatch.delenv("DSH_T_AFTER", raising=False)
    dotenv = tmp_path / ".env"
    dotenv.write_text("just words\n9BAD=1\nDSH_T_AFTER=ok\n", encoding="utf-8")
    start.load_dotenv(dotenv)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{dotenv}:1: expected KEY=VALUE" in captured.err
    assert f"{dotenv}:2: expected KEY=VALUE" in captured.err
    assert os.environ["DSH_T_AFTER"] == "ok"


def test_load_dotenv_ignores_a_missing_file_and_reports_an_unreadable_one(
    start: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(port) a missing .env is normal; one that cannot be read is reported on stderr"""
    start.load_dotenv(tmp_path / "absent.env")
    assert capsys.readouterr() == ("", "")
    start.load_dotenv(tmp_path)  # a directory cannot be read as a file
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"cannot read {tmp_path}" in captured.err


# ------------------------------------------------------------------------ tree choice
@pytest.fixture
def launched(start: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Run ``start.main()`` in-process with ``serve`` and ``load_dotenv`` recorded instead of run."""
    seen: dict[str, Any] = {"dotenv": []}

    async def fake_serve(tree: Path) -> int:
        seen["tree"] = tree
        seen["cwd"] = os.getcwd()
        seen["env"] = {key: os.environ.get(key) for key in start.PATH_VARIABLES}
        return 7

    monkeypatch.setattr(start, "serve", fake_serve)
    monkeypatch.setattr(start, "load_dotenv", lambda path: seen["dotenv"].append(path))
    monkeypatch.setattr(start.logging, "basicConfig", lambda **kwargs: None)
    monkeypatch.chdir(tmp_path)  # restored after the test, whatever main() does
    for variable in (*start.PATH_VARIABLES, "DSH_SNAPSHOT"):
        monkeypatch.delenv(variable, raising=False)
    return seen


def test_replay_mode_boots_the_snapshot_tree_and_never_reads_dotenv(
    start: ModuleType, launched: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """start: DSH_SNAPSHOT=replay -> the snapshot tree, .env skipped, relative paths from the launch dir"""
    monkeypatch.setenv("DSH_SNAPSHOT", "replay")
    monkeypatch.setenv("DSH_SNAPSHOT_FILE", "fixtures/session.jsonl")
    monkeypatch.setenv("DSH_SNAPSHOT_OVERRIDE", "")
    monkeypatch.setenv("DSH_SNAPSHOT_SESSIONS_ROOT", "/abs/sessions")
    assert start.main() == 7
    assert launched["tree"] == START.parent / "snapshot.yml"
    assert launched["dotenv"] == []
    assert launched["cwd"] == str(START.parents[2])
    assert launched["env"] == {
        "DSH_SNAPSHOT_FILE": str(tmp_path.resolve() / "fixtures" / "session.jsonl"),
        "DSH_SNAPSHOT_OVERRIDE": "",
        "DSH_SNAPSHOT_SESSIONS_ROOT": "/abs/sessions",
    }


@pytest.mark.parametrize("mode", [None, "record"])
def test_other_modes_load_the_project_dotenv_then_boot_the_live_tree(
    start: ModuleType, launched: dict[str, Any], monkeypatch: pytest.MonkeyPatch, mode: str | None
) -> None:
    """start: without DSH_SNAPSHOT=replay -> the project-root .env, then the live (record) tree"""
    if mode is not None:
        monkeypatch.setenv("DSH_SNAPSHOT", mode)
    assert start.main() == 7
    assert launched["tree"] == START.parent / "tree.yml"
    assert launched["dotenv"] == [START.parents[2] / ".env"]


async def test_find_bridge_names_the_missing_acp_plugin(start: ModuleType) -> None:
    """(port) a tree without the acp plugin is refused with the fix in the message"""
    root = Context()
    try:
        with pytest.raises(LoaderError, match="add an entry with name acp"):
            start.find_bridge(root)
    finally:
        await root.dispose()


# --------------------------------------------------------------------- real process
def replay_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    return child_env({"DSH_SNAPSHOT": "replay", **overrides}, tmp_path)


async def test_a_tree_that_cannot_load_exits_1_with_the_reason_on_stderr(tmp_path: Path) -> None:
    """start: replay without a fixture fails to load: exit 1, reason on stderr, nothing on stdout"""
    async with spawn_agent(tmp_path, replay_env(tmp_path)) as client:
        assert await shut_down(client) == 1
    assert client.raw == b""
    assert "a fixture path is required" in client.stderr_text


async def test_relative_snapshot_paths_resolve_against_the_launch_directory(tmp_path: Path) -> None:
    """start: relative DSH_SNAPSHOT_* paths are taken from the launch dir, although the tree runs from the root"""
    cwd = (tmp_path / "ws").resolve()
    cwd.mkdir()
    (cwd / "fixture.jsonl").write_text(HEADER_ONLY, encoding="utf-8")
    (cwd / "override.json").write_text(json.dumps(HELLO), encoding="utf-8")
    env = replay_env(
        tmp_path,
        DSH_SNAPSHOT_FILE="fixture.jsonl",
        DSH_SNAPSHOT_OVERRIDE="override.json",
        DSH_SNAPSHOT_SESSIONS_ROOT="logs",
    )
    async with spawn_agent(cwd, env) as client:
        await client.request("initialize", INITIALIZE)
        session = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
        assert await client.request("session/prompt", prompt) == {"stopReason": "end_turn"}
        assert await shut_down(client) == 0
    log = harvest_session_log(cwd / "logs")
    assert log is not None
    assert json_lines(log)[-1]["data"] == {"turn": 1, "reason": {"kind": "completed"}}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_disposes_the_tree_and_exits_0(tmp_path: Path, signum: int) -> None:
    """start: SIGTERM/SIGINT settle the sessions, flush persistence and exit 0"""
    root = tmp_path / "sessions"
    (tmp_path / "override.json").write_text(json.dumps(HELLO), encoding="utf-8")
    (tmp_path / "fixture.jsonl").write_text(HEADER_ONLY, encoding="utf-8")
    env = replay_env(
        tmp_path,
        DSH_SNAPSHOT_FILE=str(tmp_path / "fixture.jsonl"),
        DSH_SNAPSHOT_OVERRIDE=str(tmp_path / "override.json"),
        DSH_SNAPSHOT_SESSIONS_ROOT=str(root),
    )
    async with spawn_agent(tmp_path, env) as client:
        await client.request("initialize", INITIALIZE)
        session = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
        assert await client.request("session/prompt", prompt) == {"stopReason": "end_turn"}
        client.process.send_signal(signum)
        assert await client.process.wait() == 0
    log = harvest_session_log(root)
    assert log is not None
    assert [event["type"] for event in json_lines(log)][-1] == "turn/end"
    assert client.bad_lines == []
