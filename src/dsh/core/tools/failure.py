"""Turning a failed tool call into an ``isError`` result the model can read (SPEC §6.2).

The text is ``Error: <message>``. Python raises only exceptions, so the message of
the reference's non-exception throws (SPEC §17.38) is read as follows:

* ``str(error)`` when it is not empty (``raise RuntimeError("kaboom")`` → ``kaboom``);
* else a non-empty string ``message`` attribute (an exception object that carries
  its text only in ``.message`` → that text);
* else the class name (``raise RuntimeError()`` → ``RuntimeError``), our analogue of
  JavaScript's ``[object Object]``.

Structured ``error`` info (:class:`~dsh.core.session.ToolErrorInfo`, ``{name, code}``)
is attached only for ``HarnessError``.
"""

from __future__ import annotations

from msgspec import UNSET

from dsh.core.errors import HarnessError
from dsh.core.llm.types import TextBlock
from dsh.core.session.types import ToolErrorInfo
from dsh.core.tools.types import ToolExecutionResult


def failure_message(error: BaseException) -> str:
    """The message reported for ``error`` (see the module docstring)."""
    text = str(error)
    if text:
        return text
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    return type(error).__name__


def tool_error_result(call_id: str, error: BaseException) -> ToolExecutionResult:
    """The ``isError`` result of call ``call_id`` that failed with ``error``."""
    return ToolExecutionResult(
        call_id=call_id,
        content=(TextBlock(text=f"Error: {failure_message(error)}"),),
        is_error=True,
        error=ToolErrorInfo(name=error.name, code=error.code) if isinstance(error, HarnessError) else UNSET,
    )
