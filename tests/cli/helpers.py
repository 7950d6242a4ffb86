"""Shared helpers of the `dsh` command tests: the real executable, session logs on disk, trees."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.sealing import unsealed

DSH = Path(sys.executable).with_name("dsh")
"""The installed console script."""

KEY = "sk-test"


@dataclass(frozen=True)
class Finished:
    """A finished `dsh` process."""

    status: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]


def child_env(*, base_url: str | None = None, key: str | None = KEY, home: Path | None = None) -> dict[str, str]:
    """The environment of a `dsh` subprocess: no DeepSeek variables from the shell, then the given ones."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("DEEPSEEK_", "DSH_"))}
    if key is not None:
        env["DEEPSEEK_API_KEY"] = key
    if base_url is not None:
        env["DEEPSEEK_BASE_URL"] = base_url
    if home is not None:
        env["DSH_HOME"] = str(home)
    return env


async def spawn(*args: str, env: dict[str, str], cwd: Path, stdin: bytes | None = None) -> asyncio.subprocess.Process:
    """Start `dsh args...` with pipes on all three streams (stdin closed after `stdin` when given)."""
    process = await asyncio.create_subprocess_exec(
        str(DSH),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        await process.stdin.drain()
        process.stdin.close()
    return process


async def finish(process: asyncio.subprocess.Process) -> Finished:
    out, err = await process.communicate()
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


async def dsh(*args: str, env: dict[str, str], cwd: Path, stdin: bytes | None = b"") -> Finished:
    """Run `dsh args...` to completion (stdin closed at once unless given)."""
    return await finish(await spawn(*args, env=env, cwd=cwd, stdin=stdin))


def session_files(root: Path) -> list[Path]:
    """Every session log under a JSONL sessions root."""
    return sorted(root.glob("*/*.jsonl"))


def read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A JSONL session log: its header and its events (without the line checksums)."""
    header, *events = (json.loads(line) for line in unsealed(path.read_bytes()).decode().splitlines())
    return header, events


def log_of(root: Path, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    (path,) = [path for path in session_files(root) if path.stem == session_id]
    return read_log(path)


def turn_ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event["data"] for event in events if event["type"] == "turn/end"]


def session_id_of(stderr: str) -> str:
    """The id `dsh run` announced on stderr (`dsh: session <id>`)."""
    (line,) = [line for line in stderr.splitlines() if line.startswith("dsh: session ")]
    return line.removeprefix("dsh: session ")


def write_tree(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
    return path


def namespace(**values: object) -> argparse.Namespace:
    """Parsed global options as `Settings.from_args` reads them: the defaults, then `values`."""
    defaults: dict[str, object] = {
        "config": None,
        "model": None,
        "sessions_root": None,
        "cwd": None,
        "demo": False,
        "system_prompt": None,
        "invariants": False,
        "verbose": 0,
    }
    return argparse.Namespace(**{**defaults, **values})
