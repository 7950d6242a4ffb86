"""The ``bash``, ``bash_output`` and ``bash_kill`` tools over a :class:`BashExecutor` (SPEC §9c).

Each :class:`BashTools` belongs to one load of the plugin: it remembers which agent
started each background task (the owner) so that only that agent can read or kill
it, and it turns task completions into a context notice for the owner.
"""

from __future__ import annotations

import math
import os
from typing import NotRequired, Required, TypedDict, cast

from dsh.core.agent import Agent
from dsh.core.bash import BashExecRequest, BashExecutor, BashTask
from dsh.core.errors import HarnessError, error_code
from dsh.core.llm import ContentBlock, PluginSource, TextBlock, text
from dsh.core.session import SessionHeader
from dsh.core.tools import (
    SchemaSpec,
    ToolCallPresentation,
    ToolDefinition,
    ToolExecution,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
    define_tool,
)
from dsh.plugins.tool_bash.render import json_text, parse_exit_status, render_result, status_line

PLUGIN_NAME = "tool-bash"

BASH_DESCRIPTION = (
    "Run a shell command with `bash -c` and return its output.\n"
    "- Every call starts a fresh shell: `cd` does not carry over to the next call, so pass "
    "`workdir` instead of changing directory.\n"
    "- A non-zero exit is reported as `[exit code: N]` after the output; it is not a tool error.\n"
    "- Long output is cut to its last part, with the path of a file holding all of it.\n"
    "- Set `run_in_background: true` for long-running commands (servers, watchers): the call "
    "returns a task id at once; read the output with `bash_output` and stop it with `bash_kill`."
)

BASH_PARAMETERS: SchemaSpec = {
    "command": {"type": "string", "required": True, "description": "The command to run."},
    "description": {
        "type": "string",
        "description": "Optional: what the command does in 5-10 words, active voice (shown to the user, never run).",
    },
    "timeoutMs": {"type": "number", "description": "Timeout in milliseconds (the executor caps it)."},
    "workdir": {
        "type": "string",
        "description": "Directory to run in; defaults to the session workspace, relative paths resolve against it.",
    },
    "run_in_background": {
        "type": "boolean",
        "description": "Start the command in the background and return a task id instead of waiting.",
    },
}

TASK_PARAMETERS: SchemaSpec = {
    "task_id": {"type": "string", "required": True, "description": "The id returned when the task was started."},
}


class BashArgs(TypedDict, total=False):
    command: Required[str]
    description: NotRequired[str]
    timeoutMs: float
    workdir: str
    run_in_background: bool


class TaskArgs(TypedDict):
    task_id: str


def _invalid(message: str) -> HarnessError:
    return HarnessError(message, "INVALID_ARGS")


def session_cwd(agent: object | None) -> str | None:
    """The calling agent's session workspace (``session.header.cwd``), if it has one."""
    header = getattr(getattr(agent, "session", None), "header", None)
    cwd = header.cwd if isinstance(header, SessionHeader) else None
    return cwd if isinstance(cwd, str) and cwd else None


def resolve_workdir(workdir: str | None, execution: ToolExecution) -> str | None:
    """Where a call runs: the model's workdir (relative ones against the session cwd), else
    the session cwd; None leaves the choice to the executor."""
    base = session_cwd(execution.agent)
    if not workdir:
        return base
    if base is not None and not os.path.isabs(workdir):
        return os.path.normpath(os.path.join(base, workdir))
    return workdir


TITLE_CHARS = 80
"""The longest card title taken from a command's first line."""


def command_title(command: str) -> str:
    """A card title for ``command``: its first non-blank line, cut to :data:`TITLE_CHARS`
    characters; ``…`` marks that something was left out (more text or more lines)."""
    lines = [line.strip() for line in command.strip().splitlines()]
    first = lines[0] if lines else ""
    if len(first) > TITLE_CHARS:
        return first[: TITLE_CHARS - 1].rstrip() + "…"
    return first + " …" if len(lines) > 1 else first


def present_bash_call(args: BashArgs) -> ToolCallPresentation:
    """The command's first line as title, the description (when given) as content, a
    terminal card (unless background)."""
    command = args["command"]
    background = args.get("run_in_background") is True
    description = args.get("description", "").strip()
    return ToolCallPresentation(
        title=command_title(command),
        kind="execute",
        raw_input=dict(args),  # the arguments object, as ACP clients show it
        content=(text(description),) if description else None,
        terminal=None if background else ToolTerminal(cwd=args.get("workdir")),
    )


def present_bash_result(args: BashArgs, result: ToolResult) -> ToolResultPresentation | None:
    """The output fenced as a console block; for a foreground success, also a terminal card
    with the raw output and the exit parsed back from the markers."""
    if len(result.content) != 1:
        return None
    block = result.content[0]
    if type(block) is not TextBlock:
        return None
    raw = block.text
    content = (text("```console\n" + raw.rstrip("\n") + "\n```"),)
    if args.get("run_in_background") is True or result.is_error:
        return ToolResultPresentation(content=content)
    status = parse_exit_status(raw)
    return ToolResultPresentation(
        content=content, terminal=ToolTerminal(output=raw, exit_code=status.exit_code, signal=status.signal)
    )


class BashTools:
    """The three tools of one plugin load, sharing its task-ownership record.

    ``bash`` is the executor handle of the plugin's context. Owners are recorded when
    an agent starts a background task and kept after the task ends; a task with an
    owner is reachable only from that same agent object (a call without an agent
    cannot reach it); a task without an owner is open to every caller.
    """

    def __init__(self, bash: BashExecutor) -> None:
        self.bash = bash
        self.owners: dict[str, object] = {}

    def definitions(self) -> list[ToolDefinition]:
        return [
            define_tool(
                "bash",
                BASH_DESCRIPTION,
                BASH_PARAMETERS,
                self.run,
                present_call=present_bash_call,
                present_result=present_bash_result,
            ),
            define_tool(
                "bash_output",
                "Read the output a background bash task produced since the last read, and its status.",
                TASK_PARAMETERS,
                self.output,
                present_call=lambda args: ToolCallPresentation(
                    title=f"Read output from background task {args['task_id']}",
                    kind="execute",
                    raw_input=dict(args),
                ),
                concurrency_safe=True,  # it only reads a task's buffered output
                read_only=True,
            ),
            define_tool(
                "bash_kill",
                "Stop a background bash task (its whole process group).",
                TASK_PARAMETERS,
                self.kill,
                present_call=lambda args: ToolCallPresentation(
                    title=f"Kill background task {args['task_id']}", kind="execute", raw_input=dict(args)
                ),
                read_only=True,  # it stops the agent's own task and changes no file
            ),
        ]

    # ------------------------------------------------------------------- tools
    async def run(self, args: BashArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        command = args["command"]
        if not command.strip():
            raise _invalid("invalid command: expected a non-empty string")
        timeout = args.get("timeoutMs")
        if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
            raise _invalid(f"invalid timeoutMs: expected a positive number, got {json_text(timeout)}")
        request = BashExecRequest(
            command=command,
            workdir=resolve_workdir(args.get("workdir"), execution),
            timeout_ms=timeout,
            signal=execution.signal,
            agent=execution.agent,
            workspace=session_cwd(execution.agent),
        )
        if args.get("run_in_background") is True:
            task = self.bash.start(self.bash.resolve(request))
            if execution.agent is not None:
                self.owners[task.id] = execution.agent
            return (text(f"started background task {task.id}"),)
        result = await self.bash.run(self.bash.resolve(request))
        if result.aborted:
            raise HarnessError("command aborted", "ABORTED")
        return (text(render_result(result)),)

    async def output(self, args: TaskArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        task_id = self._task_id(args, execution)
        read = self.bash.read_output(task_id)
        body = read.delta or "(no new output)"
        if read.lossy:
            paths = [path for path in (read.stdout_spill_path, read.stderr_spill_path) if path is not None]
            where = ", ".join(paths) or "(unavailable)"
            body += f"\n[some output was dropped from memory; full output: {where}]"
        return (text(f"{body}\n{status_line(read.task)}"),)

    async def kill(self, args: TaskArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        task_id = self._task_id(args, execution)
        if self.bash.kill(task_id):
            return (text(f"killed background task {task_id}"),)
        return (text(f"task {task_id} had already finished"),)

    def _task_id(self, args: TaskArgs, execution: ToolExecution) -> str:
        task_id = args["task_id"]
        if not task_id.strip():
            raise _invalid(f"invalid task_id: expected a string, got {json_text(task_id)}")
        if task_id in self.owners and self.owners[task_id] is not execution.agent:
            raise HarnessError(f"task {task_id} belongs to another session", "FORBIDDEN")
        return task_id

    # ----------------------------------------------------------------- notices
    def notify_owner(self, task: BashTask) -> None:
        """Tell the owning agent (if any) that ``task`` finished, as durable context.

        An owner that is already disposed is skipped; any other failure propagates
        (to the executor, which logs it).
        """
        owner = self.owners.get(task.id)
        if owner is None:
            return
        notice = f"background bash task {task.id} finished {status_line(task)}. Read its output with bash_output."
        try:
            cast(Agent, owner).inject((text(notice),), source=PluginSource(plugin=PLUGIN_NAME))
        except Exception as error:
            if error_code(error) != "DISPOSED":
                raise
