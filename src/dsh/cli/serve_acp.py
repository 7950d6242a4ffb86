"""``dsh acp``: serve the Agent Client Protocol on stdin/stdout (SPEC §14).

Boots the tree, then loads the ``acp`` bridge (``dsh.acp``) over this process's
stdin and stdout; every ACP session gets an agent asking the tree's model with the
system prompt. It serves until the client closes stdin, or until SIGINT/SIGTERM,
then unloads the bridge (prompts settle, agents go idle), disposes the tree (logs
flush) and exits 0.

When no tree can be resolved (no API key, an unreadable ``--config``) or the built-in
profile's sessions root cannot be written (a file, no permission), the problem
is printed on stderr and still served to the editor: ``initialize`` is answered and
``session/new`` / ``session/load`` / ``session/prompt`` fail with that message
(:func:`dsh.acp.serve_unconfigured`), until stdin closes; the exit status is then the
problem's (2 for a missing key).

stdout carries nothing but protocol frames: the bridge writes through its own
duplicate of the descriptor, and while it serves, the descriptor itself points at
stderr, so a stray print can never corrupt the stream. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING

from dsh import __version__
from dsh.cli.agent import agent_model
from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.profile import DEFAULT_SYSTEM_PROMPT, Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.cli.signals import first_of, on_signals
from dsh.kernel import Context, ServiceKey

if TYPE_CHECKING:
    from dsh.acp import Config

AGENT_NAME = "dsh"
"""The agent name announced in the ``initialize`` answer."""


def _bridge_config(settings: Settings, model: str | None) -> Config:
    import dsh.acp as acp  # off the import path of the other subcommands

    return acp.Config(
        model=model,
        system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
        agent_name=AGENT_NAME,
        agent_version=__version__,
    )


def _missing_services(root: Context, names: list[str]) -> list[str]:
    return [name for name in names if root.get(ServiceKey(name)) is None]


async def serve(
    tree: Tree,
    settings: Settings,
    *,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
) -> int:
    """Serve ACP on ``tree`` over the given descriptors (default: this process's) and return 0.

    Raises :class:`CliError` when the tree lacks a service the bridge needs.
    """
    import dsh.acp as acp

    async with booted(tree) as root:
        missing = _missing_services(root, list(acp.inject))
        if missing:
            raise CliError(
                f"{tree.label} lacks the {', '.join(missing)} service(s) the ACP bridge needs: "
                "add the plugins that provide them"
            )
        config = _bridge_config(settings, agent_model(root, tree))
        in_fd = sys.stdin.fileno() if stdin is None else stdin
        out_fd = sys.stdout.fileno() if stdout is None else stdout
        err_fd = sys.stderr.fileno() if stderr is None else stderr
        transport = await acp.StdioTransport.open(in_fd, out_fd)
        saved = os.dup(out_fd)
        os.dup2(err_fd, out_fd)
        stop = asyncio.Event()
        try:
            with on_signals(stop.set, signal.SIGINT, signal.SIGTERM):
                await first_of(asyncio.ensure_future(acp.run_acp(root, config, transport=transport)), stop)
        finally:
            await transport.aclose()
            os.dup2(saved, out_fd)
            os.close(saved)
    return 0


async def serve_unconfigured(
    problem: CliError, settings: Settings, *, stdin: int | None = None, stdout: int | None = None
) -> int:
    """Report ``problem`` on stderr, serve it to the editor until stdin closes, return its status."""
    import dsh.acp as acp

    status = report(problem)
    in_fd = sys.stdin.fileno() if stdin is None else stdin
    out_fd = sys.stdout.fileno() if stdout is None else stdout
    transport = await acp.StdioTransport.open(in_fd, out_fd)
    stop = asyncio.Event()
    try:
        with on_signals(stop.set, signal.SIGINT, signal.SIGTERM):
            served = acp.serve_unconfigured(problem.message, _bridge_config(settings, None), transport)
            await first_of(asyncio.ensure_future(served), stop)
    finally:
        await transport.aclose()
    return status


async def command(args: argparse.Namespace) -> int:
    """The ``acp`` subcommand."""
    try:
        settings = Settings.from_args(args)
    except CliError as error:
        return report(error)
    with logging_to_stderr(settings.verbose):
        try:
            tree = resolve_tree(settings, writes=True)
        except CliError as error:
            return await serve_unconfigured(error, settings)
        try:
            return await serve(tree, settings)
        except CliError as error:
            return report(error)
