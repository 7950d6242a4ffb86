"""Running the real echo-agent example (``examples/echo-agent/start.py``) in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[3]
EXAMPLE = PROJECT / "examples" / "echo-agent"
START = EXAMPLE / "start.py"
EXIT_GUARD_S = 30.0
"""How long a run may take before it is declared hung (a guard, not a measure)."""


def child_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """This environment minus the example's knobs, with session logs under ``tmp_path``."""
    env = {key: value for key, value in os.environ.items() if key not in ("ECHO_AGENT_DELAY_MS", "DSH_SESSIONS_ROOT")}
    env["DSH_SESSIONS_ROOT"] = str(tmp_path / "sessions")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides)
    return env


def run_echo(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    """Start the example from a fresh working directory, pipe ``lines``, close stdin, wait for the exit."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(START)],
        input="".join(line + "\n" for line in lines),
        cwd=cwd,
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=EXIT_GUARD_S,
        check=False,
    )


def session_events(tmp_path: Path) -> list[dict[str, Any]]:
    """The events of the one session log the run wrote under its sessions root."""
    (log,) = (tmp_path / "sessions").glob("*/*.jsonl")
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [record for record in records if record.get("type") != "session"]
