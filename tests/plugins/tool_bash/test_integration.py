"""The bash tools through the real agent loop with a scripted model (SPEC §9c, ``integration.spec.ts``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import dsh.plugins.tool_bash as tool_bash
from dsh.core.bash import BASH
from dsh.core.llm import TextBlock, ToolResultBlock, text, to_json
from dsh.core.tools import TOOLS_EXECUTE, ToolExecution, ToolExecutionResult
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import text_response, tool_call_response


async def with_bash(harness: Harness) -> None:
    await harness.ctx.plugin(LocalBashExecutor)
    await harness.ctx.plugin(tool_bash)


async def test_foreground_model_calls_bash_sees_the_result_replies() -> None:
    """foreground: model calls bash, sees the result, replies"""
    script = [
        tool_call_response("call-1", "bash", {"command": "echo integration-ok", "description": "print a marker"}),
        text_response("the command printed integration-ok"),
    ]
    async with Harness(script) as h:
        await with_bash(h)
        agent = h.agent()
        agent.send([text("run it")])
        await agent.when_idle()
        results = data_json(agent.session, "tool/result")
        assert len(results) == 1
        assert results[0]["callId"] == "call-1"
        assert results[0]["content"] == [{"type": "text", "text": "integration-ok\n"}]
        assert results[0]["isError"] is False
        second = h.model.requests[1]
        tool_results = [
            block for message in second.messages for block in message.content if type(block) is ToolResultBlock
        ]
        assert len(tool_results) == 1
        assert to_json(tool_results[0].content) == [{"type": "text", "text": "integration-ok\n"}]
        assert data_json(agent.session, "turn/end")[-1]["reason"] == {"kind": "completed"}


async def test_foreground_non_zero_exit_is_reported_in_the_result_text_not_as_iserror() -> None:
    """foreground: non-zero exit is reported in the result text, not as isError"""
    script = [
        tool_call_response("call-1", "bash", {"command": "echo nope; exit 2", "description": "fail on purpose"}),
        text_response("it failed"),
    ]
    async with Harness(script) as h:
        await with_bash(h)
        agent = h.agent()
        agent.send([text("run it")])
        await agent.when_idle()
        (result,) = data_json(agent.session, "tool/result")
        assert result["content"] == [{"type": "text", "text": "nope\n[exit code: 2]"}]
        assert result["isError"] is False


async def test_background_start_poll_completion_notice_lands_as_context_message() -> None:
    """background: start → poll → completion notice lands as context/message"""
    script = [
        tool_call_response(
            "call-1", "bash", {"command": "echo bg-done", "description": "start a job", "run_in_background": True}
        ),
        tool_call_response("call-2", "bash_output", {"task_id": "to-be-rewritten"}),
        text_response("polled"),
    ]
    async with Harness(script) as h:
        await with_bash(h)
        started: list[str] = []

        async def rewrite(
            execution: ToolExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
        ) -> ToolExecutionResult:
            if execution.name == "bash_output":
                execution.arguments = {"task_id": started[0]}
            result = await next_()
            if execution.name == "bash":
                block = result.content[0]
                assert type(block) is TextBlock
                ack = block.text
                started.append(ack.removeprefix("started background task "))
            return result

        h.ctx.on(TOOLS_EXECUTE, rewrite)
        agent = h.agent()
        agent.send([text("start it")])
        await agent.when_idle()
        results = data_json(agent.session, "tool/result")
        assert results[0]["content"] == [{"type": "text", "text": f"started background task {started[0]}"}]
        task = h.ctx[BASH].get(started[0])
        assert task is not None
        await task.done
        await agent.when_idle()
        poll = results[1]["content"][0]["text"]
        assert results[1]["isError"] is False
        assert poll.startswith(("bg-done\n\n[status: ", "(no new output)\n[status: "))
        notices = [data for data in data_json(agent.session, "context/message") if "finished" in str(data["content"])]
        assert len(notices) == 1
        assert notices[0]["source"] == {"kind": "plugin", "plugin": "tool-bash"}
        assert (
            f"background bash task {started[0]} finished [status: completed, exit code: 0]"
            in (notices[0]["content"][0]["text"])
        )
