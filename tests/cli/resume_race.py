"""Race two `dsh ... run --resume ID` processes, REPS times; one JSON line per race on stdout.

Usage: ``python resume_race.py REPS MARKER DSH_ARGS...`` (the arguments of ``dsh``
before and including ``run --resume ID PROMPT``). The driver imports dsh once, then
forks two real processes per race that wait on one pipe and are released together, so a
race costs a run rather than two interpreter starts. The prompt is expected to hold
its session until the file ``MARKER`` exists: the driver creates it once the first
child has exited (the refused one, when the lock works) or after a bounded wait, so the
two runs always overlap however loaded the machine is. Each line is a list of two
``{"pid", "status", "stderr"}`` objects.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import dsh.cli.agent
import dsh.cli.run  # noqa: F401 - imported before forking, so the children start warm
from dsh.cli.main import main


def _child(gate: int, err: int, argv: list[str]) -> None:  # pragma: no cover - runs in a forked child
    os.read(gate, 1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(err, 2)
    try:
        status = main(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


FIRST_EXIT_WAIT = 60.0
"""Seconds the driver waits for one child to exit before releasing the holder anyway."""


def _first_exit(pids: list[int]) -> dict[int, int]:
    """Reap whichever child exits first (waiting at most FIRST_EXIT_WAIT): ``{pid: status}``, or empty."""
    deadline = time.monotonic() + FIRST_EXIT_WAIT
    while time.monotonic() < deadline:
        for pid in pids:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return {pid: status}
        time.sleep(0.01)
    return {}


def race(marker: Path, argv: list[str]) -> list[dict[str, object]]:
    marker.unlink(missing_ok=True)
    gate_read, gate_write = os.pipe()
    children: list[tuple[int, object]] = []
    for _ in range(2):
        err = tempfile.TemporaryFile()  # noqa: SIM115 - the child writes it, the parent reads and closes it
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(gate_write)
            _child(gate_read, err.fileno(), argv)
        children.append((pid, err))
    os.close(gate_read)
    os.write(gate_write, b"go")
    os.close(gate_write)
    statuses = _first_exit([pid for pid, _ in children])
    marker.touch()
    results: list[dict[str, object]] = []
    for pid, err in children:
        status = statuses[pid] if pid in statuses else os.waitpid(pid, 0)[1]
        err.seek(0)  # type: ignore[attr-defined]
        text = err.read().decode("utf-8", "replace")  # type: ignore[attr-defined]
        err.close()  # type: ignore[attr-defined]
        results.append({"pid": pid, "status": os.waitstatus_to_exitcode(status), "stderr": text})
    return results


def run(reps: int, marker: Path, argv: list[str]) -> None:
    for _ in range(reps):
        print(json.dumps(race(marker, argv)), flush=True)


if __name__ == "__main__":
    run(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
