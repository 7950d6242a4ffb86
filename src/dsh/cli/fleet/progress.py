"""How far a batch is, on stderr: a progress bar on a terminal, a line per tenth elsewhere.

:class:`BatchProgress` counts finished tasks and the failed ones among them (any end
other than ``completed``, or an ``error``). On a terminal it draws a ``rich`` bar
(rich is already a dependency of the terminal view); on a pipe or a file, where a
redrawn bar would be noise, it writes one line each time another tenth of the tasks
has finished, and always the last one. Worker and death notices are lines either way.
"""

from __future__ import annotations

from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsh.cli.fleet.tasks import TaskResult
from dsh.cli.fleet.worker import WorkerInfo


def failed(result: TaskResult) -> bool:
    """Whether ``result`` is anything but a completed turn."""
    return bool(result.error) or result.end_reason != "completed"


class BatchProgress:
    """The progress of ``total`` tasks on ``stream`` (see the module docstring); a context manager."""

    def __init__(self, total: int, stream: TextIO, *, terminal: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.stream = stream
        self._terminal = stream.isatty() if terminal is None else terminal
        self._next_line = 1
        self._bar: Progress | None = None
        if self._terminal:
            console = Console(file=stream, force_terminal=True)
            self._bar = Progress(
                TextColumn("dsh batch"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                console=console,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._bar.add_task("batch", total=total, failed=0)

    def __enter__(self) -> BatchProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def say(self, message: str) -> None:
        """One line, above the bar on a terminal."""
        if self._bar is not None:
            self._bar.console.print(f"dsh: {message}", markup=False, highlight=False)
        else:
            print(f"dsh: {message}", file=self.stream, flush=True)

    def worker(self, number: int, info: WorkerInfo) -> None:
        """Worker ``number`` is up."""
        self.say(f"worker {number}: pid {info.pid} on {info.host}")

    def death(self, number: int, lost: int) -> None:
        """Worker ``number`` died with ``lost`` tasks in flight."""
        self.say(f"worker {number} died; resuming its {lost} task(s) on another worker")

    def result(self, result: TaskResult) -> None:
        """One more task finished."""
        self.done += 1
        self.failed += failed(result)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)
        elif self.done * 10 >= self._next_line * self.total or self.done == self.total:
            self._next_line = self.done * 10 // self.total + 1
            self.say(f"batch: {self.done}/{self.total} done, {self.failed} failed")
