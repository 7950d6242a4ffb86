"""The model-facing ``subagent``, ``subagent_output`` and ``subagent_cancel`` tools.

``subagent`` starts a child through the ``subagents`` service. In the foreground the
call returns the child's final answer (an error result when the child did not
complete); cancelling the call (the parent's turn) cancels the child and waits for it
to stop. With ``background: true`` it returns a task id at once; ``subagent_output``
reads (or, with ``wait``, awaits) the answer and ``subagent_cancel`` stops the child.
A task is reachable only from the agent that started it.
"""

from __future__ import annotations

import asyncio
from typing import NotRequired, Required, TypedDict

from dsh.core.agent import Agent
from dsh.core.errors import HarnessError
from dsh.core.llm import ContentBlock, text
from dsh.core.subagent import SubagentRequest, SubagentResult, SubagentRun, Subagents
from dsh.core.tools import SchemaSpec, ToolCallPresentation, ToolDefinition, ToolExecution, define_tool
from dsh.plugins.subagent.run import reason_kind

SUBAGENT_DESCRIPTION = (
    "Delegate a self-contained task to a sub-agent: a fresh agent with its own conversation that sees "
    "only your prompt (give it every detail it needs) and answers once, with its final message.\n"
    "- `tools` limits what it may use (names of your tools); by default it gets yours, without "
    "sub-agent tools of its own.\n"
    "- Set `background: true` to keep working meanwhile: the call returns a task id; collect the "
    "answer with `subagent_output` and stop a task you no longer need with `subagent_cancel`."
)

SUBAGENT_PARAMETERS: SchemaSpec = {
    "description": {
        "type": "string",
        "required": True,
        "description": "What the sub-agent does, in 3-8 words (shown to the user).",
    },
    "prompt": {"type": "string", "required": True, "description": "The complete task for the sub-agent."},
    "tools": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Optional: the only tools it may use (names of your own tools).",
    },
    "model": {"type": "string", "description": "Optional: the model it asks (default: yours)."},
    "background": {
        "type": "boolean",
        "description": "Start it in the background and return a task id instead of waiting.",
    },
}

OUTPUT_PARAMETERS: SchemaSpec = {
    "task_id": {"type": "string", "required": True, "description": "The id `subagent` returned."},
    "wait": {"type": "boolean", "description": "Wait for the sub-agent to finish (default: report at once)."},
}

CANCEL_PARAMETERS: SchemaSpec = {
    "task_id": {"type": "string", "required": True, "description": "The id `subagent` returned."},
}


class SubagentArgs(TypedDict, total=False):
    description: Required[str]
    prompt: Required[str]
    tools: list[str]
    model: str
    background: bool


class OutputArgs(TypedDict):
    task_id: str
    wait: NotRequired[bool]


class CancelArgs(TypedDict):
    task_id: str


def present_subagent_call(args: SubagentArgs) -> ToolCallPresentation:
    """The description as title; the prompt as content."""
    title = args["description"].strip() or "Sub-agent"
    background = " (background)" if args.get("background") is True else ""
    return ToolCallPresentation(
        title=f"{title}{background}", kind="other", raw_input=dict(args), content=(text(args["prompt"]),)
    )


def answer_text(result: SubagentResult) -> str:
    """The model-facing report of a settled run: its answer, and a status line unless it completed."""
    answer = result.output or "(the sub-agent gave no answer)"
    if result.status == "completed":
        return answer
    detail = f" ({reason_kind(result.reason)})" if result.reason else ""
    return f"{answer}\n[sub-agent task {result.task_id} {result.status}{detail}]"


class SubagentTools:
    """The three tools of one plugin load, over the ``subagents`` service handle of its context."""

    def __init__(self, subagents: Subagents) -> None:
        self.subagents = subagents

    def definitions(self) -> list[ToolDefinition]:
        return [
            define_tool(
                "subagent", SUBAGENT_DESCRIPTION, SUBAGENT_PARAMETERS, self.start, present_call=present_subagent_call
            ),
            define_tool(
                "subagent_output",
                "Report a background sub-agent's answer (or that it still runs); `wait: true` waits for it.",
                OUTPUT_PARAMETERS,
                self.output,
                present_call=lambda args: ToolCallPresentation(
                    title=f"Read sub-agent task {args['task_id']}", kind="other", raw_input=dict(args)
                ),
                concurrency_safe=True,  # it only reads (or waits for) a run's outcome
            ),
            define_tool(
                "subagent_cancel",
                "Stop a background sub-agent (its running tools with it).",
                CANCEL_PARAMETERS,
                self.cancel,
                present_call=lambda args: ToolCallPresentation(
                    title=f"Cancel sub-agent task {args['task_id']}", kind="other", raw_input=dict(args)
                ),
            ),
        ]

    async def start(self, args: SubagentArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        parent = _caller(execution)
        request = SubagentRequest(
            prompt=args["prompt"],
            description=args["description"],
            tools=tuple(args["tools"]) if "tools" in args else None,
            model=args.get("model") or None,
            call_id=execution.call_id,
            background=args.get("background") is True,
        )
        run = await self.subagents.spawn(parent, request)
        if request.background:
            return (
                text(
                    f"started background sub-agent task {run.task_id}. Collect its answer with "
                    "subagent_output, or stop it with subagent_cancel."
                ),
            )
        try:
            result = await run.wait()
        except asyncio.CancelledError:
            run.cancel("the parent's call was cancelled")
            await run.wait()
            raise
        if result.status != "completed":
            raise HarnessError(answer_text(result), "SUBAGENT_" + result.status.upper())
        return (text(answer_text(result)),)

    async def output(self, args: OutputArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        run = self._run(args["task_id"], execution)
        result = run.result
        if result is None and args.get("wait") is True:
            result = await run.wait()
        if result is None:
            return (text(f"sub-agent task {run.task_id} is still running"),)
        return (text(answer_text(result)),)

    async def cancel(self, args: CancelArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        run = self._run(args["task_id"], execution)
        if run.result is not None:
            return (text(f"sub-agent task {run.task_id} had already finished ({run.result.status})"),)
        run.cancel("cancelled by subagent_cancel")
        await run.wait()
        return (text(f"cancelled sub-agent task {run.task_id}"),)

    def _run(self, task_id: str, execution: ToolExecution) -> SubagentRun:
        run = self.subagents.get(task_id)
        if run is None:
            raise HarnessError(f"unknown sub-agent task {task_id!r}: use the id subagent returned", "INVALID_ARGS")
        if run.parent is not execution.agent:
            raise HarnessError(f"sub-agent task {task_id} belongs to another agent", "FORBIDDEN")
        return run


def _caller(execution: ToolExecution) -> Agent:
    agent = execution.agent
    if not isinstance(agent, Agent):
        raise HarnessError("the subagent tool needs a calling agent (it runs inside an agent's turn)", "INVALID_ARGS")
    return agent
