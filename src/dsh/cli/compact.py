"""``dsh compact ID [--instructions TEXT]``: compact a stored session's history now.

Boots the profile (or ``--config``), resumes session ``ID`` (any unique start of its
id) and asks the tree's ``compaction`` service for one manual compaction: one summary
request over the session's history, with ``TEXT`` added to the instruction. The
``compaction`` event is flushed to the log before the command exits, so the next
``dsh run --resume ID`` derives the compacted history. Prints what happened on
stdout; exits 0 when the history was compacted or there was nothing to compact, 1
when the attempt failed (it is logged all the same) or the tree has no
``compaction`` plugin.
"""

from __future__ import annotations

import argparse

from dsh.cli.agent import EXIT_COMPLETED, EXIT_FAILED, start_agent
from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.core.errors import HarnessError
from dsh.core.session import SESSION_FLUSH
from dsh.plugins.compaction import COMPACTION


async def compact_session(tree: Tree, settings: Settings, session: str, instructions: str | None) -> int:
    """Compact stored session ``session`` once; the exit status (see the module docstring)."""
    async with booted(tree) as root:
        service = root.get(COMPACTION)
        if service is None:
            raise CliError(f"{tree.label} has no compaction plugin: add an entry with name compaction")
        agent = await start_agent(root, tree, settings, session)
        try:
            result = await service.compact(agent, instructions)
        except HarnessError as error:
            raise CliError(f'cannot compact session "{agent.session.id}": {error}') from error
        await root.parallel(SESSION_FLUSH, agent.session)
        print(result.message, flush=True)
        return EXIT_COMPLETED if result.compacted or result.event is None else EXIT_FAILED


async def command(args: argparse.Namespace) -> int:
    """The ``compact`` subcommand."""
    try:
        settings = Settings.from_args(args)
        tree = resolve_tree(settings, writes=True)
        with logging_to_stderr(settings.verbose, debug=settings.debug):
            return await compact_session(tree, settings, args.id, args.instructions)
    except CliError as error:
        return report(error)
