"""Process lifetime: escaped grandchildren never hold a call, and nothing outlives dsh (issue: signals).

Every test drives real bash processes; pids come back over the handshake socket, and
every "it died" is awaited on a pidfd (the pytest timeout is the only safety net).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dsh.core.bash import BashExecRequest
from dsh.kernel import AbortController
from dsh.plugins.bash_local import Reaper, pipe_holders
from dsh.plugins.bash_local import watch as watch_module
from tests.plugins.bash_local.helpers import Handshake, LoadExecutor, alive, exited

STUBBORN_AND_ESCAPED = "(trap '' TERM; exec sleep 100) & a=$!; setsid sleep 100 & b=$!"
"""Two grandchildren: one in the group that ignores SIGTERM, one that left it with setsid (both hold the pipes)."""


async def test_a_background_job_does_not_hold_the_call_and_dies_at_dispose(load: LoadExecutor) -> None:
    """`cmd &` returns when bash exits (plus the pipe grace); what it left running is killed at disposal"""
    bash, fiber = await load()
    result = await bash.run(bash.resolve(BashExecRequest(command="sleep 100 & echo $!")))
    (pid,) = map(int, result.stdout.text.split())
    assert result.exit_code == 0
    assert alive(pid)
    assert bash.owned_groups == 1
    await fiber.dispose()
    await exited(pid)


async def test_cancel_returns_without_waiting_for_stubborn_or_escaped_grandchildren(
    load: LoadExecutor, handshake: Handshake
) -> None:
    """an abort returns once bash is gone; the TERM-ignoring and the setsid grandchild are killed with it"""
    bash, fiber = await load()
    controller = AbortController()
    command = f"{STUBBORN_AND_ESCAPED}; {handshake.connect}; echo $$ $a $b >&3; sleep 100"
    running = asyncio.ensure_future(bash.run(bash.resolve(BashExecRequest(command, signal=controller.signal))))
    pids = await handshake.pids()
    controller.abort()
    result = await running
    assert result.aborted is True
    await exited(*pids)
    assert bash.owned_groups == 0
    await fiber.dispose()


async def test_a_finished_background_job_is_forgotten_by_the_next_command(
    load: LoadExecutor, handshake: Handshake
) -> None:
    """a group left behind is owned until it is gone; the next command notices and forgets it"""
    bash, _fiber = await load()
    command = f"{handshake.connect}; (read -r _ <&3; echo late) & echo $! >&3"
    result = await bash.run(bash.resolve(BashExecRequest(command)))
    (pid,) = await handshake.pids()
    assert (result.exit_code, result.stdout.text) == (0, "")  # what comes after the grace is not the result's
    assert bash.owned_groups == 1
    await handshake.release()
    await exited(pid)
    while bash.owned_groups:  # the group is gone once init has reaped its last (zombie) member
        await bash.run(bash.resolve(BashExecRequest("true")))
    assert bash.owned_groups == 0


async def test_kill_all_kills_every_group_at_once(load: LoadExecutor, handshake: Handshake) -> None:
    """kill_all(): foreground, background and left-behind groups all die, escaped holders included"""
    bash, _fiber = await load()
    left = await bash.run(bash.resolve(BashExecRequest("sleep 100 & echo $!")))
    (left_pid,) = map(int, left.stdout.text.split())
    task = bash.start(
        bash.resolve(BashExecRequest(f"{STUBBORN_AND_ESCAPED}; {handshake.connect}; echo $$ $a $b >&3; wait"))
    )
    background = await handshake.pids()
    foreground = asyncio.ensure_future(
        bash.run(bash.resolve(BashExecRequest(f"{handshake.connect}; echo $$ >&3; sleep 100")))
    )
    front = await handshake.pids()
    assert bash.kill_all() == 3
    assert (await foreground).signal == "SIGKILL"
    await task.done
    assert (task.status, task.signal) == ("killed", "SIGKILL")
    await exited(left_pid, *background, *front)
    assert bash.kill_all() == 0


DSH_STAND_IN = """
import asyncio, sys
from dsh.core.bash import BASH, BashExecRequest
from dsh.kernel import Context, unwrap
from dsh.plugins.bash_local import LocalBashExecutor

async def main():
    ctx = Context()
    await ctx.plugin(LocalBashExecutor)
    bash = unwrap(ctx[BASH])
    command = sys.argv[1].replace("SPILL_DIR", bash.spill_dir)
    bash.start(bash.resolve(BashExecRequest(command)))
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_commands_die_with_a_sigkilled_dsh(tmp_path: Path, handshake: Handshake) -> None:
    """SIGKILL of the dsh process: the reaper kills the group, a TERM-ignoring member and a setsid escapee,
    and removes the spill directory"""
    command = f"{STUBBORN_AND_ESCAPED}; {handshake.connect}; echo $$ $a $b >&3; echo SPILL_DIR >&3; wait"
    stand_in = await asyncio.create_subprocess_exec(sys.executable, "-c", DSH_STAND_IN, command, cwd=tmp_path)
    try:
        pids = await handshake.pids()
        spill_dir = (await handshake.next_line()).strip()
        assert all(alive(pid) for pid in pids)
        assert os.path.isdir(spill_dir)
        stand_in.send_signal(signal.SIGKILL)
        await stand_in.wait()
        await exited(*pids)
        while os.path.isdir(spill_dir):  # the helper removes it after the kills
            await asyncio.sleep(0.01)
    finally:
        if stand_in.returncode is None:  # pragma: no cover - only when the test failed before the kill
            stand_in.kill()
            await stand_in.wait()


async def test_the_reaper_survives_a_dead_helper_and_closes_without_one() -> None:
    """registration is best effort: a helper that died makes later registrations no-ops"""
    idle = Reaper()
    idle.unregister(1)
    idle.close()
    assert idle.pid is None
    reaper = Reaper()
    reaper.register(2**22 + 1, ())
    assert reaper.pid is not None
    os.kill(reaper.pid, signal.SIGKILL)
    await exited(reaper.pid)
    for _ in range(3):
        reaper.register(2**22 + 2, (1,))
    reaper.unregister(2**22 + 2)
    reaper.close()
    reaper.close()


def test_pipe_holders_finds_the_processes_holding_a_pipe() -> None:
    """pipe_holders reads /proc: it finds a child that holds the write end, never ourselves"""
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen(["sleep", "100"], stdout=write_end)
        inode = os.fstat(read_end).st_ino
        assert pipe_holders((inode,)) == {child.pid}
        assert pipe_holders(()) == set()
        child.kill()
        child.wait()
        assert pipe_holders((inode,)) == set()
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_unreadable_process_is_skipped() -> None:
    """a process whose descriptors cannot be listed (another user's, or gone) holds nothing we know of"""
    assert watch_module._holds("/proc/0/fd", {"pipe:[1]"}) is False


async def test_kill_all_before_the_spawn_stops_the_command_once_it_exists(load: LoadExecutor) -> None:
    """kill_all() right after a launch, before the spawn ran: the command is stopped as soon as it exists"""
    bash, _fiber = await load()
    task = bash.start(bash.resolve(BashExecRequest("sleep 100")))
    assert bash.kill_all() == 1
    await task.done
    assert (task.status, task.signal) == ("killed", "SIGTERM")


def test_a_reaper_that_cannot_start_leaves_commands_unwatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """no helper (no interpreter to run it): registration quietly does nothing"""
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    reaper = Reaper()
    reaper.register(2**22 + 3, ())
    assert reaper.pid is None
    reaper.close()


async def test_disposal_kills_every_group_it_owns_and_the_watchdog(load: LoadExecutor, handshake: Handshake) -> None:
    """disposing the executor: running tasks, their stubborn and escaped grandchildren, and jobs that finished
    commands left behind without pipes all die; the watchdog exits too"""
    bash, fiber = await load()
    left = await bash.run(bash.resolve(BashExecRequest("sleep 100 >/dev/null 2>&1 & echo $!")))
    (left_pid,) = map(int, left.stdout.text.split())
    task = bash.start(
        bash.resolve(BashExecRequest(f"{STUBBORN_AND_ESCAPED}; {handshake.connect}; echo $$ $a $b >&3; wait"))
    )
    background = await handshake.pids()
    watchdog = bash.reaper.pid
    assert watchdog is not None
    assert bash.owned_groups == 2
    await fiber.dispose()
    await exited(left_pid, *background, watchdog)
    assert task.status == "killed"


async def test_a_daemonized_escapee_without_pipes_dies_at_disposal(load: LoadExecutor) -> None:
    """`setsid cmd >/dev/null &` leaves neither the group nor the pipes; the owner's marker still finds it"""
    bash, fiber = await load()
    result = await bash.run(bash.resolve(BashExecRequest("setsid sleep 100 >/dev/null 2>&1 </dev/null & echo $!")))
    (pid,) = map(int, result.stdout.text.split())
    assert alive(pid)
    await fiber.dispose()
    await exited(pid)
