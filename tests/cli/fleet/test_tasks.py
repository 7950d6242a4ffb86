"""The task file of `dsh batch`: checked whole before anything runs; the result lines; the progress report."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dsh.cli.errors import CliError
from dsh.cli.fleet.progress import BatchProgress
from dsh.cli.fleet.tasks import BatchTask, TaskResult, read_tasks, result_line
from dsh.cli.fleet.worker import WorkerInfo
from dsh.cli.main import amain


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_reads_tasks_with_defaults_and_workspaces_beside_the_file(tmp_path: Path) -> None:
    """blank lines are skipped, ids default to line-N, a relative workspace is the task file's folder's"""
    (tmp_path / "a").mkdir()
    path = write(
        tmp_path / "tasks.jsonl",
        {"prompt": "one", "workspace": "a"},
        "",
        {"prompt": "two", "workspace": str(tmp_path / "a"), "id": "x", "model": "m", "maxSteps": 3, "maxTurns": 2},
    )
    first, second = read_tasks(path)
    assert first == BatchTask(prompt="one", workspace=str(tmp_path / "a"), id="line-1")
    assert (second.id, second.model, second.max_steps, second.max_turns) == ("x", "m", 3, 2)


def test_every_bad_line_is_named_with_its_number(tmp_path: Path) -> None:
    """not JSON, a missing or unknown field, an empty prompt, a bad limit, no workspace, an id used twice"""
    (tmp_path / "a").mkdir()
    path = write(
        tmp_path / "tasks.jsonl",
        "not json",
        {"workspace": "a"},
        {"prompt": "p", "workspace": "a", "colour": "red"},
        {"prompt": " ", "workspace": "a"},
        {"prompt": "p", "workspace": "a", "maxSteps": 0},
        {"prompt": "p", "workspace": "missing"},
        {"prompt": "p", "workspace": "a", "id": "same"},
        {"prompt": "p", "workspace": "a", "id": "same"},
    )
    with pytest.raises(CliError) as raised:
        read_tasks(path)
    message = str(raised.value)
    assert raised.value.status == 2
    assert "has 7 bad line(s); nothing ran" in message
    for expected in (
        "line 1: not a JSON object",
        "line 2: Object missing required field `prompt`",
        "line 3: Object contains unknown field `colour`",
        "line 4: the prompt is empty",
        "line 5: maxSteps must be at least 1, got 0",
        f"line 6: the workspace {tmp_path / 'missing'} is not a directory",
        'line 8: the id "same" is already the id of line 7',
    ):
        assert expected in message


def test_a_long_list_of_bad_lines_is_cut_and_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CliError, match=r"line 20: .*\n  \.\.\. and 5 more"):
        read_tasks(write(tmp_path / "bad.jsonl", *(["{}"] * 25)))
    with pytest.raises(CliError, match="holds no task"):
        read_tasks(write(tmp_path / "empty.jsonl", ""))
    with pytest.raises(CliError, match="cannot read the task file"):
        read_tasks(tmp_path / "nothing.jsonl")


async def test_dsh_batch_refuses_a_bad_task_file_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """status 2 and the bad line on stderr; no results file is written"""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    path = write(tmp_path / "tasks.jsonl", {"prompt": "p"})
    status = await amain(["batch", str(path), "--out", str(tmp_path / "out.jsonl"), "--demo"])
    assert status == 2
    assert "line 1: Object missing required field `workspace`" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_result_lines_are_compact_camel_case_json() -> None:
    line = result_line(TaskResult(id="t", session_id="s", end_reason="completed", cost=0.5, duration_ms=3))
    assert json.loads(line) == {
        "id": "t",
        "sessionId": "s",
        "endReason": "completed",
        "usage": {
            "inputTokens": 0,
            "outputTokens": 0,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "reasoningTokens": 0,
        },
        "cost": 0.5,
        "durationMs": 3,
        "attempts": 1,
    }
    assert line.endswith(b"\n")
    assert b" " not in line


def test_progress_is_a_line_per_tenth_off_a_terminal() -> None:
    stream = io.StringIO()
    with BatchProgress(20, stream) as progress:
        progress.worker(1, WorkerInfo(7, "host"))
        for number in range(20):
            progress.result(TaskResult(id=str(number), session_id="s", end_reason="completed" if number else "error"))
        progress.death(1, 3)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "dsh: worker 1: pid 7 on host"
    assert lines[1:3] == ["dsh: batch: 2/20 done, 1 failed", "dsh: batch: 4/20 done, 1 failed"]
    assert lines[-2:] == [
        "dsh: batch: 20/20 done, 1 failed",
        "dsh: worker 1 died; resuming its 3 task(s) on another worker",
    ]
    assert len(lines) == 12


def test_progress_is_a_bar_on_a_terminal() -> None:
    stream = io.StringIO()
    with BatchProgress(2, stream, terminal=True) as progress:
        progress.worker(1, WorkerInfo(7, "host"))
        progress.result(TaskResult(id="a", session_id="s", error="no worker left"))
        progress.result(TaskResult(id="b", session_id="s", end_reason="completed"))
    text = stream.getvalue()
    assert "dsh: worker 1: pid 7 on host" in text
    assert "2/2" in text
    assert "1 failed" in text
