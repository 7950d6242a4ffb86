"""Failures found before the model is asked, said in one line: the sessions root, unexpected errors, --debug,
a closed stdout, a failure several layers report."""

from __future__ import annotations

import asyncio
import io
import logging
import os
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.answer import detach_stdout
from dsh.cli.boot import logging_to_stderr
from dsh.cli.errors import CliError, Once
from dsh.cli.run import EXIT_OUTPUT_CLOSED
from dsh.cli.settings import check_sessions_root
from dsh.testing.wire import Reply, TextDelta, WireServer, text_reply
from tests.cli.helpers import DSH, child_env, log_of, session_id_of, turn_ends


def run_args(root: Path, cwd: Path, *rest: str) -> list[str]:
    return ["run", "--sessions-root", str(root), "--cwd", str(cwd), *rest]


async def test_a_sessions_root_that_is_a_file_fails_before_the_model_is_asked(
    server: WireServer, tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    server.add(text_reply("never"))
    assert await amain(run_args(blocker, workspace, "hi")) == 1
    assert await amain(run_args(blocker / "below", workspace, "hi")) == 1
    assert await amain(["chat", "--sessions-root", str(blocker), "--cwd", str(workspace)]) == 1
    err = capsys.readouterr().err.splitlines()
    fix = "pass --sessions-root DIR or set DSH_HOME to a writable directory"
    assert err == [
        f"dsh: the sessions root {blocker} is not a directory: {fix}",
        f"dsh: the sessions root {blocker / 'below'} is not a directory (its parent {blocker} is not a directory): "
        f"{fix}",
        f"dsh: the sessions root {blocker} is not a directory: {fix}",
    ]
    assert server.requests == []


def test_an_unwritable_sessions_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The tests may run as root, whom no mode bit stops: the permission answer is faked.)"""
    monkeypatch.setattr("os.access", lambda _path, _mode: False)
    with pytest.raises(CliError, match=f"the sessions root {tmp_path} is not writable: pass"):
        check_sessions_root(tmp_path)
    with pytest.raises(CliError, match=rf"is not writable \(its parent {tmp_path} is not writable\)"):
        check_sessions_root(tmp_path / "new")
    monkeypatch.undo()
    check_sessions_root(tmp_path / "new" / "deeper")


async def test_an_unexpected_error_is_one_line_and_a_traceback_with_debug(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(_args: object) -> int:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("dsh.cli.run.command", broken)
    assert await amain(["run", "x"]) == 1
    assert capsys.readouterr().err == (
        "dsh: unexpected error: RuntimeError: the disk is full (run again with --debug for the traceback)\n"
    )
    assert await amain(["--debug", "run", "x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith("dsh: unexpected error: RuntimeError: the disk is full\n")

    async def bare(_args: object) -> int:
        raise RuntimeError

    monkeypatch.setattr("dsh.cli.run.command", bare)
    assert await amain(["run", "x"]) == 1
    assert "dsh: unexpected error: RuntimeError (run" in capsys.readouterr().err


def test_a_failure_is_said_once_however_many_layers_report_it(capsys: pytest.CaptureFixture[str]) -> None:
    once = Once()
    failure = 'writing session "s-1" failed: [Errno 28] No space left on device'
    assert once.say(f"session is not persisted: {failure}")
    assert not once.say(f'agent "main": error in turn 1: {failure}')
    assert once.say("turn 1 ended: aborted (interrupted)")
    assert (
        capsys.readouterr().err
        == f"dsh: session is not persisted: {failure}\ndsh: turn 1 ended: aborted (interrupted)\n"
    )


def test_log_records_are_one_line_without_debug_and_keep_tracebacks_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = logging.getLogger("dsh.test")
    try:
        raise OSError("no space left on device (check the disk)")
    except OSError:
        with logging_to_stderr(0):
            logger.warning("flush failed: no space left on device (check the disk)\nmore", exc_info=True)
            logger.error("dispose raised: OSError('no space left on device (check the disk)')", exc_info=True)
            logger.warning("")
        quiet = capsys.readouterr().err
        with logging_to_stderr(0, debug=True):
            logger.warning("flush failed", exc_info=True)
        loud = capsys.readouterr().err
    assert quiet == ("dsh.test: WARNING: flush failed: no space left on device (check the disk)\ndsh.test: WARNING: \n")
    assert "Traceback" in loud


async def test_a_model_error_is_printed_once(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dsh.testing.wire import api_error

    server.add(api_error(400, "the model is on fire"))  # permanent: llm-retry passes it on
    assert await amain(run_args(sessions_root, workspace, "hi")) == 1
    err = capsys.readouterr().err
    assert err.count("the model is on fire") == 1, err


async def test_a_closed_stdout_cancels_the_turn_and_exits_quietly(
    server: WireServer,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Closed(io.StringIO):
        def write(self, _text: str, /) -> int:
            raise BrokenPipeError("closed")

    detached: list[bool] = []
    monkeypatch.setattr("dsh.cli.run.detach_stdout", lambda: detached.append(True))
    monkeypatch.setattr("sys.stdout", Closed())
    server.add(Reply([TextDelta("lost")], ending="stall"))
    assert await amain(run_args(sessions_root, workspace, "hi")) == EXIT_OUTPUT_CLOSED
    assert detached == [True]
    err = capsys.readouterr().err
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "aborted", "reason": "output closed"}}]
    monkeypatch.setattr("sys.stdout", Closed())
    server.add(Reply([TextDelta("lost")], ending="stall"))
    assert await amain(run_args(sessions_root, workspace, "--json", "hi")) == EXIT_OUTPUT_CLOSED


def test_detach_stdout_points_descriptor_1_at_dev_null() -> None:
    saved = os.dup(1)
    try:
        detach_stdout()
        assert os.path.samestat(os.fstat(1), os.stat(os.devnull))
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@pytest.mark.e2e
async def test_run_into_a_reader_that_leaves_stops_quietly(server: WireServer, tmp_path: Path, workspace: Path) -> None:
    """`dsh run ... | head`: once the reader is gone, dsh aborts the turn and exits 141 without a traceback."""
    server.add(Reply([TextDelta("x" * 1000 + "\n")] * 400, ending="stall"))
    read, write = os.pipe()
    process = await asyncio.create_subprocess_exec(
        str(DSH),
        "run",
        "long",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=write,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(base_url=server.base_url, home=tmp_path),
        cwd=workspace,
    )
    os.close(write)
    assert await asyncio.to_thread(os.read, read, 100)
    os.close(read)
    _, err = await process.communicate()
    assert process.returncode == EXIT_OUTPUT_CLOSED
    assert b"Traceback" not in err
    assert b"Exception ignored" not in err
    _, events = log_of(tmp_path / "sessions", session_id_of(err.decode()))
    assert turn_ends(events)[-1] == {"turn": 1, "reason": {"kind": "aborted", "reason": "output closed"}}


def test_a_completed_turn_whose_log_failed_exits_failed_and_says_each_failure_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn that completed but whose turn-end flush failed: exit 1, each agent failure said once."""
    from dsh.cli import errors
    from dsh.cli.agent import TurnOutcome
    from dsh.cli.run import _report
    from dsh.core.session import CompletedReason

    monkeypatch.setattr(errors, "ONCE", Once())
    failure = 'writing session "s-1" failed: [Errno 28] No space left on device'
    failures = [(failure, f'agent "main": {failure}'), (failure, f"session is not persisted: {failure}")]
    status = _report(TurnOutcome(1, CompletedReason()), None, failures, "check $DEEPSEEK_API_KEY")
    assert status == 1
    assert capsys.readouterr().err == f'dsh: agent "main": {failure}\n'
