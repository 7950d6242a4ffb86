"""SPEC §16.3 ``keyless-smoke.e2e``: the real coding-agent ``start.py`` boots its tree through the
loader. Beyond the reference smoke, a whole chat runs against a local wire server (real
bash included) and ``RESUME_SESSION_ID`` continues that chat in a second process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.wire import WireServer, text_reply
from tests.examples.coding.harness import START
from tests.examples.coding.scripts import bash_reply

pytestmark = pytest.mark.e2e

EXIT_GUARD_S = 30.0
BANNER = "coding-agent ready. Give it a coding task (bash is its only tool).\n> "
VARIABLES = ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "RESUME_SESSION_ID", "DSH_SESSIONS_ROOT")


def child_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    env["DSH_SESSIONS_ROOT"] = str(tmp_path / "sessions")
    env.update(overrides)
    return env


def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir(exist_ok=True)
    return path


def run_start(tmp_path: Path, stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(START)],
        input=stdin,
        cwd=workdir(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=EXIT_GUARD_S,
        check=False,
    )


async def run_start_async(tmp_path: Path, stdin: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Like :func:`run_start`, without blocking the loop (a wire server in this process answers)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(START),
        cwd=workdir(tmp_path),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(stdin.encode()), EXIT_GUARD_S)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def session_logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "sessions").glob("*/*.jsonl"))


def log_events(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record.get("type") != "session"]


def test_boots_the_full_plugin_tree_prints_its_banner_and_exits_cleanly_on_eof(tmp_path: Path) -> None:
    """coding-agent keyless smoke (real cordis.yml via the Loader) — boots the full plugin tree, prints its banner, and exits cleanly on EOF"""
    done = run_start(
        tmp_path, "", child_env(tmp_path, DEEPSEEK_API_KEY="dummy", DEEPSEEK_BASE_URL="http://127.0.0.1:9")
    )
    assert done.returncode == 0, done.stderr
    assert "coding-agent ready." in done.stdout
    assert done.stdout == BANNER
    assert done.stderr == ""


def test_without_an_api_key_the_tree_fails_to_load_and_says_why_on_stderr(tmp_path: Path) -> None:
    done = run_start(tmp_path, "", child_env(tmp_path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "coding-agent: " in done.stderr
    assert "an API key is required" in done.stderr


def test_an_unknown_resume_id_warns_and_starts_no_agent(tmp_path: Path) -> None:
    env = child_env(tmp_path, DEEPSEEK_API_KEY="dummy", RESUME_SESSION_ID="no-such-session")
    done = run_start(tmp_path, "hello\n", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == BANNER
    assert 'config-driven resume of "no-such-session" failed' in done.stderr
    assert 'ui-stdio: agent "main" is not running' in done.stderr


async def test_a_chat_runs_bash_and_a_second_process_resumes_it(tmp_path: Path, wire: WireServer) -> None:
    """The real tree end to end on a local model: bash runs in the working directory; resume continues the log."""
    wire.add(bash_reply("call-1", "echo keyless-ok > proof.txt && cat proof.txt"), text_reply("Wrote proof.txt."))
    env = child_env(tmp_path, DEEPSEEK_API_KEY="dummy", DEEPSEEK_BASE_URL=wire.base_url)
    code, stdout, stderr = await run_start_async(tmp_path, "write the proof file\n", env)
    assert code == 0, stderr
    assert '\n  [tool call] bash({"command": "echo keyless-ok > proof.txt && cat proof.txt"' in stdout
    assert "\n  [tool result] keyless-ok" in stdout
    assert stdout.endswith("Wrote proof.txt.\n> ")
    assert (workdir(tmp_path) / "proof.txt").read_text(encoding="utf-8") == "keyless-ok\n"
    (log,) = session_logs(tmp_path)
    session_id = log.stem

    wire.add(text_reply("You asked me to write the proof file."))
    resumed_env = {**env, "RESUME_SESSION_ID": session_id}
    code, stdout, stderr = await run_start_async(tmp_path, "what did I ask before?\n", resumed_env)
    assert code == 0, stderr
    assert "[main turn 2] You asked me to write the proof file." in stdout
    assert session_logs(tmp_path) == [log]  # the same log grew
    user_texts = [e["data"]["content"][0]["text"] for e in log_events(log) if e["type"] == "user/message"]
    assert user_texts == ["write the proof file", "what did I ask before?"]
    sent = json.dumps(wire.requests[-1].json["messages"], ensure_ascii=False)
    assert "write the proof file" in sent
