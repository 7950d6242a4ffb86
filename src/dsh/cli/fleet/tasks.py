"""The values of ``dsh batch``: a task file's lines in, one result line per task out.

A task file is JSONL, one :class:`BatchTask` a line (blank lines skipped). It is read
and checked whole by :func:`read_tasks` before anything runs: every bad line is
reported with its number, so a typo on line 40,000 costs nothing. Results are
:class:`TaskResult` values, one JSONL line each, written as tasks finish.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from msgspec import UNSET, Struct, UnsetType

from dsh.cli.errors import CliError
from dsh.core.usage import TokenTotals

MAX_REPORTED = 20
"""How many bad lines a refused task file lists (then how many more there are)."""


class BatchTask(Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """One line of a task file.

    ``prompt`` starts the task's one turn in a new session whose workspace (``cwd``) is
    ``workspace`` (an existing directory, relative to the task file's folder unless
    absolute; workers must see it at the same path). ``id`` names the task in the
    results (default ``line-N``); ``model`` is asked instead of the command's model (the
    tree must serve it); ``max_steps`` caps the turn's steps, ``max_turns`` the turns the
    agent may take (counting those a plugin starts after the prompt's).
    """

    prompt: str
    workspace: str
    id: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    max_steps: int | UnsetType = UNSET
    max_turns: int | UnsetType = UNSET


class TaskResult(Struct, frozen=True, kw_only=True, rename="camel"):
    """One line of the results file: how a task ended.

    ``end_reason`` is the kind of the prompt's turn-end reason (``completed``,
    ``max-steps``, ``error``, ...; absent when the turn never ended), ``usage`` and
    ``cost`` sum the session's model usage (``cost`` absent without a price for the
    model), ``duration_ms`` is wall time over every attempt, ``attempts`` counts the
    workers that ran it (more than 1 after a worker died), ``error`` says why a task
    has no outcome (its session could not be created or resumed).
    """

    id: str
    session_id: str
    end_reason: str | UnsetType = UNSET
    usage: TokenTotals = msgspec.field(default_factory=TokenTotals)
    cost: float | UnsetType = UNSET
    duration_ms: int = 0
    attempts: int = 1
    error: str | UnsetType = UNSET


def _check(task: BatchTask, folder: Path) -> tuple[BatchTask, str | None]:
    """``task`` with its workspace absolute, and what is wrong with it (None: nothing)."""
    if not task.prompt.strip():
        return task, "the prompt is empty"
    for name, value in (("maxSteps", task.max_steps), ("maxTurns", task.max_turns)):
        if value is not UNSET and value < 1:
            return task, f"{name} must be at least 1, got {value}"
    workspace = (folder / task.workspace).absolute()
    if not workspace.is_dir():
        return task, f"the workspace {workspace} is not a directory"
    return msgspec.structs.replace(task, workspace=str(workspace)), None


def read_tasks(path: Path) -> tuple[BatchTask, ...]:
    """The tasks of the file ``path``, in order, with absolute workspaces and unique ids.

    Raises :class:`CliError` (status 2) when the file cannot be read, holds no task, or
    has bad lines (not a task object, a missing or unknown field, an empty prompt, a
    workspace that is no directory, a limit below 1, an id used twice): every one is
    listed as ``line N: what`` (the first :data:`MAX_REPORTED`).
    """
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise CliError(f"cannot read the task file {path}: {error.strerror or error}", 2) from error
    decoder = msgspec.json.Decoder(BatchTask)
    tasks: list[BatchTask] = []
    problems: list[str] = []
    lines_of: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            task = decoder.decode(line)
        except msgspec.ValidationError as error:
            problems.append(f"line {number}: {error}")
            continue
        except msgspec.DecodeError:
            problems.append(f"line {number}: not a JSON object (one task per line)")
            continue
        if task.id is UNSET:
            task = msgspec.structs.replace(task, id=f"line-{number}")
        task, problem = _check(task, path.parent)
        assert isinstance(task.id, str)  # set just above
        if problem is None and task.id in lines_of:
            problem = f'the id "{task.id}" is already the id of line {lines_of[task.id]}'
        if problem is not None:
            problems.append(f"line {number}: {problem}")
        else:
            lines_of[task.id] = number
            tasks.append(task)
    if problems:
        listed = problems[:MAX_REPORTED]
        more = len(problems) - len(listed)
        if more:
            listed.append(f"... and {more} more")
        fields = '{"prompt": "...", "workspace": "DIR", "id"?, "model"?, "maxSteps"?, "maxTurns"?}'
        raise CliError(
            f"the task file {path} has {len(problems)} bad line(s); nothing ran. Each line is {fields}:\n  "
            + "\n  ".join(listed),
            2,
        )
    if not tasks:
        raise CliError(f"the task file {path} holds no task: write one JSON object per line", 2)
    return tuple(tasks)


def result_line(result: TaskResult) -> bytes:
    """``result`` as one JSONL line (compact UTF-8, a newline at the end)."""
    return msgspec.json.encode(result) + b"\n"
