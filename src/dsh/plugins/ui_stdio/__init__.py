"""``ui-stdio``: a line-oriented terminal chat with one agent (SPEC §15).

Typed lines go to one agent (``send`` when idle, ``steer`` while running); every agent's
streamed text, dimmed reasoning, turn markers and tool activity are printed; at end of
input the process exits once the work it started has settled.

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``); load it as ``ui-stdio`` or ``dsh.plugins.ui_stdio``. Front ends that own
the terminal themselves (``dsh chat``) call :func:`create_stdio_chat` with their own
:class:`StdioRuntime`, for instance::

    done = asyncio.get_running_loop().create_future()
    runtime = StdioRuntime(input=read_lines(0), output=sys.stdout, exit=done.set_result)
    create_stdio_chat(ctx, {"agent": "main"}, runtime)
    code = await done          # then dispose the root context and exit with code
"""

from dsh.kernel import Timer, TimerHandle  # the shape of call_later its runtime takes
from dsh.plugins.ui_stdio.chat import (
    EXIT_DELAY,
    StdioChatConfig,
    StdioRuntime,
    TextSink,
    chat_config,
    create_stdio_chat,
)
from dsh.plugins.ui_stdio.lines import read_lines
from dsh.plugins.ui_stdio.plugin import Config, apply, exit_process, inject, name, stdio_runtime
from dsh.plugins.ui_stdio.render import DIM, PROMPT, RESET, Renderer

__all__ = [
    "DIM",
    "EXIT_DELAY",
    "PROMPT",
    "RESET",
    "Config",
    "Renderer",
    "StdioChatConfig",
    "StdioRuntime",
    "TextSink",
    "Timer",
    "TimerHandle",
    "apply",
    "chat_config",
    "create_stdio_chat",
    "exit_process",
    "inject",
    "name",
    "read_lines",
    "stdio_runtime",
]
