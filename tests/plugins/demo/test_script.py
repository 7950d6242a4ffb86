"""The demo model's words (pure): which bash call a prompt gets, and how a result is summarized."""

from __future__ import annotations

import json
import shlex

from hypothesis import given
from hypothesis import strategies as st

from dsh.core.llm import Message, ToolCallBlock, ToolResultBlock, text
from dsh.plugins.demo import (
    LABEL,
    PREVIEW_LINES,
    announce,
    command_of,
    count_tool_calls,
    last_tool_result,
    latest_prompt,
    plan_command,
    summarize_result,
)


def user(*texts: str) -> Message:
    return Message("user", tuple(text(value) for value in texts))


def call(call_id: str, arguments: str) -> Message:
    return Message("assistant", (ToolCallBlock(id=call_id, name="bash", arguments=arguments),))


def result(output: str, *, is_error: bool = False, call_id: str = "c1") -> ToolResultBlock:
    return ToolResultBlock(tool_call_id=call_id, content=(text(output),), is_error=is_error)


def test_a_plain_prompt_lists_the_working_directory() -> None:
    planned = plan_command("what is here?")
    assert (planned.command, planned.description) == ("ls", "List the files in the working directory")
    assert json.loads(planned.arguments()) == {"command": "ls", "description": planned.description}


def test_an_echo_prompt_echoes_the_text_quoted_for_the_shell() -> None:
    planned = plan_command("  Echo it's  here ")
    assert planned.command == "echo 'it'\"'\"'s  here'"
    assert shlex.split(planned.command) == ["echo", "it's  here"]
    assert plan_command("echo").command == "ls"
    assert plan_command("echo   ").command == "ls"


def test_a_dollar_prompt_runs_the_command_as_typed() -> None:
    planned = plan_command("$ printf 'a\\nb'")
    assert planned.command == "printf 'a\\nb'"
    assert planned.description == "Run the command typed after $"
    assert plan_command("$   ").command == "ls"


def test_the_arguments_are_compact_utf8_json() -> None:
    assert (
        plan_command("$ echo héllo").arguments()
        == '{"command":"echo héllo","description":"Run the command typed after $"}'
    )


@given(st.text())
def test_any_prompt_plans_a_well_formed_call(prompt: str) -> None:
    planned = plan_command(prompt)
    parsed = json.loads(planned.arguments())
    assert parsed["command"].strip() == parsed["command"] or parsed["command"].startswith("echo ")
    assert parsed["command"]
    assert parsed["description"]


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(lambda value: value.strip() != ""))
def test_echo_round_trips_through_the_shell_quoting(words: str) -> None:
    planned = plan_command(f"echo {words}")
    assert shlex.split(planned.command) == ["echo", words.strip()]


def test_latest_prompt_takes_the_newest_user_text_and_skips_tagged_context() -> None:
    messages: list[Message] = [
        user("first"),
        Message("assistant", (text("ok"),)),
        user('<context source="plugin">', "notice", "</context>"),
    ]
    assert latest_prompt(messages) == "first"
    assert latest_prompt([*messages, user("second", "third")]) == "second"
    assert latest_prompt([*messages, user("<tag>", "skipped")]) == "first"
    assert latest_prompt([*messages, Message("user", (result("x"),))]) == "first"
    assert latest_prompt([]) == ""
    assert latest_prompt([Message("assistant", (text("only me"),))]) == ""


def test_last_tool_result_reads_only_the_last_message() -> None:
    first, second = result("one"), result("two", call_id="c2")
    assert last_tool_result([]) is None
    assert last_tool_result([user("hi")]) is None
    carrier = Message("user", (first, second))
    assert last_tool_result([carrier]) == second
    assert last_tool_result([carrier, user("later")]) is None


def test_command_of_finds_the_call_by_id() -> None:
    history = [call("c1", '{"command":"ls -l","description":"x"}'), call("c2", "not json"), call("c3", "[1]")]
    history.append(call("c4", '{"command": 7}'))
    assert command_of(history, "c1") == "ls -l"
    assert command_of(history, "c2") is None
    assert command_of(history, "c3") is None
    assert command_of(history, "c4") is None
    assert command_of(history, "missing") is None
    assert command_of([user("x")], "c1") is None
    assert count_tool_calls(history) == 4
    assert count_tool_calls([user("x")]) == 0


def test_announce_names_the_command_and_the_label() -> None:
    assert announce(plan_command("hi")) == f"{LABEL} I will run `ls` with the bash tool."


def test_a_summary_counts_lines_and_quotes_them() -> None:
    summary = summarize_result(result("a\nb\n"), "ls")
    assert summary.startswith(f"{LABEL} `ls` finished and printed 2 lines:\n\n```\na\nb\n```\n")
    assert "DEEPSEEK_API_KEY" in summary
    single = summarize_result(result("only\n"), None)
    assert single.startswith(f"{LABEL} The command finished and printed 1 line:")


def test_a_summary_quotes_only_the_last_lines_of_long_output() -> None:
    output = "".join(f"line {n}\n" for n in range(1, 26))
    summary = summarize_result(result(output), "seq")
    assert f"printed 25 lines; the last {PREVIEW_LINES}:" in summary
    assert "line 16\n" in summary
    assert "line 15\n" not in summary


def test_a_summary_reports_a_non_zero_exit_and_an_empty_output() -> None:
    failed = summarize_result(result("boom\n[exit code: 3]"), "false")
    assert failed.startswith(f"{LABEL} `false` exited with code 3 and printed 1 line:")
    assert "[exit code" not in failed
    assert summarize_result(result("(no output)"), "true") == f"{LABEL} `true` finished and printed nothing."
    quiet = summarize_result(result("(no output)\n[exit code: 1]"), "false")
    assert quiet == f"{LABEL} `false` exited with code 1 and printed nothing."
    assert summarize_result(result("  \n"), "x") == f"{LABEL} `x` finished and printed nothing."
    assert summarize_result(result("ok\n[exit code: 0]"), "true").startswith(
        f"{LABEL} `true` finished and printed 1 line:"
    )


def test_a_summary_reports_a_command_killed_by_a_signal() -> None:
    """(extra) the signal marker is the status, not a line of output"""
    killed = summarize_result(result("(no output)\n[killed by signal: SIGKILL]"), "sleep 9")
    assert killed == f"{LABEL} `sleep 9` was killed by signal SIGKILL and printed nothing."
    partial = summarize_result(result("tick\n[killed by signal: SIGTERM]"), "loop")
    assert partial.startswith(f"{LABEL} `loop` was killed by signal SIGTERM and printed 1 line:")
    assert "killed by signal: SIGTERM]" not in partial


def test_a_summary_of_a_tool_error_says_the_call_failed() -> None:
    failed = summarize_result(result("invalid arguments\n", is_error=True), "ls")
    assert failed == f"{LABEL} The bash tool could not run `ls`: invalid arguments"
    assert summarize_result(result("", is_error=True), None).endswith("could not run The command: no details")
