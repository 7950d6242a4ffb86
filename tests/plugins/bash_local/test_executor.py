"""``LocalBashExecutor`` (SPEC §9b, ``executor.spec.ts``), plus config, unload and disposal extras."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from pathlib import Path

import pytest

from dsh.core.bash import BASH, BashExecRequest, BashExecSpec, BashTask
from dsh.core.errors import HarnessError
from dsh.kernel import AbortController, ConfigError, Context, PluginSpec, unwrap
from dsh.plugins.bash_local import LocalBashConfig, LocalBashExecutor, is_positive_finite
from tests.plugins.bash_local.helpers import Handshake, LoadExecutor, alive, exited, file_bytes, real, until


def spec(command: str, workdir: str, timeout_ms: float = 5000, signal: object = None) -> BashExecSpec:
    return BashExecSpec(command=command, workdir=workdir, timeout_ms=timeout_ms, signal=signal)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ describe LocalBashExecutor.run


async def test_resolves_with_output_and_the_effective_timeout(load: LoadExecutor) -> None:
    """resolves with output and the effective timeout"""
    bash, _fiber = await load()
    result = await bash.run(bash.resolve(BashExecRequest(command="echo hi", timeout_ms=5000)))
    assert result.stdout.text == "hi\n"
    assert result.exit_code == 0
    assert result.timeout_ms == 5000


async def test_uses_config_cwd_overridable_per_call(load: LoadExecutor, tmp_path: Path) -> None:
    """uses config cwd, overridable per call"""
    configured = tmp_path / "configured"
    other = tmp_path / "other"
    configured.mkdir()
    other.mkdir()
    bash, _fiber = await load({"cwd": str(configured)})
    assert bash.resolve(BashExecRequest(command="pwd")).workdir == str(configured)
    first = await bash.run(bash.resolve(BashExecRequest(command="pwd -P")))
    assert first.stdout.text == f"{real(configured)}\n"
    second = await bash.run(bash.resolve(BashExecRequest(command="pwd -P", workdir=str(other))))
    assert second.stdout.text == f"{real(other)}\n"


async def test_defaults_cwd_to_process_cwd(load: LoadExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """defaults cwd to process.cwd()"""
    bash, _fiber = await load()
    monkeypatch.chdir(tmp_path)
    resolved = bash.resolve(BashExecRequest(command="pwd -P"))
    assert resolved.workdir == os.getcwd()
    result = await bash.run(resolved)
    assert result.stdout.text == f"{real(tmp_path)}\n"


async def test_caps_per_call_timeouts_at_maxtimeoutms(load: LoadExecutor) -> None:
    """caps per-call timeouts at maxTimeoutMs"""
    bash, _fiber = await load({"maxTimeoutMs": 2000})
    resolved = bash.resolve(BashExecRequest(command="true", timeout_ms=99999))
    assert resolved.timeout_ms == 2000
    assert (await bash.run(resolved)).timeout_ms == 2000
    assert bash.resolve(BashExecRequest(command="true")).timeout_ms == 2000


@pytest.mark.parametrize("name", ["timeoutMs", "maxTimeoutMs", "maxOutputBytes"])
@pytest.mark.parametrize("value", [float("nan"), 0, -1, float("inf"), True, "100"])
async def test_rejects_invalid_numeric_config_and_timeout_overrides(root: Context, name: str, value: object) -> None:
    """rejects invalid numeric config and timeout overrides"""
    with pytest.raises(ConfigError, match=f"bash-local: {name} must be a positive finite number"):
        await root.plugin(LocalBashExecutor, {name: value})
    assert root.get(BASH) is None


@pytest.mark.parametrize("value", [float("nan"), -1, 0, float("-inf"), float("inf")])
async def test_rejects_invalid_request_timeouts(load: LoadExecutor, value: float) -> None:
    """rejects invalid numeric config and timeout overrides (the request.timeoutMs half)"""
    bash, _fiber = await load()
    with pytest.raises(
        HarnessError, match=r"bash-local: request\.timeoutMs must be a positive finite number"
    ) as caught:
        bash.resolve(BashExecRequest(command="true", timeout_ms=value))
    assert caught.value.code == "INVALID_TIMEOUT"


async def test_per_call_timeout_takes_precedence_under_the_cap_and_kills_on_expiry(load: LoadExecutor) -> None:
    """per-call timeout takes precedence under the cap and kills on expiry"""
    bash, _fiber = await load({"timeoutMs": 60_000})
    result = await bash.run(bash.resolve(BashExecRequest(command="sleep 30", timeout_ms=100)))
    assert result.timed_out is True
    assert result.timeout_ms == 100
    assert result.signal == "SIGTERM"


async def test_propagates_abort_signals(load: LoadExecutor, handshake: Handshake) -> None:
    """propagates abort signals"""
    bash, _fiber = await load()
    controller = AbortController()
    command = f"{handshake.connect}; echo $$ >&3; sleep 30"
    running = asyncio.ensure_future(bash.run(bash.resolve(BashExecRequest(command=command, signal=controller.signal))))
    (pid,) = await handshake.pids()
    controller.abort("user pressed stop")
    result = await running
    assert result.aborted is True
    assert result.signal == "SIGTERM"
    assert not alive(pid)


async def test_rejects_on_spawn_failure_bad_workdir(load: LoadExecutor, tmp_path: Path) -> None:
    """rejects on spawn failure (bad workdir)"""
    bash, _fiber = await load()
    with pytest.raises(HarnessError, match="ENOENT"):
        await bash.run(bash.resolve(BashExecRequest(command="true", workdir=str(tmp_path / "missing"))))


# ------------------------------------------------------------------------ describe background tasks


async def test_start_returns_immediately_with_a_registered_running_task(load: LoadExecutor, tmp_path: Path) -> None:
    """start returns immediately with a registered running task"""
    bash, _fiber = await load()
    task = bash.start(spec("true", str(tmp_path)))
    assert (task.status, task.exit_code) == ("running", None)
    assert bash.get(task.id) is task
    assert bash.list() == [task]
    await task.done
    assert task.status == "completed"
    assert task.exit_code == 0
    assert task.signal is None


async def test_assigns_sequential_ids(load: LoadExecutor, tmp_path: Path) -> None:
    """assigns sequential ids"""
    bash, _fiber = await load()
    first = bash.start(spec("true", str(tmp_path)))
    second = bash.start(spec("true", str(tmp_path)))
    assert (first.id, second.id) == ("bash-1", "bash-2")
    assert bash.list() == [first, second]
    await asyncio.gather(first.done, second.done)


async def test_readoutput_returns_increments_without_re_delivery(load: LoadExecutor, handshake: Handshake) -> None:
    """readOutput returns increments without re-delivery"""
    bash, _fiber = await load()
    task = bash.start(spec(f"echo first; {handshake.connect}; echo ready >&3; read -r _ <&3; echo second", "/"))
    await handshake.line()
    process = bash.process(task.id)
    assert process is not None
    await until(lambda: process.stdout.total_bytes == len("first\n"))
    assert bash.read_output(task.id).delta == "first\n"
    await handshake.release()
    await task.done
    assert bash.read_output(task.id).delta == "second\n"
    read = bash.read_output(task.id)
    assert read.delta == ""
    assert read.lossy is False
    assert read.task is task


async def test_readoutput_marks_stderr_sections(load: LoadExecutor) -> None:
    """readOutput marks stderr sections"""
    bash, _fiber = await load()
    task = bash.start(spec("echo out; echo err >&2", "/"))
    await task.done
    assert bash.read_output(task.id).delta == "out\n[stderr]\nerr\n"


async def test_readoutput_reports_stderr_only_deltas_without_a_leading_newline(load: LoadExecutor) -> None:
    """readOutput reports stderr-only deltas without a leading newline"""
    bash, _fiber = await load()
    task = bash.start(spec("echo err >&2", "/"))
    await task.done
    assert bash.read_output(task.id).delta == "[stderr]\nerr\n"


async def test_readoutput_flags_lossy_reads_and_reports_spill_paths(load: LoadExecutor) -> None:
    """readOutput flags lossy reads and reports spill paths"""
    bash, _fiber = await load({"maxOutputBytes": 100})
    task = bash.start(spec("for i in $(seq 1 100); do echo line-$i; done", "/"))
    await task.done
    read = bash.read_output(task.id)
    assert read.lossy is True
    assert "line-100" in read.delta
    assert "line-1\n" not in read.delta
    assert read.stdout_spill_path is not None
    assert read.stderr_spill_path is None
    assert file_bytes(read.stdout_spill_path).decode().startswith("line-1\nline-2\n")
    again = bash.read_output(task.id)
    assert (again.delta, again.lossy) == ("", False)


async def test_readoutput_throws_for_unknown_ids(load: LoadExecutor) -> None:
    """readOutput throws for unknown ids"""
    bash, _fiber = await load()
    with pytest.raises(HarnessError, match='unknown bash task "nope"') as caught:
        bash.read_output("nope")
    assert caught.value.code == "UNKNOWN_TASK"


async def test_kill_terminates_the_process_group_and_reports_status_killed(
    load: LoadExecutor, handshake: Handshake
) -> None:
    """kill terminates the process group and reports status killed"""
    bash, _fiber = await load()
    task = bash.start(spec(f"sleep 30 & {handshake.connect}; echo $$ $! >&3; wait", "/"))
    pids = await handshake.pids()
    assert bash.kill(task.id) is True
    assert task.status == "killed"
    await task.done
    assert task.status == "killed"
    assert task.signal == "SIGTERM"
    assert task.exit_code is None
    assert not alive(pids[0])  # the leader is our child: reaped before close
    await exited(*pids)  # a grandchild may still be finishing its exit


async def test_kill_returns_false_for_finished_tasks_and_throws_for_unknown_ids(load: LoadExecutor) -> None:
    """kill returns false for finished tasks and throws for unknown ids"""
    bash, _fiber = await load()
    task = bash.start(spec("true", "/"))
    await task.done
    assert bash.kill(task.id) is False
    assert task.status == "completed"
    with pytest.raises(HarnessError, match='unknown bash task "nope"'):
        bash.kill("nope")


async def test_notifies_ontaskdone_listeners_on_completion(load: LoadExecutor) -> None:
    """notifies onTaskDone listeners on completion"""
    bash, _fiber = await load()
    seen: list[list[str]] = []
    bash.on_task_done(lambda task: seen.append([task.id, task.status]))
    task = bash.start(spec("true", "/"))
    await task.done
    assert seen == [[task.id, "completed"]]


async def test_notifies_ontaskdone_for_killed_tasks_too(load: LoadExecutor) -> None:
    """notifies onTaskDone for killed tasks too"""
    bash, _fiber = await load()
    seen: list[list[str]] = []
    bash.on_task_done(lambda task: seen.append([task.id, task.status]))
    task = bash.start(spec("sleep 30", "/"))
    bash.kill(task.id)
    await task.done
    assert seen == [[task.id, "killed"]]


async def test_marks_tasks_killed_when_the_background_spawn_itself_fails(load: LoadExecutor, tmp_path: Path) -> None:
    """marks tasks killed when the background spawn itself fails"""
    bash, _fiber = await load()
    seen: list[str] = []
    bash.on_task_done(lambda task: seen.append(task.status))
    task = bash.start(spec("true", str(tmp_path / "missing")))
    assert [task.status] == ["running"]
    await task.done
    assert task.status == "killed"
    assert (task.exit_code, task.signal) == (None, None)
    assert seen == ["killed"]
    delta = bash.read_output(task.id).delta
    assert delta.startswith("[stderr]\nspawn failed: HarnessError: spawn bash ENOENT")


async def test_readoutput_adds_a_separator_only_when_stdout_lacks_a_trailing_newline(load: LoadExecutor) -> None:
    """readOutput adds a separator only when stdout lacks a trailing newline"""
    bash, _fiber = await load()
    task = bash.start(spec("printf out; echo err >&2", "/"))
    await task.done
    assert bash.read_output(task.id).delta == "out\n[stderr]\nerr\n"


async def test_readoutput_reports_stderr_spill_paths(load: LoadExecutor) -> None:
    """readOutput reports stderr spill paths"""
    bash, _fiber = await load({"maxOutputBytes": 50})
    task = bash.start(spec("for i in $(seq 1 50); do echo err-$i >&2; done", "/"))
    await task.done
    read = bash.read_output(task.id)
    assert read.lossy is True
    assert read.stdout_spill_path is None
    assert read.stderr_spill_path is not None
    assert read.stderr_spill_path.endswith("-stderr.log")
    assert file_bytes(read.stderr_spill_path).decode().startswith("err-1\n")


async def test_disposing_with_already_finished_tasks_only_kills_the_running_ones(load: LoadExecutor) -> None:
    """disposing with already-finished tasks only kills the running ones"""
    bash, fiber = await load()
    finished = bash.start(spec("true", "/"))
    await finished.done
    running = bash.start(spec("sleep 30", "/"))
    await fiber.dispose()
    assert finished.status == "completed"
    assert running.status == "killed"
    assert running.done.done()
    assert bash.list() == []


async def test_disposing_the_executor_fiber_kills_running_tasks_no_orphans(
    load: LoadExecutor, handshake: Handshake
) -> None:
    """disposing the executor fiber kills running tasks (no orphans)"""
    bash, fiber = await load()
    seen: list[str] = []
    bash.on_task_done(lambda task: seen.append(task.id))
    task = bash.start(spec(f"sleep 30 & {handshake.connect}; echo $$ $! >&3; sleep 30", "/"))
    pids = await handshake.pids()
    await fiber.dispose()
    assert not alive(pids[0])  # the leader is our child: reaped before close
    await exited(*pids)  # a grandchild may still be finishing its exit
    assert task.status == "killed"
    assert task.done.done()
    assert seen == []


# ------------------------------------------------------------------------ describe review fixes: lifecycle hardening


async def test_start_honors_a_pre_aborted_or_later_aborted_abortsignal(load: LoadExecutor) -> None:
    """start honors a pre-aborted or later-aborted AbortSignal"""
    bash, _fiber = await load()
    controller = AbortController()
    task = bash.start(spec("sleep 30", "/", signal=controller.signal))
    controller.abort()
    await task.done
    assert task.status == "killed"
    assert task.signal == "SIGTERM"
    with pytest.raises(HarnessError, match="aborted before spawn"):
        bash.start(spec("sleep 30", "/", signal=controller.signal))
    assert bash.list() == [task]


async def test_a_throwing_ontaskdone_listener_does_not_reject_task_done_or_starve_later_listeners(
    load: LoadExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    """a throwing onTaskDone listener does not reject task.done or starve later listeners"""
    bash, _fiber = await load()
    seen: list[str] = []

    def explode(_task: BashTask) -> None:
        raise RuntimeError("listener exploded")

    bash.on_task_done(explode)
    bash.on_task_done(lambda task: seen.append(task.id))
    task = bash.start(spec("true", "/"))
    with caplog.at_level(logging.ERROR):
        await task.done
    assert seen == [task.id]
    assert "bash onTaskDone listener threw" in caplog.text


async def test_dispose_awaits_a_term_trapping_process_sigkill_escalation_included(
    load: LoadExecutor, handshake: Handshake
) -> None:
    """dispose AWAITS a TERM-trapping process (SIGKILL escalation included)"""
    bash, fiber = await load(grace_ms=100)
    task = bash.start(spec(f"trap '' TERM; {handshake.connect}; echo $$ >&3; sleep 30", "/"))
    (pid,) = await handshake.pids()
    await fiber.dispose()
    assert not alive(pid)
    assert task.status == "killed"


# ------------------------------------------------------------------------ beyond the titles


async def test_disposal_also_kills_foreground_runs_in_flight(load: LoadExecutor, handshake: Handshake) -> None:
    """disposing the executor kills foreground runs in flight too (no process survives an unload)"""
    bash, fiber = await load()
    running = asyncio.ensure_future(
        bash.run(spec(f"sleep 30 & {handshake.connect}; echo $$ $! >&3; sleep 30", "/", timeout_ms=60_000))
    )
    pids = await handshake.pids()
    await fiber.dispose()
    assert not alive(pids[0])  # the leader is our child: reaped before close
    await exited(*pids)  # a grandchild may still be finishing its exit
    result = await running
    assert result.signal == "SIGTERM"
    assert result.aborted is False


async def test_cancelling_a_foreground_caller_kills_its_command(load: LoadExecutor, handshake: Handshake) -> None:
    """cancelling the task awaiting run() kills the command's whole group"""
    bash, _fiber = await load()
    running = asyncio.ensure_future(bash.run(spec(f"sleep 30 & {handshake.connect}; echo $$ $! >&3; wait", "/")))
    pids = await handshake.pids()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await exited(*pids)


async def test_a_disposed_executor_refuses_new_commands(load: LoadExecutor) -> None:
    """a stale reference to a disposed executor refuses new commands with a fix"""
    bash, fiber = await load()
    await fiber.dispose()
    with pytest.raises(HarnessError, match="load the bash-local plugin again") as caught:
        bash.start(spec("true", "/"))
    assert caught.value.code == "DISPOSED"
    with pytest.raises(HarnessError, match="is disposed"):
        await bash.run(spec("true", "/"))


async def test_unload_leaves_no_listener_task_or_process_behind(root: Context, load: LoadExecutor) -> None:
    """unload: a consumer's listeners go with its fiber; the executor's tasks go with the executor"""
    bash, fiber = await load()
    seen: list[str] = []

    def apply(ctx: Context, _config: object) -> None:
        ctx[BASH].on_task_done(lambda task: seen.append(task.id))

    consumer = await root.plugin(PluginSpec(name="consumer", apply=apply, inject=[BASH.name]))
    assert bash.task_done_listener_count == 1
    await consumer.dispose()
    assert bash.task_done_listener_count == 0
    task = bash.start(spec("sleep 30", "/"))
    await fiber.dispose()
    assert bash.list() == []
    assert bash.get(task.id) is None
    assert bash.process(task.id) is None
    assert root.get(BASH) is None
    assert seen == []


async def test_the_bash_key_is_reusable_after_a_rejected_config(root: Context) -> None:
    """rollback: a rejected config leaves nothing behind and "bash" can be provided again"""
    with pytest.raises(ConfigError):
        await root.plugin(LocalBashExecutor, {"timeoutMs": -5})
    assert root.get(BASH) is None
    await root.plugin(LocalBashExecutor, {"timeoutMs": 5})
    assert isinstance(unwrap(root[BASH]), LocalBashExecutor)


async def test_config_accepts_snake_case_and_rejects_unknown_keys(root: Context) -> None:
    """config: camelCase or snake_case keys; an unknown key is rejected by name"""
    config = LocalBashConfig.model_validate({"timeout_ms": 10, "maxOutputBytes": 0.5})
    assert (config.timeout_ms, config.max_timeout_ms, config.max_output_bytes) == (10, 600_000, 0.5)
    with pytest.raises(ConfigError, match="timeoutMS"):
        await root.plugin(LocalBashExecutor, {"timeoutMS": 10})
    await root.plugin(LocalBashExecutor, {"maxOutputBytes": 0.5})
    executor = unwrap(root[BASH])
    assert isinstance(executor, LocalBashExecutor)
    resolved = executor.resolve(BashExecRequest(command="echo", timeout_ms=1.5))
    assert resolved.timeout_ms == 1.5
    assert executor.resolve(BashExecRequest(command="echo")).timeout_ms == 120000
    assert isinstance(executor.resolve(BashExecRequest(command="echo")).timeout_ms, int)


def test_is_positive_finite() -> None:
    """is_positive_finite accepts finite positive ints and floats only"""
    assert is_positive_finite(1)
    assert is_positive_finite(0.25)
    for value in (0, -1, float("nan"), float("inf"), True, "1", None):
        assert not is_positive_finite(value)


async def test_config_env_allow_and_env_reach_commands_and_nothing_else(
    load: LoadExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config: envAllow lets named (or PREFIX*) variables through, env sets fixed ones; the rest stays out"""
    monkeypatch.setenv("DSH_PASSED", "p")
    monkeypatch.setenv("DSH_GROUP_ONE", "g")
    monkeypatch.setenv("DSH_HIDDEN", "h")
    bash, _fiber = await load({"envAllow": ["DSH_PASSED", "DSH_GROUP_*"], "env": {"DSH_FIXED": "f"}})
    command = 'echo "${DSH_PASSED:-}|${DSH_GROUP_ONE:-}|${DSH_FIXED:-}|${DSH_HIDDEN:-absent}"'
    result = await bash.run(bash.resolve(BashExecRequest(command=command)))
    assert result.stdout.text == "p|g|f|absent\n"


async def test_spills_go_to_a_private_directory_that_disposal_removes(root: Context) -> None:
    """the executor spills into its own 0700 directory (capped by maxSpillBytes) and removes it when unloaded"""
    fiber = await root.plugin(LocalBashExecutor, {"maxOutputBytes": 10, "maxSpillBytes": 100})
    bash = unwrap(root[BASH])
    assert isinstance(bash, LocalBashExecutor)
    assert stat.S_IMODE(os.stat(bash.spill_dir).st_mode) == 0o700
    result = await bash.run(bash.resolve(BashExecRequest(command="printf 'z%.0s' $(seq 1 300)")))
    path = result.stdout.spill_path
    assert path is not None
    assert os.path.dirname(path) == bash.spill_dir
    assert (os.path.getsize(path), result.stdout.spill_truncated) == (100, True)
    await fiber.dispose()
    assert not os.path.exists(bash.spill_dir)
