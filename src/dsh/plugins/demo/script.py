"""What the demo model says (pure): a prompt becomes one bash call, a tool result a summary.

The demo model is deterministic and keyless. For the newest user prompt it plans
one ``bash`` call (:func:`plan_command`) and announces it; once the last message
carries the tool's result it summarizes that result (:func:`summarize_result`).
Every text it writes starts with :data:`LABEL` so nobody mistakes it for a real model.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from dsh.core.llm import ContentBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock, text_of
from dsh.core.session import dumps_json

LABEL = "[demo model]"
"""The prefix of every text the demo model writes."""

PREVIEW_LINES = 10
"""How many output lines a summary quotes (the last ones)."""

_END_MARKER = re.compile(r"\n\[(?:exit code: (\d+)|killed by signal: ([^\]\n]+))\]\Z")
"""The bash tool's last line when the command did not exit 0: its exit code, or the signal that killed it."""


@dataclass(frozen=True)
class PlannedCall:
    """One ``bash`` call: the arguments the bash tool takes and the words announcing it."""

    command: str
    description: str

    def arguments(self) -> str:
        """The call's arguments as the model writes them: compact JSON."""
        return dumps_json({"command": self.command, "description": self.description})


def plan_command(prompt: str) -> PlannedCall:
    """The bash call that answers ``prompt``.

    ``$ <command>`` runs the command as typed; ``echo <text>`` echoes the text
    (quoted for the shell); anything else lists the working directory with ``ls``.
    """
    stripped = prompt.strip()
    if stripped.startswith("$") and stripped[1:].strip():
        return PlannedCall(stripped[1:].strip(), "Run the command typed after $")
    word, _, rest = stripped.partition(" ")
    if word.lower() == "echo" and rest.strip():
        return PlannedCall(f"echo {shlex.quote(rest.strip())}", "Print the given text")
    return PlannedCall("ls", "List the files in the working directory")


def _texts(content: Sequence[ContentBlock]) -> list[str]:
    return [block.text for block in content if type(block) is TextBlock]


def latest_prompt(messages: Sequence[Message]) -> str:
    """The text to react to: the first text of the newest user message that is not tagged.

    A message whose first text starts with ``<`` is a tagged envelope (``<context ...>``,
    ``<steering ...>``) and is skipped, as are messages without text; ``""`` when none is left.
    """
    for message in reversed(messages):
        texts = _texts(message.content) if message.role == "user" else []
        if texts and not texts[0].startswith("<"):
            return texts[0]
    return ""


def last_tool_result(messages: Sequence[Message]) -> ToolResultBlock | None:
    """The tool result the last message carries (the last one if several), else None."""
    if not messages:
        return None
    found: ToolResultBlock | None = None
    for block in messages[-1].content:
        if type(block) is ToolResultBlock:
            found = block
    return found


def command_of(messages: Sequence[Message], call_id: str) -> str | None:
    """The ``command`` argument of the tool call ``call_id`` in the history, if readable."""
    for message in reversed(messages):
        for block in message.content:
            if type(block) is ToolCallBlock and block.id == call_id:
                try:
                    arguments = json.loads(block.arguments)
                except ValueError:
                    return None
                command = arguments.get("command") if isinstance(arguments, dict) else None
                return command if isinstance(command, str) else None
    return None


def count_tool_calls(messages: Sequence[Message]) -> int:
    """How many tool calls the history holds (the next call id is numbered after them)."""
    return sum(1 for message in messages for block in message.content if type(block) is ToolCallBlock)


def announce(call: PlannedCall) -> str:
    """The text streamed before the call."""
    return f"{LABEL} I will run `{call.command}` with the bash tool."


def summarize_result(result: ToolResultBlock, command: str | None) -> str:
    """A short report on ``result``: the exit, the line count and the last lines of output."""
    what = f"`{command}`" if command is not None else "The command"
    output = text_of(result.content)
    if result.is_error is True:
        return f"{LABEL} The bash tool could not run {what}: {output.strip() or 'no details'}"
    status = "finished"
    marker = _END_MARKER.search(output)
    if marker is not None:
        code, signal = marker.groups()
        if signal is not None:
            status = f"was killed by signal {signal}"
        elif int(code) != 0:
            status = f"exited with code {code}"
        output = output[: marker.start()]
    lines = output.rstrip("\n").split("\n") if output.strip() else []
    if not lines or output == "(no output)":
        return f"{LABEL} {what} {status} and printed nothing."
    shown = lines[-PREVIEW_LINES:]
    head = f"{LABEL} {what} {status} and printed {len(lines)} line{'s' if len(lines) != 1 else ''}"
    head += ":" if len(shown) == len(lines) else f"; the last {len(shown)}:"
    quoted = "\n".join(shown)
    return f"{head}\n\n```\n{quoted}\n```\n\nThis is the keyless demo: set DEEPSEEK_API_KEY to talk to a real model."
