"""The snapshot machinery itself (SPEC §16.5 ``snapshot-harness``): fixtures, harvest, runner, client.

The goldens are only as good as the runner that produces what they are compared
with, so its failure paths are tested too: a missing conformance folder fails, a
server that never exits is reported, one still running at the end is killed, and
every broken step expectation is named.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import coverage
import pytest

from tests.examples.acp import scenarios
from tests.examples.acp.client import PipeClient, ServerGoneError
from tests.examples.acp.harness import (
    ScenarioError,
    child_env,
    harvest_session_log,
    run_steps,
    shut_down,
    spawn_agent,
)
from tests.examples.acp.scenarios import Scenario

HELLO = [
    {
        "kind": "chunks",
        "chunks": [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hi"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
            {"type": "finish", "reason": {"kind": "stop"}},
        ],
    }
]


def replay_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "override.json").write_text(json.dumps(HELLO * 4), encoding="utf-8")
    (tmp_path / "fixture.jsonl").write_text('{"type":"session","version":1,"id":"x","createdAt":0}\n', encoding="utf-8")
    return child_env(
        {
            "DSH_SNAPSHOT": "replay",
            "DSH_SNAPSHOT_FILE": str(tmp_path / "fixture.jsonl"),
            "DSH_SNAPSHOT_OVERRIDE": str(tmp_path / "override.json"),
            "DSH_SNAPSHOT_SESSIONS_ROOT": str(tmp_path / "sessions"),
        },
        tmp_path,
    )


# ---------------------------------------------------------------------------- fixtures
def test_a_missing_conformance_folder_fails_instead_of_skipping(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """(port) the reference conformance folder must exist: its absence is a failure, never a skip"""
    monkeypatch.setattr(scenarios, "REFERENCE_ROOT", tmp_path / "absent")
    with pytest.raises(AssertionError, match=r"conformance folder .* is missing"):
        scenarios.case_directories()


def test_a_scenario_must_live_in_exactly_one_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """(port) a registered case found in no root, or in both, is refused"""
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "dup").mkdir(parents=True)
    (second / "dup").mkdir(parents=True)
    monkeypatch.setattr(scenarios, "ROOTS", (first, second))
    with pytest.raises(AssertionError, match="exactly one"):
        Scenario("dup", model_turn=False, recorded=False).directory()
    with pytest.raises(AssertionError, match="exactly one"):
        Scenario("nowhere", model_turn=False, recorded=False).directory()


def test_harvest_takes_the_first_jsonl_of_an_immediate_subdirectory(tmp_path: Path) -> None:
    """harness — the session log is the first *.jsonl in an immediate subdirectory of the root"""
    assert harvest_session_log(tmp_path / "absent") is None
    (tmp_path / "top.jsonl").write_text("top\n", encoding="utf-8")  # not in a bucket
    (tmp_path / "a-empty").mkdir()
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    (tmp_path / "b" / "deeper" / "x.jsonl").write_text("deep\n", encoding="utf-8")  # two levels down
    assert harvest_session_log(tmp_path) is None
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "z.jsonl").write_text("z\n", encoding="utf-8")
    (tmp_path / "c" / "y.jsonl").write_text("y\n", encoding="utf-8")
    assert harvest_session_log(tmp_path) == "y\n"


def test_the_child_environment_drops_stray_snapshot_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """harness — only the run's own DSH_SNAPSHOT* variables reach the child; coverage follows this process"""
    monkeypatch.setenv("DSH_SNAPSHOT_OVERRIDE", "/stray/override.json")
    monkeypatch.setenv("DSH_SNAPSHOT", "record")
    env = child_env({"DSH_SNAPSHOT": "replay"}, tmp_path)
    assert env["DSH_SNAPSHOT"] == "replay"
    assert "DSH_SNAPSHOT_OVERRIDE" not in env
    monkeypatch.setattr(coverage.Coverage, "current", staticmethod(lambda: None))
    assert "COVERAGE_PROCESS_START" not in child_env({}, tmp_path)


# ------------------------------------------------------------------------------ runner
async def test_a_server_still_running_at_the_end_is_killed(tmp_path: Path) -> None:
    """harness — in the finally, the child is SIGKILLed only if it is still running"""
    async with spawn_agent(tmp_path, replay_env(tmp_path)) as client:
        await client.request("initialize", {"protocolVersion": 1})
    assert client.process.returncode == -signal.SIGKILL


async def test_a_server_that_does_not_exit_after_stdin_closes_is_reported(tmp_path: Path) -> None:
    """harness — a server that hangs after end of input is a scenario failure, not a hung suite"""
    async with spawn_agent(tmp_path, replay_env(tmp_path)) as client:
        await client.request("initialize", {"protocolVersion": 1})
        client.process.send_signal(signal.SIGSTOP)
        with pytest.raises(ScenarioError, match="did not exit"):
            await shut_down(client, grace_s=0.05)
    assert client.process.returncode == -signal.SIGKILL


async def test_run_steps_names_every_broken_expectation(tmp_path: Path) -> None:
    """harness — each step op behaves as specified, and a step that does not is reported with its op"""
    async with spawn_agent(tmp_path, replay_env(tmp_path)) as client:
        cwd = str(tmp_path)
        assert await run_steps(client, [{"op": "initialize", "terminalOutput": True}], cwd) == []
        # no session yet: a prompt is refused, which is what promptExpectError wants
        assert await run_steps(client, [{"op": "promptExpectError", "text": "hi"}], cwd) == []
        with pytest.raises(ScenarioError, match="unexpected error response"):
            await run_steps(client, [{"op": "prompt", "text": "hi"}], cwd)
        with pytest.raises(ScenarioError, match="expected to fail"):
            await run_steps(client, [{"op": "newSessionExpectError"}], cwd)
        with pytest.raises(ScenarioError, match="unknown op 'bogus'"):
            await run_steps(client, [{"op": "bogus"}], cwd)
        steps = [{"op": "newSession"}, {"op": "cancel"}, {"op": "prompt", "text": "hi"}]
        (session_id,) = await run_steps(client, steps, cwd)
        assert await shut_down(client) == 0
    assert client.updates[-1] == {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
    assert session_id in {frame["params"]["sessionId"] for frame in client.frames if "method" in frame}


# ------------------------------------------------------------------------------ client
FAKE_SERVER = r"""
import sys
sys.stdin.readline()
sys.stdout.write('\n' + 'not json\n' + '[1,2]\n' + '{"jsonrpc":"2.0","id":99,"result":{}}\n')
sys.stdout.write('{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"x"}}}')
"""


async def test_the_client_tees_everything_and_fails_what_is_left_pending() -> None:
    """harness — raw stdout is kept byte for byte; non-frames are set aside; pending requests fail at EOF"""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FAKE_SERVER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    client = PipeClient(process)
    client.start()
    pending = client.request_nowait("initialize", {})
    client.request_nowait("initialize", {}).cancel()  # abandoned by its caller: left alone at EOF
    with pytest.raises(ServerGoneError):
        await pending
    with pytest.raises(ServerGoneError):
        await client.wait_for(lambda: False)
    with pytest.raises(ServerGoneError):
        await client.request("initialize", {})
    await client.close_stdin()
    assert await process.wait() == 0
    await client.wait_eof()
    assert client.raw.decode().startswith("\nnot json\n[1,2]\n")
    assert client.bad_lines == [b"not json", b"[1,2]"]
    assert [frame.get("id") for frame in client.frames] == [99, None]  # the unterminated last line still counts
    assert client.updates == [{"sessionUpdate": "x"}]
