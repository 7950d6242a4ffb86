"""``dsh chat``: the interactive chat.

Boots the tree, creates (or with ``--resume`` resumes) the agent, and runs the
``ui-stdio`` chat on it (:func:`~dsh.plugins.ui_stdio.create_stdio_chat`): each line
typed goes to the agent (``send`` when idle, ``steer`` while it works). At end of
input the chat ends once the agent has settled; the tree is then disposed, which
flushes the session log.

On a terminal (stdout is a tty, no ``--plain``) the answers are drawn by
:class:`~dsh.cli.terminal.TerminalView` (markdown, a spinner, tool cards);
otherwise ui-stdio prints plain text. A line typed while the agent works steers it;
on a terminal it is shown on a line of its own once entered (keys typed while the
answer streams are not echoed, so they never land inside it). Ctrl-C aborts the turn in progress (the log
records ``aborted``); at the idle prompt the first one drops the half-typed line (the
terminal discards it) and says so, and a second one in a row ends the chat (status 130). SIGTERM and
SIGHUP abort the turn in progress and end the chat once it has ended (status 143 /
129); a second one ends it at once.

A tool call that needs the user's approval is asked inline (:mod:`dsh.cli.approve`):
the request is printed with ``allow? [y]es / [n]o / [a]lways`` and the next line
typed answers it; Ctrl-C at the question cancels the turn. With stdin not a terminal
nothing is asked (the call is not allowed, and stderr says which flag allows it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from dsh.cli.agent import EXIT_INTERRUPTED, MAIN_AGENT, agent_model, start_agent
from dsh.cli.approve import InlineApprover
from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.permission_flags import apply_permission_flags
from dsh.cli.profile import DEMO_MODEL, Tree, resolve_tree
from dsh.cli.run import INTERRUPT_REASON
from dsh.cli.settings import Settings
from dsh.cli.signals import SIGNAL_REASON, SIGNAL_STATUS, STOP_SIGNALS, on_numbered_signals
from dsh.core.agent import AGENT_QUEUED, AGENTS, Agent
from dsh.core.approval import APPROVAL_REQUEST
from dsh.kernel import Context, PluginSpec

if TYPE_CHECKING:  # the rich console is imported only on a terminal
    from rich.console import Console


class _Discard:
    """A text sink that drops everything (ui-stdio's own rendering, when the terminal view draws)."""

    def write(self, text: str, /) -> int:
        return len(text)

    def flush(self) -> None:
        return None


CLEARED_NOTICE = "(input cleared: press Ctrl-C again, or Ctrl-D, to quit)"
"""What the first Ctrl-C at the idle prompt prints."""


async def echoed(lines: AsyncIterable[str], agent: Agent, show: Callable[[str], None]) -> AsyncIterator[str]:
    """``lines``, each one typed while ``agent`` runs first shown by ``show`` (stripped; blank ones not)."""
    async for line in lines:
        if agent.status == "running" and line.strip():
            show(line.strip())
        yield line


def welcome_text(session_id: str, model: str | None, *, resumed: bool) -> str:
    """The banner: what runs, on which session, and how to quit."""
    what = "resumed session" if resumed else "session"
    line = f"dsh chat · {what} {session_id} · model {model or '(none)'}"
    if model == DEMO_MODEL:
        line += " (the keyless demo: a scripted model that runs real bash commands)"
    return f"{line}\nType a message and press Enter. Ctrl-C aborts a turn; Ctrl-D quits."


async def chat(
    tree: Tree,
    settings: Settings,
    *,
    resume: str | None = None,
    plain: bool = True,
    stdin: int | None = None,
    console: Console | None = None,
    max_steps: int | None = None,
    flags: argparse.Namespace | None = None,
) -> int:
    """Run the chat on ``tree``; ``plain`` selects ui-stdio's text over the terminal view.

    ``max_steps`` (``--max-steps``) caps the steps of each turn (None: the tree's setting);
    ``flags`` holds ``--permission-mode``, ``--approval-policy`` and ``--yes``
    (:func:`~dsh.cli.permission_flags.apply_permission_flags`).
    ``stdin`` is the descriptor lines are read from (default: this process's);
    ``console`` the rich console of the terminal view (default: one on stdout).
    Returns the exit status: 0 after end of input, 130 after a Ctrl-C while idle.
    """
    from dsh.plugins.ui_stdio import PROMPT, StdioRuntime, create_stdio_chat, read_lines

    in_fd = sys.stdin.fileno() if stdin is None else stdin
    async with booted(tree) as root:
        agent = await start_agent(root, tree, settings, resume, max_steps=max_steps)
        await apply_permission_flags(root, agent, flags or argparse.Namespace())
        banner = welcome_text(agent.session.id, agent_model(root, tree), resumed=resume is not None)
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def finish(code: int) -> None:
            if not done.done():
                done.set_result(code)

        interactive = os.isatty(in_fd)
        view = None
        if plain:
            output: Any = sys.stdout
        else:
            from rich.console import Console

            from dsh.cli.terminal import TerminalView

            screen = console if console is not None else Console()
            view = TerminalView(root, agent, screen, in_fd if interactive else None)
            view.welcome(banner)
            output = _Discard()

        def show(message: str) -> None:
            if view is not None:
                view.question(message)
            else:
                sys.stdout.write(message)
                sys.stdout.flush()

        approver = InlineApprover(agent, show, interactive=interactive)
        root.on(APPROVAL_REQUEST, approver.on_request)
        notice = view.notice if view is not None else None  # command replies
        lines = approver.route(read_lines(in_fd))
        if view is not None and interactive:
            lines = echoed(lines, agent, view.typed)
        runtime = StdioRuntime(input=lines, output=output, exit=finish, notice=notice)
        config = {"welcome": banner, "agent": MAIN_AGENT, "oneTurnPerLine": not interactive}

        def start(ctx: Context, _raw: Any) -> Any:
            return create_stdio_chat(ctx, config, runtime)

        stopping: list[asyncio.Task[None]] = []

        async def stop(status: int) -> None:
            await agent.when_idle()
            finish(status)

        def interrupt(number: int) -> None:
            if number != signal.SIGINT:
                if stopping:  # a second SIGTERM / SIGHUP: stop waiting for the turn
                    finish(SIGNAL_STATUS[number])
                    return
                agent.cancel(SIGNAL_REASON[number])
                stopping.append(asyncio.ensure_future(stop(SIGNAL_STATUS[number])))
            elif agent.status == "running":
                agent.cancel(INTERRUPT_REASON)
            elif not armed:  # the terminal dropped the half-typed line; say so and ask again
                armed.append(True)
                if view is not None:
                    view.notice(CLEARED_NOTICE)
                else:
                    sys.stdout.write(f"\n{CLEARED_NOTICE}{PROMPT}")
                    sys.stdout.flush()
            else:
                finish(EXIT_INTERRUPTED)

        armed: list[bool] = []  # a Ctrl-C at the idle prompt asked for a second one
        root.on(AGENT_QUEUED, lambda *_args: armed.clear())

        try:
            with on_numbered_signals(interrupt, *STOP_SIGNALS):
                await root.plugin(PluginSpec(name="dsh-chat", inject=[AGENTS.name], apply=start))
                code = await done
        finally:
            for task in stopping:
                task.cancel()
            if view is not None:
                view.close()
        if plain:
            sys.stdout.write("\n")
            sys.stdout.flush()
        return code


async def command(args: argparse.Namespace) -> int:
    """The ``chat`` subcommand."""
    try:
        settings = Settings.from_args(args)
        tree = resolve_tree(settings, writes=True)
        plain = bool(args.plain) or not sys.stdout.isatty()
        with logging_to_stderr(settings.verbose, debug=settings.debug):
            return await chat(
                tree, settings, resume=args.resume, plain=plain, max_steps=getattr(args, "max_steps", None), flags=args
            )
    except CliError as error:
        return report(error)
