"""The ``ui-stdio`` module plugin: the chat on the process's real stdin and stdout (SPEC §15).

``apply`` is :func:`~dsh.plugins.ui_stdio.chat.create_stdio_chat` on
:func:`stdio_runtime`: lines from stdin (read on a worker thread, see
:func:`~dsh.plugins.ui_stdio.lines.read_lines`), text to ``sys.stdout``, and
:func:`exit_process` as the exit.
"""

from __future__ import annotations

import sys
from typing import NoReturn

from dsh.core.agent import AGENTS
from dsh.kernel import Context
from dsh.plugins.ui_stdio.chat import StdioChatConfig, StdioRuntime, create_stdio_chat
from dsh.plugins.ui_stdio.lines import read_lines

name = "ui-stdio"
inject = [AGENTS.name]
Config = StdioChatConfig


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` by raising ``SystemExit`` (what ``sys.exit`` does).

    The chat calls it from an event-loop timer callback; asyncio lets ``SystemExit``
    out of the loop, so ``asyncio.run`` cancels the main coroutine (whose ``finally``
    should dispose the root context) and the interpreter exits with ``code``.
    """
    raise SystemExit(code)


def stdio_runtime() -> StdioRuntime:
    """The runtime ``apply`` uses: ``sys.stdin``'s descriptor, ``sys.stdout``, :func:`exit_process`.

    ``sys.stdin`` and ``sys.stdout`` are read when this is called (so a front end that
    redirects them first is honored); ``sys.stdin`` must have a real file descriptor.
    """
    return StdioRuntime(input=read_lines(sys.stdin.fileno()), output=sys.stdout, exit=exit_process)


def apply(ctx: Context, config: StdioChatConfig) -> None:
    """Start the chat on the real terminal on behalf of ``ctx``'s fiber; disposing the fiber stops it."""
    create_stdio_chat(ctx, config, stdio_runtime())
