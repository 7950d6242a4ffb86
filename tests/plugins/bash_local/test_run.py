"""``run_bash``, ``OutputCollector`` and ``kill_group`` (SPEC §9b, ``run.spec.ts``), plus the issue's extras."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import resource
import signal
import stat
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.core.bash import BashRunResult
from dsh.core.errors import HarnessError
from dsh.kernel import AbortController
from dsh.plugins.bash_local import (
    DEFAULT_ENV_ALLOW,
    MODEL_FRIENDLY,
    BashInternals,
    ChildEnv,
    EnvPolicy,
    OutputCollector,
    RunningBash,
    child_env,
    default_spill_dir,
    kill_group,
    run_bash,
    signal_name,
)
from dsh.plugins.bash_local import process as process_module
from tests.plugins.bash_local.helpers import Handshake, alive, exited, file_bytes, file_size, real, wait_exited


def start(command: str, tmp_path: Path, **options: Any) -> RunningBash:
    options.setdefault("cwd", str(tmp_path))
    options.setdefault("timeout_ms", 0)
    options.setdefault("max_output_bytes", 64_000)
    options.setdefault("internals", BashInternals(grace_ms=200, spill_dir=str(tmp_path)))
    return run_bash(command, **options)


async def run(command: str, tmp_path: Path, **options: Any) -> BashRunResult:
    return await start(command, tmp_path, **options).done


@pytest.fixture
def file_size_limit() -> Iterator[Any]:
    """Set RLIMIT_FSIZE for the duration of a test (Python ignores SIGXFSZ: writes fail with EFBIG)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

    def limit(size: int) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))

    yield limit
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


# ------------------------------------------------------------------------ describe runBash


async def test_captures_stdout_on_success(tmp_path: Path) -> None:
    """captures stdout on success"""
    result = await run("echo hello", tmp_path)
    assert result.stdout.text == "hello\n"
    assert result.stdout.truncated is False
    assert result.stderr.text == ""
    assert result.exit_code == 0
    assert result.signal is None
    assert result.timed_out is False
    assert result.aborted is False


async def test_captures_stderr_separately(tmp_path: Path) -> None:
    """captures stderr separately"""
    result = await run("echo oops >&2", tmp_path)
    assert result.stdout.text == ""
    assert result.stderr.text == "oops\n"


async def test_captures_both_streams(tmp_path: Path) -> None:
    """captures both streams"""
    result = await run("echo out; echo err >&2", tmp_path)
    assert result.stdout.text == "out\n"
    assert result.stderr.text == "err\n"


async def test_reports_non_zero_exit_codes(tmp_path: Path) -> None:
    """reports non-zero exit codes"""
    result = await run("exit 42", tmp_path)
    assert result.exit_code == 42
    assert result.signal is None


async def test_applies_model_friendly_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """applies model-friendly env overrides"""
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("PAGER", "less")
    result = await run('echo "$NO_COLOR/$TERM/$PAGER/$GIT_PAGER"', tmp_path)
    assert result.stdout.text == "1/dumb/cat/cat\n"


async def test_runs_in_the_requested_cwd(tmp_path: Path) -> None:
    """runs in the requested cwd"""
    where = tmp_path / "here"
    where.mkdir()
    result = await run("pwd -P", tmp_path, cwd=str(where))
    assert result.stdout.text == f"{real(where)}\n"


async def test_kills_with_sigterm_on_timeout(tmp_path: Path) -> None:
    """kills with SIGTERM on timeout"""
    result = await run("sleep 30", tmp_path, timeout_ms=100)
    assert result.timed_out is True
    assert result.signal == "SIGTERM"
    assert result.exit_code is None
    assert result.aborted is False
    assert result.timeout_ms == 100


async def test_escalates_to_sigkill_when_sigterm_is_trapped(tmp_path: Path, handshake: Handshake) -> None:
    """escalates to SIGKILL when SIGTERM is trapped"""
    running = start(f"trap '' TERM; {handshake.connect}; echo $$ >&3; sleep 30", tmp_path)
    (pid,) = await handshake.pids()
    running.kill()
    result = await running.done
    assert result.signal == "SIGKILL"
    assert result.exit_code is None
    assert not alive(pid)


async def test_kills_the_whole_process_group_grandchildren_die_too(tmp_path: Path, handshake: Handshake) -> None:
    """kills the whole process group (grandchildren die too)"""
    running = start(f"sleep 30 & {handshake.connect}; echo $$ $! >&3; sleep 30", tmp_path)
    pids = await handshake.pids()
    assert await running.spawned() == pids[0]
    assert all(alive(pid) for pid in pids)
    running.kill()
    result = await running.done
    assert result.signal == "SIGTERM"
    assert not alive(pids[0])  # the leader is our child: reaped before close
    await exited(*pids)  # a grandchild may still be finishing its exit


async def test_aborts_via_abortsignal_mid_run(tmp_path: Path, handshake: Handshake) -> None:
    """aborts via AbortSignal mid-run"""
    controller = AbortController()
    running = start(
        f"sleep 30 & {handshake.connect}; echo $$ $! >&3; wait", tmp_path, timeout_ms=60_000, signal=controller.signal
    )
    pids = await handshake.pids()
    controller.abort("stop")
    result = await running.done
    assert result.aborted is True
    assert result.timed_out is False
    assert result.signal == "SIGTERM"
    assert not alive(pids[0])  # the leader is our child: reaped before close
    await exited(*pids)  # a grandchild may still be finishing its exit


async def test_throws_when_the_signal_is_already_aborted_before_spawn(tmp_path: Path) -> None:
    """throws when the signal is already aborted before spawn"""
    controller = AbortController()
    controller.abort("too late")
    with pytest.raises(HarnessError, match="aborted before spawn: too late") as caught:
        start("echo never", tmp_path, signal=controller.signal)
    assert caught.value.code == "ABORTED"


async def test_rejects_with_a_spawn_error_for_a_nonexistent_cwd(tmp_path: Path) -> None:
    """rejects with a spawn error for a nonexistent cwd"""
    missing = str(tmp_path / "missing")
    running = start("echo never", tmp_path, cwd=missing)
    with pytest.raises(HarnessError, match="ENOENT") as caught:
        await running.done
    assert caught.value.code == "ENOENT"
    assert f'check that the workdir "{missing}" exists' in str(caught.value)
    assert await running.spawned() is None
    assert running.closed
    running.kill()
    await running.wait_closed()


async def test_kill_is_idempotent_second_call_does_not_restart_escalation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handshake: Handshake
) -> None:
    """kill() is idempotent (second call does not restart escalation)"""
    sent: list[tuple[int, int]] = []
    real_killpg = os.killpg

    def recording_killpg(pid: int, sig: int) -> None:
        sent.append((pid, sig))
        real_killpg(pid, sig)

    monkeypatch.setattr(os, "killpg", recording_killpg)
    running = start(f"trap '' TERM; {handshake.connect}; echo $$ >&3; sleep 30", tmp_path)
    (pid,) = await handshake.pids()
    running.kill()
    running.kill()
    result = await running.done
    running.kill()
    assert result.signal == "SIGKILL"
    assert [sig for _pid, sig in sent].count(signal.SIGTERM) == 1
    assert sent[:2] == [(pid, signal.SIGTERM), (pid, signal.SIGKILL)]


# ------------------------------------------------------------------------ describe output truncation and spill


async def test_keeps_the_tail_and_spills_the_full_stream_to_disk(tmp_path: Path) -> None:
    """keeps the tail and spills the full stream to disk"""
    result = await run("for i in $(seq -f %04g 1 200); do echo line-$i; done", tmp_path, max_output_bytes=500)
    assert result.stdout.truncated is True
    assert "line-0200" in result.stdout.text
    assert "line-0001" not in result.stdout.text
    assert len(result.stdout.text.encode()) <= 500
    assert result.stdout.spill_path is not None
    spilled = file_bytes(result.stdout.spill_path).decode()
    assert "line-0001" in spilled
    assert "line-0200" in spilled
    assert spilled == "".join(f"line-{i:04d}\n" for i in range(1, 201))


async def test_does_not_truncate_output_exactly_at_the_cap(tmp_path: Path) -> None:
    """does not truncate output exactly at the cap"""
    result = await run("printf 'x%.0s' $(seq 1 500)", tmp_path, max_output_bytes=500)
    assert result.stdout.text == "x" * 500
    assert result.stdout.truncated is False
    assert result.stdout.spill_path is None


async def test_settles_with_the_tail_and_no_spill_path_when_final_spill_close_fails(
    tmp_path: Path, file_size_limit: Any
) -> None:
    """settles with the tail and no spill path when final spill close fails"""
    file_size_limit(1000)
    result = await run("printf 'y%.0s' $(seq 1 2000)", tmp_path, max_output_bytes=500)
    assert result.stdout.text == "y" * 500
    assert result.stdout.truncated is True
    assert result.stdout.spill_path is None


# ------------------------------------------------------------------------ describe OutputCollector


def test_keeps_the_tail_of_a_single_oversized_chunk(tmp_path: Path) -> None:
    """keeps the tail of a single oversized chunk"""
    collector = OutputCollector(10, "stdout", str(tmp_path))
    collector.push(b"0123456789abcdef")
    out = collector.finalize()
    assert out.text == "6789abcdef"
    assert out.truncated is True
    assert out.spill_path is not None
    assert Path(out.spill_path).read_bytes() == b"0123456789abcdef"
    assert collector.retained_bytes == 10


def test_readfrom_returns_increments_and_flags_lossy_reads(tmp_path: Path) -> None:
    """readFrom returns increments and flags lossy reads"""
    collector = OutputCollector(10, "stdout", str(tmp_path))
    collector.push(b"abc")
    first = collector.read_from(0)
    assert (first.text, first.next_offset, first.lossy, first.spill_path) == ("abc", 3, False, None)
    collector.push(b"de")
    second = collector.read_from(first.next_offset)
    assert (second.text, second.next_offset, second.lossy) == ("de", 5, False)
    empty = collector.read_from(second.next_offset)
    assert (empty.text, empty.next_offset, empty.lossy) == ("", 5, False)
    collector.push(b"0123456789")
    exact = collector.read_from(empty.next_offset)
    assert (exact.text, exact.next_offset, exact.lossy) == ("0123456789", 15, False)
    collector.push(b"X")
    lossy = collector.read_from(empty.next_offset)
    assert lossy.lossy is True
    assert lossy.text == "X"
    assert lossy.next_offset == 16
    assert lossy.spill_path is not None
    collector.finalize()
    assert Path(lossy.spill_path).read_bytes() == b"abcde0123456789X"


def test_tracks_totalbytes_across_drops(tmp_path: Path) -> None:
    """tracks totalBytes across drops"""
    collector = OutputCollector(4, "stdout", str(tmp_path))
    for chunk in (b"aa", b"bb", b"cc", b"", b"d"):
        collector.push(chunk)
    assert collector.total_bytes == 7
    assert collector.retained_bytes == 3
    assert collector.snapshot().text == "ccd"
    assert collector.snapshot().truncated is True
    assert collector.finalize().spill_path is not None


def test_contains_close_failures_and_drops_the_spill_path(tmp_path: Path, file_size_limit: Any) -> None:
    """contains close failures and drops the spill path"""
    collector = OutputCollector(10, "stdout", str(tmp_path))
    for _ in range(15):
        collector.push(b"0123456789")
    assert collector.spill_path is not None
    file_size_limit(100)
    out = collector.finalize()
    assert out.spill_path is None
    assert out.text == "0123456789"
    assert out.truncated is True
    assert collector.finalize().spill_path is None


# ------------------------------------------------------------------------ describe killGroup


def test_ignores_non_positive_pids(monkeypatch: pytest.MonkeyPatch) -> None:
    """ignores non-positive pids"""
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    kill_group(0, signal.SIGTERM)
    kill_group(-1, signal.SIGKILL)
    assert sent == []


async def test_swallows_esrch_for_vanished_groups() -> None:
    """swallows ESRCH for vanished groups"""
    process = await asyncio.create_subprocess_exec("true", start_new_session=True)
    await process.wait()
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)
    kill_group(process.pid, signal.SIGTERM)


# ------------------------------------------------------------------------ describe abort edge cases


async def test_reports_a_fallback_reason_for_reason_less_pre_aborted_signals(tmp_path: Path) -> None:
    """reports a fallback reason for reason-less pre-aborted signals"""
    controller = AbortController()
    controller.abort(None)
    with pytest.raises(HarnessError, match=r"^aborted before spawn: aborted$"):
        start("echo never", tmp_path, signal=controller.signal)


async def test_reports_an_externally_self_killed_command_without_the_timeout_marker(tmp_path: Path) -> None:
    """reports an externally self-killed command without the timeout marker"""
    result = await run("kill -TERM $$", tmp_path, timeout_ms=60_000)
    assert result.signal == "SIGTERM"
    assert result.exit_code is None
    assert result.timed_out is False
    assert result.aborted is False


# ------------------------------------------------------------------------ describe env scrubbing and spill hardening


CREDENTIALS = {
    "PGPASSWORD": "pg-hunter2",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SESSION_TOKEN": "aws-session",
    "DATABASE_URL": "postgres://app:db-hunter2@db.internal:5432/app",
    "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "GH_TOKEN": "gh-token",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "MYSQL_PASSWORD": "mysql-pw",
    "REDIS_PASSWORD": "redis-pw",
    "NPM_AUTH": "npm-auth",
    "DOCKER_AUTH": "docker-auth",
    "DEEPSEEK_API_KEY": "sk-deepseek-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "REGISTRY_AUTH": "auth-value",
    "HF_TOKEN": "hf-token",
    "SLACK_WEBHOOK_URL": "https://hooks.example/secret",
    "SENTRY_DSN": "https://key@sentry.example/1",
    "GOOGLE_APPLICATION_CREDENTIALS": "/secret/creds.json",
    "KUBECONFIG": "/secret/kube",
}


async def test_a_child_sees_none_of_twenty_credential_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """the environment is an allowlist: credentials of any name stay out, PATH/HOME/LANG pass"""
    assert len(CREDENTIALS) == 20
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("LC_TIME", "C")
    result = await run("env -0", tmp_path)
    seen = dict(entry.split("=", 1) for entry in result.stdout.text.split("\0") if entry)
    assert not set(CREDENTIALS) & set(seen)
    assert not any(value in result.stdout.text for value in CREDENTIALS.values())
    assert seen["PATH"] == os.environ["PATH"]
    assert seen["HOME"] == os.environ["HOME"]
    assert (seen["LANG"], seen["LC_TIME"]) == ("C.UTF-8", "C")


def test_child_env_keeps_only_allowed_names_plus_extras() -> None:
    """child_env: the allowlist (exact names and PREFIX* entries), then fixed extras, then the overrides"""
    parent = {"PATH": "/bin", "LC_ALL": "C", "GH_Token": "t", "VISIBLE": "v", "GOPATH": "/go", "NODE_ENV": "dev"}
    assert child_env(parent) == {"PATH": "/bin", "LC_ALL": "C", **MODEL_FRIENDLY}
    env = child_env(parent, allow=["VISIBLE", "NODE_*"], extra={"FIXED": "1", "TERM": "xterm"})
    assert env == {"PATH": "/bin", "LC_ALL": "C", "VISIBLE": "v", "NODE_ENV": "dev", "FIXED": "1", **MODEL_FRIENDLY}
    assert "HOME" in DEFAULT_ENV_ALLOW


async def test_creates_spill_files_with_owner_only_permissions_and_random_names(tmp_path: Path) -> None:
    """creates spill files with owner-only permissions and random names"""
    result = await run("printf 'z%.0s' $(seq 1 300)", tmp_path, max_output_bytes=100)
    path = result.stdout.spill_path
    assert path is not None
    assert re.search(r"dsh-bash-\d+-\d+-[0-9a-f]{12}-stdout\.log$", path)
    assert os.path.basename(path).startswith(f"dsh-bash-{os.getpid()}-")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = await run("printf 'z%.0s' $(seq 1 300)", tmp_path, max_output_bytes=100)
    assert again.stdout.spill_path is not None
    assert again.stdout.spill_path != path


def test_defaults_spills_into_a_private_per_process_directory() -> None:
    """defaults spills into a private per-process directory"""
    directory = default_spill_dir()
    assert "dsh-bash-" in os.path.basename(directory)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert default_spill_dir() == directory
    collector = OutputCollector(2, "stderr")
    collector.push(b"abcd")
    out = collector.finalize()
    assert out.spill_path is not None
    assert os.path.dirname(out.spill_path) == directory
    assert out.spill_path.endswith("-stderr.log")
    os.unlink(out.spill_path)


def test_killgroup_never_throws_even_for_eperm_style_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    """killGroup never throws, even for EPERM-style failures"""
    kill_group(os.getpid(), 99_999)  # a real EINVAL from the kernel

    def refuse(_pid: int, _sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "killpg", refuse)
    kill_group(12345, signal.SIGTERM)


async def test_honors_abortsignal_on_background_style_runs_no_timeout(tmp_path: Path, handshake: Handshake) -> None:
    """honors AbortSignal on background-style runs (no timeout)"""
    controller = AbortController()
    running = start(f"{handshake.connect}; echo $$ >&3; sleep 30", tmp_path, timeout_ms=0, signal=controller.signal)
    (pid,) = await handshake.pids()
    controller.abort()
    result = await running.done
    assert result.aborted is True
    assert result.timed_out is False
    assert result.timeout_ms == 0
    assert result.signal == "SIGTERM"
    assert not alive(pid)


# ------------------------------------------------------------------------ beyond the titles (issue acceptance)


async def test_a_50_mb_output_is_truncated_spilled_in_full_and_never_held_in_memory(tmp_path: Path) -> None:
    """a command printing 50 MB is truncated for the model, spilled in full, and never held in memory"""
    size = 50_000_000
    tracemalloc.start()
    try:
        running = start(f"head -c {size} /dev/zero | tr '\\0' a", tmp_path, max_output_bytes=64_000)
        result = await running.done
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0
    assert result.stdout.truncated is True
    assert 0 < len(result.stdout.text) <= 64_000
    assert set(result.stdout.text) == {"a"}
    assert running.stdout.retained_bytes == len(result.stdout.text)
    assert running.stdout.total_bytes == size
    assert result.stdout.spill_path is not None
    assert file_size(result.stdout.spill_path) == size
    assert peak < 8_000_000


async def test_non_utf8_output_is_decoded_with_replacement_characters(tmp_path: Path) -> None:
    """non-UTF-8 output never raises: bad bytes become U+FFFD"""
    result = await run(r"printf 'ok \xff\xfe caf\xc3\xa9'", tmp_path)
    assert result.stdout.text == "ok \ufffd\ufffd café"


async def test_a_command_reading_stdin_sees_end_of_file_at_once(tmp_path: Path) -> None:
    """a command reading stdin gets /dev/null (EOF at once), never a hang"""
    result = await run("cat; read line; echo read-status-$?", tmp_path)
    assert result.stdout.text == "read-status-1\n"
    assert result.exit_code == 0


async def test_a_nul_character_in_the_command_is_a_clear_spawn_error(tmp_path: Path) -> None:
    """a NUL character in the command is reported as a clear error"""
    with pytest.raises(HarnessError, match="remove NUL characters") as caught:
        await run("echo a\0b", tmp_path)
    assert caught.value.code == "INVALID_COMMAND"


async def test_a_missing_shell_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """a missing bash executable is an ENOENT spawn error that says to install bash"""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match="check that bash is installed and on PATH") as caught:
        await run("echo never", tmp_path)
    assert caught.value.code == "ENOENT"


async def test_a_signal_without_a_name_is_reported_by_number(tmp_path: Path) -> None:
    """a signal without a name (a real-time signal) is reported as SIG<n>"""
    result = await run("kill -35 $$", tmp_path)
    assert result.signal == "SIG35"
    assert signal_name(15) == "SIGTERM"


async def test_a_stop_sweeps_group_members_that_ignore_sigterm_and_left_the_pipes(
    tmp_path: Path, handshake: Handshake
) -> None:
    """after a stop, a group member that ignores SIGTERM and closed its pipes is SIGKILLed too"""
    running = start(
        f"(trap '' TERM; exec sleep 30) >/dev/null 2>&1 & {handshake.connect}; echo $$ $! >&3; sleep 30", tmp_path
    )
    leader, stubborn = await handshake.pids()
    running.kill()
    result = await running.done
    assert result.signal == "SIGTERM"
    assert not alive(leader)
    await exited(stubborn)


async def test_kill_before_the_spawn_completes_takes_effect_right_after_it(tmp_path: Path) -> None:
    """kill() before the spawn completes stops the command as soon as it exists"""
    running = start("sleep 30", tmp_path)
    running.kill()
    result = await running.done
    assert result.signal == "SIGTERM"
    assert running.closed


def test_the_group_dies_when_the_event_loop_shuts_down_mid_run(tmp_path: Path) -> None:
    """if the event loop shuts down mid-run, the process group is SIGKILLed and reaped, the spill closed"""
    seen: list[int] = []
    handles: list[RunningBash] = []

    async def abandon() -> None:
        handshake = await Handshake().start()
        running = start(
            f"seq 1 1000; sleep 30 & {handshake.connect}; echo $$ $! >&3; sleep 30", tmp_path, max_output_bytes=100
        )
        handles.append(running)
        try:
            seen.extend(await handshake.pids())
            assert await running.spawned() == seen[0]
        finally:
            await handshake.close()

    asyncio.run(abandon())
    assert len(seen) == 2
    assert not alive(seen[0])
    wait_exited(*seen)
    (running,) = handles
    assert running.closed
    assert running.stdout.spill_path is not None
    assert file_bytes(running.stdout.spill_path).decode() == "".join(f"{i}\n" for i in range(1, 1001))


def test_collector_rejects_a_non_positive_cap() -> None:
    """an OutputCollector needs a positive cap"""
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        OutputCollector(0, "stdout")


def test_read_from_holds_back_a_split_character_until_it_completes(tmp_path: Path) -> None:
    """read_from delivers a multi-byte character split across reads whole, once"""
    collector = OutputCollector(64, "stdout", str(tmp_path))
    collector.push(b"caf\xc3")
    first = collector.read_from(0)
    assert (first.text, first.next_offset) == ("caf", 3)
    collector.push(b"\xa9!\xe2\x82")
    second = collector.read_from(first.next_offset)
    assert (second.text, second.next_offset) == ("é!", 6)
    collector.finalize()
    last = collector.read_from(second.next_offset)
    assert (last.text, last.next_offset) == ("\ufffd", 8)


def test_an_unusable_spill_dir_keeps_the_tail_without_advertising_a_path(tmp_path: Path) -> None:
    """a spill file that cannot be created (a file where its directory should be) leaves the tail and no spill path"""
    (tmp_path / "taken").write_text("not a directory")
    collector = OutputCollector(4, "stdout", str(tmp_path / "taken" / "spill"))
    collector.push(b"abcdef")
    collector.push(b"gh")
    out = collector.finalize()
    assert (out.text, out.truncated, out.spill_path) == ("gh", True, None)


def test_a_missing_spill_dir_is_created_private_on_the_first_spill(tmp_path: Path) -> None:
    folder = tmp_path / "session" / "bash"
    collector = OutputCollector(4, "stdout", str(folder))
    collector.push(b"abc")
    assert not folder.exists()  # nothing spilled yet
    collector.push(b"defgh")
    out = collector.finalize()
    assert out.spill_path is not None
    assert Path(out.spill_path).parent == folder
    assert Path(out.spill_path).read_bytes() == b"abcdefgh"
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_failing_spill_write_abandons_and_removes_the_spill_file(tmp_path: Path, file_size_limit: Any) -> None:
    """a spill write that fails abandons the spill: the partial file is removed, the tail kept"""
    collector = OutputCollector(10, "stdout", str(tmp_path))
    collector.push(b"0123456789x")
    path = collector.spill_path
    assert path is not None
    file_size_limit(1000)
    collector.push(b"y" * 20_000)
    assert collector.spill_path is None
    assert not os.path.exists(path)
    collector.push(b"z" * 5)
    assert collector.finalize().text == "zzzzz"


def test_a_failing_flush_on_read_withholds_the_spill_path(tmp_path: Path, file_size_limit: Any) -> None:
    """read_from flushes the spill file first; if that fails, the path is withheld"""
    collector = OutputCollector(10, "stdout", str(tmp_path))
    collector.push(b"a" * 500)
    assert collector.spill_path is not None
    file_size_limit(100)
    read = collector.read_from(0)
    assert read.lossy is True
    assert read.spill_path is None
    assert read.text == "a" * 10


# ------------------------------------------------------------------------ (extra) how a command is launched and watched


def test_child_env_of_our_environment_is_a_fresh_copy_that_follows_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) child_env() reflects os.environ as it is now, and each call returns a dict the caller owns"""
    monkeypatch.setenv("LC_DSH_VISIBLE", "one")
    monkeypatch.setenv("DSH_TEST_TOKEN", "hush")
    first = child_env()
    assert first["LC_DSH_VISIBLE"] == "one"
    assert "DSH_TEST_TOKEN" not in first
    assert first["TERM"] == "dumb"
    first["LC_DSH_VISIBLE"] = "mutated by the caller"
    assert child_env()["LC_DSH_VISIBLE"] == "one"
    monkeypatch.setenv("LC_DSH_VISIBLE", "two")
    assert child_env()["LC_DSH_VISIBLE"] == "two"


async def test_a_child_env_follows_an_environ_that_is_a_plain_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) an os.environ without CPython's internal table is compared as a whole"""
    environ = {"PATH": os.environ["PATH"], "DSH_TEST_VISIBLE": "one", "API_KEY": "k"}
    monkeypatch.setattr(os, "environ", environ)
    launch = ChildEnv(EnvPolicy(["DSH_TEST_VISIBLE"]))
    assert launch.current()[0] == {"PATH": environ["PATH"], "DSH_TEST_VISIBLE": "one", **MODEL_FRIENDLY}
    environ["DSH_TEST_VISIBLE"] = "two"
    assert launch.current()[0]["DSH_TEST_VISIBLE"] == "two"
    result = await run('echo "$DSH_TEST_VISIBLE"', tmp_path, env=launch)
    assert result.stdout.text == "two\n"


async def test_a_command_sees_the_environment_as_it_is_when_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) a variable set between two commands reaches the second one"""
    monkeypatch.setenv("LC_DSH_VISIBLE", "before")
    assert (await run('echo "$LC_DSH_VISIBLE $0"', tmp_path)).stdout.text == "before bash\n"
    monkeypatch.setenv("LC_DSH_VISIBLE", "after")
    assert (await run('echo "$LC_DSH_VISIBLE"', tmp_path)).stdout.text == "after\n"


async def test_a_relative_path_entry_is_searched_from_the_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) bash is looked up on PATH the way the spawn does: a relative entry counts from the workdir"""
    fake = tmp_path / "relbin" / "bash"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho fake bash\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"relbin{os.pathsep}{os.environ['PATH']}")
    assert (await run("echo real bash", tmp_path)).stdout.text == "fake bash\n"
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert (await run("echo real bash", tmp_path)).stdout.text == "fake bash\n"


async def test_without_pidfds_a_worker_thread_waits_for_the_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) where os.pidfd_open is missing, the exit is awaited in a worker thread with the same result"""
    monkeypatch.delattr(os, "pidfd_open")
    result = await run("echo out; echo err >&2; exit 3", tmp_path)
    assert (result.stdout.text, result.stderr.text, result.exit_code, result.signal) == ("out\n", "err\n", 3, None)


async def test_a_pipe_that_fails_to_read_counts_as_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) a read error on a pipe ends that stream (and closes the pipe) instead of wedging the command"""
    spawned: list[Any] = []
    broken: list[int] = []
    real_spawn = process_module._spawn
    real_read = os.read

    def spawn(command: str, cwd: str, launch: Any, sandbox: Any = None) -> Any:
        spawned.append(real_spawn(command, cwd, launch, sandbox))
        broken.append(spawned[-1].stdout.fileno())
        return spawned[-1]

    def read(fd: int, size: int) -> bytes:
        if fd in broken:
            broken.remove(fd)  # once: the descriptor's number is reused after the pipe closes
            raise OSError(errno.EIO, "Input/output error")
        return real_read(fd, size)

    monkeypatch.setattr(process_module, "_spawn", spawn)
    monkeypatch.setattr(os, "read", read)
    result = await run("echo out; echo err >&2", tmp_path)
    assert (result.stdout.text, result.stderr.text) == ("", "err\n")
    assert spawned[0].stdout.closed


def test_a_capped_spill_file_keeps_the_beginning_and_says_so(tmp_path: Path) -> None:
    """(extra) max_spill_bytes: the spill file stops growing at the cap and the output reports it"""
    collector = OutputCollector(4, "stdout", str(tmp_path), max_spill_bytes=10)
    collector.push(b"012345")
    collector.push(b"6789abcdef")
    collector.push(b"ghij")
    out = collector.finalize()
    assert out.spill_path is not None
    assert file_bytes(out.spill_path) == b"0123456789"
    assert (out.text, out.truncated, out.spill_truncated) == ("ghij", True, True)
    roomy = OutputCollector(4, "stdout", str(tmp_path), max_spill_bytes=100)
    roomy.push(b"0123456789")
    assert roomy.finalize().spill_truncated is False
