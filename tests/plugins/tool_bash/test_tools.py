"""The tool-bash tools over the real bash-local executor (SPEC §9c, ``tools.spec.ts``)."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.tool_bash as tool_bash
from dsh.core.bash import BASH, BashTaskRead
from dsh.core.errors import HarnessError
from dsh.core.llm import PluginSource, text, text_of, to_json
from dsh.core.system_prompt import SYSTEM_PROMPT, SystemPrompt
from dsh.core.tools import TOOLS, TOOLS_CHANGE, ToolErrorInfo, ToolExecution, ToolRegistry
from dsh.kernel import AbortController, Context, FiberState, unwrap
from dsh.plugins.bash_local import LocalBashExecutor
from tests.core.bash.helpers import StubExecutor, fire
from tests.plugins.bash_local.helpers import Handshake, file_bytes, real, until
from tests.plugins.tool_bash.helpers import FakeAgent, Stack, boot, only_text

PLUGIN_SOURCE = PluginSource(plugin="tool-bash")


def args(command: str, **extra: Any) -> dict[str, Any]:
    return {"command": command, "description": "run a test command", **extra}


def local(stack: Stack) -> LocalBashExecutor:
    executor = stack.executor
    assert isinstance(executor, LocalBashExecutor)
    return executor


async def start(stack: Stack, command: str, agent: object | None = None) -> str:
    text = await stack.text("bash", args(command, run_in_background=True), agent)
    match = re.fullmatch(r"started background task (bash-\d+)", text)
    assert match is not None, text
    return match.group(1)


async def finished(stack: Stack, task_id: str) -> None:
    task = stack.executor.get(task_id)
    assert task is not None
    await task.done


# ------------------------------------------------------------------------ describe bash tool


async def test_returns_stdout_for_a_successful_command(stack: Stack) -> None:
    """returns stdout for a successful command"""
    result = await stack.call("bash", args("echo hello"))
    assert to_json(result) == {"callId": "call-1", "content": [{"type": "text", "text": "hello\n"}], "isError": False}


async def test_reports_no_output_for_silent_commands(stack: Stack) -> None:
    """reports (no output) for silent commands"""
    assert await stack.text("bash", args("true")) == "(no output)"


async def test_marks_stderr_sections(stack: Stack) -> None:
    """marks stderr sections"""
    assert await stack.text("bash", args("echo out; echo err >&2")) == "out\n[stderr]\nerr\n"


async def test_reports_non_zero_exits_without_iserror(stack: Stack) -> None:
    """reports non-zero exits without isError"""
    assert await stack.text("bash", args("echo failing; exit 3")) == "failing\n[exit code: 3]"


async def test_reports_timeout_kills_with_both_markers_timeout_first(stack: Stack) -> None:
    """reports timeout kills with both markers (timeout first)"""
    text = await stack.text("bash", args("sleep 30", timeoutMs=100))
    assert text == "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"


async def test_reports_a_timeout_even_when_the_command_traps_the_signal_and_exits_0(stack: Stack) -> None:
    """reports a timeout even when the command traps the signal and exits 0"""
    # the trap must be set before the timeout fires, so leave bash ample time to start under load
    text = await stack.text("bash", args("trap 'exit 0' TERM; sleep 30 & wait", timeoutMs=1000))
    assert text == "(no output)\n[timed out after 1000ms]"
    assert "[exit code" not in text
    assert "[killed by signal" not in text


async def test_reports_truncation_with_the_spill_path(root: Context, tmp_path: Path) -> None:
    """reports truncation with the spill path"""
    stack = await boot(root, config={"maxOutputBytes": 100}, spill_dir=str(tmp_path))
    text = await stack.text("bash", args("seq 1 200"))
    match = re.search(r"\n\[output truncated; full output: (.+)\]$", text)
    assert match is not None, text
    tail = text[: match.start()]
    assert tail.endswith("199\n200\n")
    assert len(tail.encode()) <= 100
    assert file_bytes(match.group(1)).decode() == "".join(f"{i}\n" for i in range(1, 201))


async def test_honors_workdir(stack: Stack, tmp_path: Path) -> None:
    """honors workdir"""
    assert await stack.text("bash", args("pwd -P", workdir=str(tmp_path))) == f"{real(tmp_path)}\n"


async def test_surfaces_spawn_failures_as_iserror(stack: Stack, tmp_path: Path) -> None:
    """surfaces spawn failures as isError"""
    result = await stack.call("bash", args("true", workdir=str(tmp_path / "missing")))
    assert result.is_error is True
    assert "ENOENT" in only_text(result)
    assert result.error == ToolErrorInfo(name="HarnessError", code="ENOENT")


async def test_surfaces_aborts_as_iserror(stack: Stack, handshake: Handshake) -> None:
    """surfaces aborts as isError"""
    controller = AbortController()
    pending = asyncio.ensure_future(
        stack.call("bash", args(f"{handshake.connect}; echo $$ >&3; sleep 30"), signal=controller.signal)
    )
    await handshake.line()
    controller.abort("user stop")
    result = await pending
    assert result.is_error is True
    assert result.content == (text("Error: command aborted"),)
    assert result.error == ToolErrorInfo(name="HarnessError", code="ABORTED")
    already = AbortController()
    already.abort("too late")
    assert "aborted" in await stack.error("bash", args("true"), signal=already.signal)


@pytest.mark.parametrize(
    ("arguments", "violation"),
    [
        ({}, 'missing required property "command"'),
        ({"command": 42, "description": "d"}, '"command" must be a string'),
        ({"command": "ls", "description": 7}, '"description" must be a string'),
        ({"command": "ls", "description": "d", "timeoutMs": "soon"}, '"timeoutMs" must be a number'),
        ({"command": "ls", "description": "d", "workdir": 7}, '"workdir" must be a string'),
        ({"command": "ls", "description": "d", "run_in_background": "yes"}, '"run_in_background" must be a boolean'),
    ],
)
async def test_rejects_schema_invalid_args(stack: Stack, arguments: dict[str, Any], violation: str) -> None:
    """rejects schema-invalid args %j"""
    result = await stack.call("bash", arguments)
    assert result.is_error is True
    assert violation in only_text(result)
    assert result.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"command": "   ", "description": "d"}, "invalid command: expected a non-empty string"),
        (
            {"command": "ls", "description": "d", "timeoutMs": -1},
            "invalid timeoutMs: expected a positive number, got -1",
        ),
        (
            {"command": "ls", "description": "d", "timeoutMs": float("nan")},
            "invalid timeoutMs: expected a positive number, got null",
        ),
        ({"command": "ls", "description": "d", "timeoutMs": 0}, "invalid timeoutMs: expected a positive number, got 0"),
    ],
)
async def test_rejects_value_invalid_args(stack: Stack, arguments: dict[str, Any], message: str) -> None:
    """rejects value-invalid args %j"""
    assert await stack.error("bash", arguments) == f"Error: {message}"


async def test_registers_all_three_schemas_in_the_system_prompt_assembly(stack: Stack) -> None:
    """registers all three schemas in the system prompt assembly"""
    assembly = await stack.root[SYSTEM_PROMPT].assemble()
    assert [tool.name for tool in assembly.tools] == ["bash", "bash_output", "bash_kill"]
    bash_schema = assembly.tools[0].parameters
    assert bash_schema["required"] == ["command"]
    assert list(bash_schema["properties"]) == ["command", "description", "timeoutMs", "workdir", "run_in_background"]
    assert assembly.tools[1].parameters["required"] == ["task_id"]


async def test_only_bash_output_may_run_alongside_other_calls(stack: Stack) -> None:
    """bash_output only reads: it is concurrency-safe; bash and bash_kill are barriers"""
    safe = {name: stack.tools.get(name).concurrency_safe for name in ("bash", "bash_output", "bash_kill")}  # type: ignore[union-attr]
    assert safe == {"bash": False, "bash_output": True, "bash_kill": False}


async def test_unregisters_everything_when_the_plugin_fiber_is_disposed_hmr_safety(stack: Stack) -> None:
    """unregisters everything when the plugin fiber is disposed (HMR safety)"""
    assert stack.executor.task_done_listener_count == 1
    await stack.tool_fiber.dispose()
    assert stack.tools.schemas() == []
    assert [stack.tools.get(name) for name in ("bash", "bash_output", "bash_kill")] == [None, None, None]
    assert stack.executor.task_done_listener_count == 0


async def test_tools_depend_on_the_executor_no_registration_without_ctx_bash(root: Context) -> None:
    """tools depend on the executor: no registration without ctx.bash"""
    await root.plugin(SystemPrompt)
    await root.plugin(ToolRegistry)
    fiber = await root.plugin(tool_bash)
    assert fiber.state is FiberState.PENDING
    assert root[TOOLS].schemas() == []
    await root.plugin(LocalBashExecutor)
    await until(lambda: fiber.state is FiberState.ACTIVE)
    assert len(root[TOOLS].schemas()) == 3


async def test_a_throwing_tools_change_listener_rolls_the_plugin_back_and_names_stay_reusable(root: Context) -> None:
    """rollback: a throwing tools/change listener leaves no tool or listener behind; a reload works"""
    await root.plugin(SystemPrompt)
    await root.plugin(ToolRegistry)
    await root.plugin(LocalBashExecutor)
    executor = unwrap(root[BASH])
    calls: list[int] = []

    def explode() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("change listener exploded")

    listener = root.on(TOOLS_CHANGE, explode)
    with pytest.raises(RuntimeError, match="change listener exploded"):
        await root.plugin(tool_bash)
    assert root[TOOLS].schemas() == []
    assert executor.task_done_listener_count == 0
    listener()
    await root.plugin(tool_bash)
    assert [schema.name for schema in root[TOOLS].schemas()] == ["bash", "bash_output", "bash_kill"]


# ------------------------------------------------------------------------ describe background tools


async def test_bash_with_run_in_background_returns_a_task_id_immediately(stack: Stack) -> None:
    """bash with run_in_background returns a task id immediately"""
    task_id = await start(stack, "sleep 30")
    task = stack.executor.get(task_id)
    assert task is not None
    assert task.status == "running"


async def test_bash_output_polls_incrementally_and_reports_status(stack: Stack, handshake: Handshake) -> None:
    """bash_output polls incrementally and reports status"""
    task_id = await start(stack, f"echo first; {handshake.connect}; echo ready >&3; read -r _ <&3; echo second")
    await handshake.line()
    process = local(stack).process(task_id)
    assert process is not None
    await until(lambda: process.stdout.total_bytes == len("first\n"))
    assert await stack.text("bash_output", {"task_id": task_id}) == "first\n\n[status: running]"
    await handshake.release()
    await finished(stack, task_id)
    assert await stack.text("bash_output", {"task_id": task_id}) == "second\n\n[status: completed, exit code: 0]"
    assert await stack.text("bash_output", {"task_id": task_id}) == "(no new output)\n[status: completed, exit code: 0]"


async def test_bash_output_flags_lossy_reads_with_spill_paths(root: Context, tmp_path: Path) -> None:
    """bash_output flags lossy reads with spill paths"""
    stack = await boot(root, config={"maxOutputBytes": 100}, spill_dir=str(tmp_path))
    task_id = await start(stack, "seq 1 100; seq 1 100 >&2")
    await finished(stack, task_id)
    text = await stack.text("bash_output", {"task_id": task_id})
    match = re.search(r"\n\[some output was dropped from memory; full output: (.+), (.+)\]\n\[status: completed", text)
    assert match is not None, text
    assert match.group(1).endswith("-stdout.log")
    assert match.group(2).endswith("-stderr.log")


async def test_bash_output_reports_unavailable_when_a_lossy_read_has_no_safe_spill_path(root: Context) -> None:
    """bash_output reports unavailable when a lossy read has no safe spill path"""
    stack = await boot(root, executor=StubExecutor)
    stub = stack.executor
    assert isinstance(stub, StubExecutor)
    task_id = await start(stack, "yes")
    task = stub.get(task_id)
    assert task is not None
    stub.next_reads.append(BashTaskRead(task=task, delta="tail", lossy=True))
    text = await stack.text("bash_output", {"task_id": task_id})
    assert text == "tail\n[some output was dropped from memory; full output: (unavailable)]\n[status: running]"
    fire(stub, task)


async def test_bash_kill_stops_a_running_task_repeat_reports_already_finished(stack: Stack) -> None:
    """bash_kill stops a running task; repeat reports already-finished"""
    task_id = await start(stack, "sleep 30")
    assert await stack.text("bash_kill", {"task_id": task_id}) == f"killed background task {task_id}"
    await finished(stack, task_id)
    assert await stack.text("bash_output", {"task_id": task_id}) == "(no new output)\n[status: killed by SIGTERM]"
    assert await stack.text("bash_kill", {"task_id": task_id}) == f"task {task_id} had already finished"


async def test_unknown_task_ids_are_iserror_for_both_tools(stack: Stack) -> None:
    """unknown task ids are isError for both tools"""
    assert await stack.error("bash_output", {"task_id": "nope"}) == 'Error: unknown bash task "nope"'
    assert await stack.error("bash_kill", {"task_id": "nope"}) == 'Error: unknown bash task "nope"'


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("bash_output", {}, 'missing required property "task_id"'),
        ("bash_output", {"task_id": 9}, '"task_id" must be a string'),
        ("bash_kill", {"task_id": ""}, 'invalid task_id: expected a string, got ""'),
        ("bash_output", {"task_id": "  "}, 'invalid task_id: expected a string, got "  "'),
    ],
)
async def test_rejects_invalid_task_id(stack: Stack, tool: str, arguments: dict[str, Any], message: str) -> None:
    """%s rejects invalid task_id %j"""
    assert message in await stack.error(tool, arguments)


async def test_injects_a_completion_notice_into_the_owning_agent(stack: Stack) -> None:
    """injects a completion notice into the owning agent"""
    agent = FakeAgent()
    task_id = await start(stack, "exit 4", agent)
    await finished(stack, task_id)
    assert agent.injected == [
        (
            (
                text(
                    f"background bash task {task_id} finished [status: completed, exit code: 4]. "
                    "Read its output with bash_output."
                ),
            ),
            PLUGIN_SOURCE,
        )
    ]


async def test_swallows_only_the_disposed_agent_inject_error(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    """swallows ONLY the disposed-agent inject error"""
    agent = FakeAgent(fail=HarnessError('agent "agent" is disposed', "DISPOSED"))
    task_id = await start(stack, "true", agent)
    with caplog.at_level(logging.ERROR):
        await finished(stack, task_id)
    assert "listener threw" not in caplog.text


async def test_rethrows_a_non_disposed_inject_failure_not_blindly_swallowed(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """rethrows a non-disposed inject failure (not blindly swallowed)"""
    agent = FakeAgent(fail=RuntimeError("session log is frozen"))
    task_id = await start(stack, "true", agent)
    with caplog.at_level(logging.ERROR):
        await finished(stack, task_id)
    assert "bash onTaskDone listener threw" in caplog.text
    assert "session log is frozen" in caplog.text


async def test_does_not_notify_when_no_agent_owned_the_task(stack: Stack) -> None:
    """does not notify when no agent owned the task"""
    agent = FakeAgent()
    unowned = await start(stack, "true")
    owned = await start(stack, "true", agent)
    await finished(stack, unowned)
    await finished(stack, owned)
    assert [text_of(content).split(" finished")[0] for content, _source in agent.injected] == [
        f"background bash task {owned}"
    ]
    assert unowned not in tool_state(stack).owners


def tool_state(stack: Stack) -> tool_bash.BashTools:
    state = stack.tool_fiber.instance
    assert isinstance(state, tool_bash.BashTools)
    return state


# ------------------------------------------------------------------------ describe ownership


async def test_rejects_bash_output_bash_kill_for_a_task_owned_by_a_different_agent(stack: Stack) -> None:
    """rejects bash_output/bash_kill for a task owned by a DIFFERENT agent"""
    owner, other = FakeAgent("owner"), FakeAgent("other")
    task_id = await start(stack, "sleep 30", owner)
    expected = f"Error: task {task_id} belongs to another session"
    assert await stack.error("bash_output", {"task_id": task_id}, other) == expected
    assert await stack.error("bash_kill", {"task_id": task_id}, other) == expected
    assert stack.executor.get(task_id).status == "running"  # type: ignore[union-attr]


async def test_the_no_agent_non_loop_caller_cannot_access_an_owned_task(stack: Stack) -> None:
    """the no-agent (non-loop) caller cannot access an owned task"""
    task_id = await start(stack, "sleep 30", FakeAgent())
    assert "belongs to another session" in await stack.error("bash_output", {"task_id": task_id})
    assert "belongs to another session" in await stack.error("bash_kill", {"task_id": task_id})


async def test_an_unowned_task_started_with_no_agent_is_accessible_to_anyone(stack: Stack) -> None:
    """an UNOWNED task (started with no agent) is accessible to anyone"""
    task_id = await start(stack, "sleep 30")
    assert await stack.text("bash_output", {"task_id": task_id}, FakeAgent("a")) == "(no new output)\n[status: running]"
    assert await stack.text("bash_kill", {"task_id": task_id}, FakeAgent("b")) == f"killed background task {task_id}"


async def test_the_owner_can_still_access_its_task_after_it_completes_owner_record_persists(stack: Stack) -> None:
    """the owner can still access its task AFTER it completes (owner record persists)"""
    owner = FakeAgent()
    task_id = await start(stack, "echo done", owner)
    await finished(stack, task_id)
    assert await stack.text("bash_output", {"task_id": task_id}, owner) == "done\n\n[status: completed, exit code: 0]"
    assert "belongs to another session" in await stack.error("bash_output", {"task_id": task_id}, FakeAgent("x"))


async def test_documents_the_hmr_caveat_an_independent_tool_bash_reload_resets_ownership(stack: Stack) -> None:
    """documents the HMR caveat: an independent tool-bash reload resets ownership"""
    task_id = await start(stack, "sleep 30", FakeAgent("owner"))
    await stack.tool_fiber.dispose()
    await stack.root.plugin(tool_bash)
    assert await stack.text("bash_output", {"task_id": task_id}, FakeAgent("stranger")) == (
        "(no new output)\n[status: running]"
    )


# ------------------------------------------------------------------------ describe session-cwd routing


async def test_defaults_bash_to_the_agent_s_session_cwd_not_the_server_launch_dir(stack: Stack, tmp_path: Path) -> None:
    """defaults bash to the agent's session cwd (not the server launch dir)"""
    agent = FakeAgent(cwd=str(tmp_path))
    assert await stack.text("bash", args("pwd -P"), agent) == f"{real(tmp_path)}\n"


async def test_an_explicit_absolute_workdir_overrides_the_session_cwd(stack: Stack, tmp_path: Path) -> None:
    """an explicit absolute workdir overrides the session cwd"""
    inner = tmp_path / "inner"
    inner.mkdir()
    agent = FakeAgent(cwd="/")
    assert await stack.text("bash", args("pwd -P", workdir=str(inner)), agent) == f"{real(inner)}\n"


async def test_a_relative_workdir_is_resolved_against_the_session_cwd(stack: Stack, tmp_path: Path) -> None:
    """a relative workdir is resolved against the session cwd"""
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    agent = FakeAgent(cwd=str(tmp_path / "usr"))
    assert await stack.text("bash", args("pwd", workdir="bin"), agent) == f"{tmp_path}/usr/bin\n"
    assert tool_bash.resolve_workdir("bin", execution_for(FakeAgent(cwd="/usr"))) == "/usr/bin"
    assert tool_bash.resolve_workdir("../etc", execution_for(FakeAgent(cwd="/usr"))) == "/etc"


def execution_for(agent: object | None) -> ToolExecution:
    return ToolExecution(call_id="c", name="bash", arguments={}, agent=agent)


async def test_two_sessions_with_different_cwds_each_run_bash_in_their_own_dir(stack: Stack, tmp_path: Path) -> None:
    """two sessions with different cwds each run bash in their own dir"""
    left, right = tmp_path / "left", tmp_path / "right"
    left.mkdir()
    right.mkdir()
    assert await stack.text("bash", args("pwd -P"), FakeAgent("l", cwd=str(left))) == f"{real(left)}\n"
    assert await stack.text("bash", args("pwd -P"), FakeAgent("r", cwd=str(right))) == f"{real(right)}\n"


async def test_falls_back_to_the_executor_default_when_the_agent_has_no_session_cwd(
    root: Context, tmp_path: Path
) -> None:
    """falls back to the executor default when the agent has no session cwd"""
    stack = await boot(root, config={"cwd": str(tmp_path)})
    assert await stack.text("bash", args("pwd -P"), FakeAgent()) == f"{real(tmp_path)}\n"
    assert await stack.text("bash", args("pwd -P", workdir="")) == f"{real(tmp_path)}\n"
    assert tool_bash.resolve_workdir("rel", execution_for(None)) == "rel"
    assert tool_bash.resolve_workdir(None, execution_for(object())) is None


async def test_a_call_without_a_description_runs(stack: Stack) -> None:
    """description is optional: a call without one (or with a blank one) runs the command"""
    result = await stack.call("bash", {"command": "echo no-description"})
    assert result.is_error is False
    assert only_text(result) == "no-description\n"
    blank = await stack.call("bash", {"command": "echo blank", "description": " \n"})
    assert only_text(blank) == "blank\n"
