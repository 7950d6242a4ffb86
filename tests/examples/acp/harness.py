"""The snapshot runner: one real ``acp-agent`` process driven through one scenario (SPEC §16.5).

:func:`run_scenario` creates a temp workspace (seeded from the scenario's
``workspace/``) and a temp sessions root, spawns exactly ``python
<project>/examples/acp-agent/start.py`` with the workspace as cwd and the
``DSH_SNAPSHOT*`` variables set, drives the steps through a :class:`PipeClient` (which
tees every stdout byte), closes stdin, waits for the exit, and harvests the session
log: the first ``*.jsonl`` in an immediate subdirectory of the sessions root (the
JSONL backend's per-cwd bucket). The child is killed only if it is still running at
the end, and both temp dirs are removed.

:func:`spawn_agent` is the spawning half, for tests that drive the process
themselves. When this test process is measured by coverage, the child is measured
too (its data files land beside ours and are combined at the end).

Steps (``input.json``): ``initialize`` (``terminalOutput: true`` advertises
``_meta.terminal_output``), ``newSession`` (captures the id), ``newSessionExpectError``
(optional ``additionalDirectories``), ``prompt``, ``promptExpectError``,
``promptAndCancel`` (send, wait for an ``agent_message_chunk``, cancel, await) and
``cancel``. Prompts go to the last session opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import coverage

from tests.examples.acp.client import PipeClient, RpcError

PROJECT = Path(__file__).resolve().parents[3]
START = PROJECT / "examples" / "acp-agent" / "start.py"
SNAPSHOT_VARIABLES = ("DSH_SNAPSHOT", "DSH_SNAPSHOT_FILE", "DSH_SNAPSHOT_OVERRIDE", "DSH_SNAPSHOT_SESSIONS_ROOT")
EXIT_GRACE_S = 30.0
"""How long a closed server may take to exit before the run is declared hung (a guard, not a measure)."""


class ScenarioError(AssertionError):
    """A step did not behave as the scenario requires; the message carries the server's stderr."""


@dataclass
class ScenarioRun:
    """What one run produced: raw stdout, the harvested log (None when none was written), context."""

    stdout: str
    session_log: str | None
    cwd: str
    session_ids: list[str]
    returncode: int | None
    stderr: str
    mode: str = "replay"
    frames: list[dict[str, Any]] = field(default_factory=list)


def _coverage_env(workdir: Path) -> dict[str, str]:
    """Variables that make a child Python measure itself like this process (none when unmeasured)."""
    current = coverage.Coverage.current()
    if current is None:
        return {}
    config = current.config
    sources = [str(Path(item).resolve()) if Path(item).exists() else item for item in (config.source or ["dsh"])]
    rcfile = workdir / "coverage.ini"
    rcfile.write_text(
        "[run]\n"
        f"branch = {config.branch}\n"
        "parallel = True\n"
        f"data_file = {Path(config.data_file).resolve()}\n"
        "source =\n" + "".join(f"    {item}\n" for item in sources),
        encoding="utf-8",
    )
    return {"COVERAGE_PROCESS_START": str(rcfile)}


def child_env(overrides: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """This process's environment without any ``DSH_SNAPSHOT*`` variable, plus ``overrides``."""
    env = {key: value for key, value in os.environ.items() if key not in SNAPSHOT_VARIABLES}
    env.pop("COVERAGE_PROCESS_START", None)
    env.update(_coverage_env(scratch))
    env.update(overrides)
    return env


@contextlib.asynccontextmanager
async def spawn_agent(cwd: Path, env: Mapping[str, str]) -> AsyncIterator[PipeClient]:
    """Run ``python start.py`` in ``cwd`` with ``env``, yield its started client; kill it if still running."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(START),
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    client = PipeClient(process)
    client.start()
    try:
        yield client
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        await client.wait_eof()


async def shut_down(client: PipeClient, grace_s: float = EXIT_GRACE_S) -> int:
    """Close the server's stdin and wait for it to exit; its exit status.

    Raises :class:`ScenarioError` when it is still running ``grace_s`` seconds later.
    """
    await client.close_stdin()
    try:
        async with asyncio.timeout(grace_s):
            code = await client.process.wait()
            await client.wait_eof()
    except TimeoutError:
        raise ScenarioError(f"the server did not exit after stdin closed; stderr:\n{client.stderr_text}") from None
    return code


def harvest_session_log(root: Path) -> str | None:
    """The text of the first ``*.jsonl`` in an immediate subdirectory of ``root`` (sorted), or None."""
    if not root.is_dir():
        return None
    for bucket in sorted(path for path in root.iterdir() if path.is_dir()):
        for log in sorted(bucket.glob("*.jsonl")):
            return log.read_text(encoding="utf-8")
    return None


def _fail(step: Mapping[str, Any], client: PipeClient, problem: str) -> ScenarioError:
    return ScenarioError(f"step {dict(step)}: {problem}; stderr:\n{client.stderr_text[-4000:]}")


def _initialize_params(step: Mapping[str, Any]) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    if step.get("terminalOutput"):
        capabilities["_meta"] = {"terminal_output": True}
    return {"protocolVersion": 1, "clientCapabilities": capabilities}


def _prompt_params(session_id: str | None, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def _expect_error(step: Mapping[str, Any], client: PipeClient, method: str, params: Any) -> None:
    try:
        result = await client.request(method, params)
    except RpcError:
        return
    raise _fail(step, client, f"{method} was expected to fail but answered {result!r}")


async def run_steps(client: PipeClient, steps: Sequence[Mapping[str, Any]], cwd: str) -> list[str]:
    """Drive ``steps`` (see the module docstring); the session ids learned, in order."""
    session_ids: list[str] = []
    for step in steps:
        op = step["op"]
        current = session_ids[-1] if session_ids else None
        try:
            if op == "initialize":
                await client.request("initialize", _initialize_params(step))
            elif op == "newSession":
                result = await client.request("session/new", {"cwd": cwd, "mcpServers": []})
                session_ids.append(result["sessionId"])
            elif op == "newSessionExpectError":
                params: dict[str, Any] = {"cwd": cwd, "mcpServers": []}
                if "additionalDirectories" in step:
                    params["additionalDirectories"] = step["additionalDirectories"]
                await _expect_error(step, client, "session/new", params)
            elif op == "prompt":
                await client.request("session/prompt", _prompt_params(current, step["text"]))
            elif op == "promptExpectError":
                await _expect_error(step, client, "session/prompt", _prompt_params(current, step["text"]))
            elif op == "promptAndCancel":
                seen = len(client.updates)
                answer = client.request_nowait("session/prompt", _prompt_params(current, step["text"]))
                await client.wait_for(
                    lambda seen=seen: any(  # type: ignore[misc]
                        update.get("sessionUpdate") == "agent_message_chunk" for update in client.updates[seen:]
                    )
                )
                client.notify("session/cancel", {"sessionId": current})
                await answer
            elif op == "cancel":
                client.notify("session/cancel", {"sessionId": current})
            else:
                raise _fail(step, client, f"unknown op {op!r}")
        except RpcError as error:
            raise _fail(step, client, f"unexpected error response {error.error}") from error
    return session_ids


async def run_scenario(
    steps: Sequence[Mapping[str, Any]],
    *,
    mode: str = "replay",
    fixture_file: Path,
    override_file: Path | None = None,
    workspace_dir: Path | None = None,
) -> ScenarioRun:
    """Run one scenario end to end; see the module docstring."""
    cwd = Path(tempfile.mkdtemp(prefix="acp-snap-cwd-")).resolve()
    root = Path(tempfile.mkdtemp(prefix="acp-snap-sessions-")).resolve()
    try:
        if workspace_dir is not None and workspace_dir.is_dir():
            shutil.copytree(workspace_dir, cwd, dirs_exist_ok=True)
        overrides = {
            "DSH_SNAPSHOT": mode,
            "DSH_SNAPSHOT_FILE": str(fixture_file),
            "DSH_SNAPSHOT_SESSIONS_ROOT": str(root),
        }
        if override_file is not None and override_file.exists():
            overrides["DSH_SNAPSHOT_OVERRIDE"] = str(override_file)
        async with spawn_agent(cwd, child_env(overrides, root)) as client:
            session_ids = await run_steps(client, steps, str(cwd))
            code = await shut_down(client)
        return ScenarioRun(
            stdout=client.raw.decode("utf-8"),
            session_log=harvest_session_log(root),
            cwd=str(cwd),
            session_ids=session_ids,
            returncode=code,
            stderr=client.stderr_text,
            mode=mode,
            frames=client.frames,
        )
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
