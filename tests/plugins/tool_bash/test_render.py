"""``render_result``, status lines and the tool-owned presentation (SPEC §9c), plus properties."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh.core.bash import BashRunResult, BashTask, CollectedOutput
from dsh.core.llm import ImageBlock, TextBlock
from dsh.core.tools import ToolCallPresentation, ToolResult, ToolResultPresentation, ToolTerminal
from dsh.plugins.tool_bash import (
    TITLE_CHARS,
    ExitStatus,
    command_title,
    format_ms,
    parse_exit_status,
    render_result,
    status_line,
)
from tests.plugins.tool_bash.helpers import Stack


def out(text: str = "", truncated: bool = False, spill_path: str | None = None) -> CollectedOutput:
    return CollectedOutput(text=text, truncated=truncated, spill_path=spill_path)


def result(
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = 0,
    signal: str | None = None,
    timed_out: bool = False,
    timeout_ms: float = 1000,
    stdout_output: CollectedOutput | None = None,
) -> BashRunResult:
    return BashRunResult(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        aborted=False,
        timeout_ms=timeout_ms,
        stdout=stdout_output if stdout_output is not None else out(stdout),
        stderr=out(stderr),
    )


def task(status: str, exit_code: int | None = None, signal: str | None = None) -> BashTask:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    return BashTask(id="bash-1", command="x", done=done, status=status, exit_code=exit_code, signal=signal)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ describe renderResult


def test_renders_stderr_only_output_without_a_stdout_prefix() -> None:
    """renders stderr-only output without a stdout prefix"""
    assert render_result(result(stderr="boom\n")) == "[stderr]\nboom\n"


def test_adds_a_separator_when_stdout_does_not_end_with_a_newline() -> None:
    """adds a separator when stdout does not end with a newline"""
    assert render_result(result(stdout="out", stderr="err\n")) == "out\n[stderr]\nerr\n"
    assert render_result(result(stdout="out\n", stderr="err\n")) == "out\n[stderr]\nerr\n"


def test_appends_exit_code_markers_after_a_newline_for_unterminated_output() -> None:
    """appends exit-code markers after a newline for unterminated output"""
    assert render_result(result(stdout="x", exit_code=7)) == "x\n[exit code: 7]"
    assert render_result(result(stdout="x\n", exit_code=7)) == "x\n[exit code: 7]"


def test_renders_signal_kills_without_the_timeout_marker_when_not_timed_out() -> None:
    """renders signal kills without the timeout marker when not timed out"""
    assert render_result(result(exit_code=None, signal="SIGKILL")) == "(no output)\n[killed by signal: SIGKILL]"


def test_reports_a_timeout_that_exited_0_trapped_signal_without_a_kill_marker() -> None:
    """reports a timeout that exited 0 (trapped signal) without a kill marker"""
    text = render_result(result(stdout="bye\n", timed_out=True, timeout_ms=250))
    assert text == "bye\n[timed out after 250ms]"


def test_orders_the_timeout_marker_before_a_kill_marker() -> None:
    """orders the timeout marker before a kill marker"""
    text = render_result(result(exit_code=None, signal="SIGTERM", timed_out=True, timeout_ms=100))
    assert text == "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"


def test_notes_truncation_with_a_fallback_when_the_spill_path_is_missing() -> None:
    """notes truncation with a fallback when the spill path is missing"""
    missing = render_result(result(stdout_output=out("tail\n", truncated=True)))
    assert missing == "tail\n\n[output truncated; full output: (unavailable)]"
    kept = render_result(result(stdout_output=out("tail", truncated=True, spill_path="/tmp/all.log"), exit_code=2))
    assert kept == "tail\n[output truncated; full output: /tmp/all.log]\n[exit code: 2]"
    capped = CollectedOutput(text="tail", truncated=True, spill_path="/tmp/head.log", spill_truncated=True)
    assert render_result(result(stdout_output=capped)) == (
        "tail\n[output truncated; the beginning of it (up to the size cap): /tmp/head.log]"
    )


def test_an_unknown_exit_code_without_a_signal_renders_as_null() -> None:
    """a None exit code with no signal renders the JSON way, [exit code: null]"""
    assert render_result(result(exit_code=None)) == "(no output)\n[exit code: null]"
    assert format_ms(1.5) == "1.5"
    assert format_ms(100.0) == "100"


# ------------------------------------------------------------------------ describe status lines


async def test_reports_kills_without_a_recorded_signal_executor_raced_process_exit() -> None:
    """reports kills without a recorded signal (executor raced process exit)"""
    assert status_line(task("killed")) == "[status: killed]"
    assert status_line(task("killed", signal="SIGKILL")) == "[status: killed by SIGKILL]"
    assert status_line(task("running")) == "[status: running]"


async def test_reports_completed_tasks_with_a_null_exit_code_as_exit_0() -> None:
    """reports completed tasks with a null exit code as exit 0"""
    assert status_line(task("completed")) == "[status: completed, exit code: 0]"
    assert status_line(task("completed", exit_code=5)) == "[status: completed, exit code: 5]"


# ------------------------------------------------------------------------ describe tool-owned UI presentation


def present_call(stack: Stack, tool: str, args: Any) -> ToolCallPresentation | None:
    definition = stack.tools.get(tool)
    assert definition is not None
    assert definition.present_call is not None
    return definition.present_call(args)


def present_result(stack: Stack, args: Any, text: str, is_error: bool = False) -> ToolResultPresentation | None:
    definition = stack.tools.get("bash")
    assert definition is not None
    assert definition.present_result is not None
    return definition.present_result(args, ToolResult(content=(TextBlock(text=text),), is_error=is_error))


BASH_ARGS = {"command": "npm test", "description": "Run the unit tests"}


async def test_bash_presentcall_title_is_the_command_description_as_a_content_block_marks_a_terminal(
    stack: Stack,
) -> None:
    """bash presentCall: title is the command, description as a content block, marks a terminal; workdir → cwd (absolute or relative, bridge resolves)"""
    assert present_call(stack, "bash", BASH_ARGS) == ToolCallPresentation(
        title="npm test",
        kind="execute",
        raw_input={"command": "npm test", "description": "Run the unit tests"},
        content=(TextBlock(text="Run the unit tests"),),
        terminal=ToolTerminal(),
    )
    absolute = present_call(stack, "bash", {**BASH_ARGS, "workdir": "/srv/app"})
    assert absolute is not None
    assert absolute.terminal == ToolTerminal(cwd="/srv/app")
    relative = present_call(stack, "bash", {**BASH_ARGS, "workdir": "pkg"})
    assert relative is not None
    assert relative.terminal == ToolTerminal(cwd="pkg")


async def test_bash_presentresult_console_block_content_and_terminal_output_raw_newlines_parsed_exit_code(
    stack: Stack,
) -> None:
    """bash presentResult: console-block content AND terminal.output (RAW newlines) + parsed exit code"""
    assert present_result(stack, BASH_ARGS, "ok\nall good\n\n") == ToolResultPresentation(
        content=(TextBlock(text="```console\nok\nall good\n```"),),
        terminal=ToolTerminal(output="ok\nall good\n\n", exit_code=0),
    )


async def test_bash_presentresult_a_non_zero_exit_and_a_signal_kill_parse_into_exitcode_signal(stack: Stack) -> None:
    """bash presentResult: a non-zero exit and a signal kill parse into exitCode / signal"""
    failed = present_result(stack, BASH_ARGS, "failing\n[exit code: 3]")
    assert failed is not None
    assert failed.terminal == ToolTerminal(output="failing\n[exit code: 3]", exit_code=3)
    killed = present_result(stack, BASH_ARGS, "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]")
    assert killed is not None
    assert killed.terminal is not None
    assert (killed.terminal.exit_code, killed.terminal.signal) == (None, "SIGTERM")


@given(
    stdout=st.text(max_size=30),
    stderr=st.text(max_size=30),
    exit_code=st.integers(min_value=0, max_value=255),
    signal=st.none() | st.sampled_from(["SIGTERM", "SIGKILL", "SIGINT", "SIG35"]),
    timed_out=st.booleans(),
)
def test_bash_presentresult_exit_parse_is_the_inverse_of_renderresult_markers_round_trip(
    stdout: str, stderr: str, exit_code: int, signal: str | None, timed_out: bool
) -> None:
    """bash presentResult exit parse is the inverse of renderResult markers (round-trip)"""
    rendered = render_result(
        result(
            stdout=stdout, stderr=stderr, exit_code=None if signal else exit_code, signal=signal, timed_out=timed_out
        )
    )
    expected = ExitStatus(signal=signal) if signal else ExitStatus(exit_code=exit_code)
    assert parse_exit_status(rendered) == expected


async def test_bash_presentresult_a_clean_exit_0_whose_output_ends_in_marker_like_text_is_not_read_as_a_failure(
    stack: Stack,
) -> None:
    """bash presentResult: a clean exit-0 whose output ENDS in marker-like text is NOT read as a failure"""
    for text in ("[exit code: 9]", "grep says [killed by signal: SIGSEGV]", "x\n[exit code: 9]\n"):
        presented = present_result(stack, BASH_ARGS, text)
        assert presented is not None
        assert presented.terminal is not None
        assert (presented.terminal.exit_code, presented.terminal.signal) == (0, None)


async def test_bash_presentcall_presentresult_a_run_in_background_call_is_not_a_terminal_and_its_ack_carries_no_exit_pill(
    stack: Stack,
) -> None:
    """bash presentCall/presentResult: a run_in_background call is NOT a terminal and its ack carries no exit pill"""
    background = {**BASH_ARGS, "run_in_background": True}
    call = present_call(stack, "bash", background)
    assert call is not None
    assert call.terminal is None
    assert present_result(stack, background, "started background task bash-1") == ToolResultPresentation(
        content=(TextBlock(text="```console\nstarted background task bash-1\n```"),)
    )


async def test_bash_presentresult_an_iserror_result_carries_no_exit_pill(stack: Stack) -> None:
    """bash presentResult: an isError result carries no exit pill (no real process exit to report)"""
    assert present_result(stack, BASH_ARGS, "Error: command aborted", is_error=True) == ToolResultPresentation(
        content=(TextBlock(text="```console\nError: command aborted\n```"),)
    )


async def test_bash_presentresult_leaves_a_non_text_unexpected_result_untouched(stack: Stack) -> None:
    """bash presentResult: leaves a non-text (unexpected) result untouched → undefined (UI keeps raw content)"""
    definition = stack.tools.get("bash")
    assert definition is not None
    assert definition.present_result is not None
    image = ToolResult(content=(ImageBlock(url="data:image/png;base64,AA=="),), is_error=False)
    assert definition.present_result(BASH_ARGS, image) is None


async def test_bash_presentresult_a_result_that_is_not_exactly_one_block_is_undefined(stack: Stack) -> None:
    """bash presentResult: a result that is not exactly one block → undefined (no single text to fence)"""
    definition = stack.tools.get("bash")
    assert definition is not None
    assert definition.present_result is not None
    two = ToolResult(content=(TextBlock(text="a"), TextBlock(text="b")), is_error=False)
    assert definition.present_result(BASH_ARGS, two) is None
    assert definition.present_result(BASH_ARGS, ToolResult(content=(), is_error=False)) is None


async def test_bash_output_bash_kill_presentcall_a_readable_task_scoped_title_task_id_as_rawinput(stack: Stack) -> None:
    """bash_output / bash_kill presentCall: a readable task-scoped title, task id as rawInput"""
    assert present_call(stack, "bash_output", {"task_id": "bash-3"}) == ToolCallPresentation(
        title="Read output from background task bash-3", kind="execute", raw_input={"task_id": "bash-3"}
    )
    assert present_call(stack, "bash_kill", {"task_id": "bash-3"}) == ToolCallPresentation(
        title="Kill background task bash-3", kind="execute", raw_input={"task_id": "bash-3"}
    )
    assert stack.tools.get("bash_output").present_result is None  # type: ignore[union-attr]


async def test_presentcall_validates_softly_malformed_args_return_undefined_never_throw(stack: Stack) -> None:
    """presentCall validates softly: malformed args (a missing command) return undefined, never throw"""
    assert present_call(stack, "bash", {"description": "ls"}) is None
    assert present_call(stack, "bash", "not even an object") is None
    assert present_call(stack, "bash_kill", {}) is None
    assert present_result(stack, {"description": "ls"}, "x") is None


async def test_bash_presentcall_without_a_description_titles_the_card_from_the_command(stack: Stack) -> None:
    """no description: the title is the command's first line (cut, marked with …), no content block"""
    plain = present_call(stack, "bash", {"command": "  ls -la\n"})
    assert plain is not None
    assert (plain.title, plain.content, plain.raw_input) == ("ls -la", None, {"command": "  ls -la\n"})
    several = present_call(stack, "bash", {"command": "cd src\nmake test", "description": " "})
    assert several is not None
    assert (several.title, several.content) == ("cd src …", None)
    long = "echo " + "x" * 200
    assert command_title(long) == long[: TITLE_CHARS - 1] + "…"
    assert len(command_title(long)) == TITLE_CHARS
    assert command_title("") == ""
