"""``dsh run PROMPT``: one prompt, headless.

Boots the tree, creates (or with ``--resume`` resumes) the agent, prints the session
id on stderr, sends the prompt and streams the answer to stdout (``--json``: every
new session event as a JSON line instead), then disposes everything, which flushes
the session log. The exit status says how the turn ended (see ``dsh run --help``).

Any ``agent/error`` during the run (a failed checkpoint of the log, say) is printed
on stderr and makes the run fail even when the turn completed.

Ctrl-C cancels the turn: the agent aborts the step in flight (killing its tool
processes) and the log records ``turn/end {"kind": "aborted", "reason":
"interrupted"}``; a second Ctrl-C stops waiting for the turn and exits at once
(status 130). SIGTERM and SIGHUP do the same with the reasons ``terminated`` and
``hangup`` and the statuses 143 and 129 (see :mod:`dsh.cli.signals`).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from dsh.cli.agent import EXIT_FAILED, EXIT_INTERRUPTED, describe_reason, exit_status, start_agent, turn_outcome
from dsh.cli.answer import EventLines, TextAnswer
from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.cli.signals import SIGNAL_REASON, SIGNAL_STATUS, STOP_SIGNALS, first_of, on_numbered_signals
from dsh.core.agent import AGENT_ERROR, Agent
from dsh.core.llm import text

INTERRUPT_REASON = SIGNAL_REASON[signal.SIGINT]
"""The abort reason a Ctrl-C (SIGINT) leaves in the log."""


def read_prompt(words: list[str]) -> str:
    """The prompt: the words joined by spaces, or all of stdin for ``-`` (or no words at all).

    Raises :class:`CliError` (status 2) for an empty prompt.
    """
    prompt = sys.stdin.read() if words in ([], ["-"]) else " ".join(words)
    if not prompt.strip():
        raise CliError("the prompt is empty: give it as arguments (dsh run 'list the files') or on stdin", 2)
    return prompt


def describe_signal(number: int) -> str:
    """``Ctrl-C`` for SIGINT, else the signal's name (``SIGTERM``)."""
    return "Ctrl-C" if number == signal.SIGINT else signal.Signals(number).name


def _say(message: str) -> None:
    print(f"dsh: {message}", file=sys.stderr, flush=True)


async def run_prompt(tree: Tree, settings: Settings, prompt: str, *, json: bool, resume: str | None) -> int:
    """Run one turn for ``prompt`` on ``tree`` and return the exit status (see the module docstring)."""
    async with booted(tree) as root:
        agent = await start_agent(root, tree, settings, resume)
        answer = None if json else TextAnswer(root, agent)
        if json:
            EventLines(root, agent.session)
        failures: list[BaseException] = []

        def on_error(source: Agent, turn: int, step: int, error: BaseException) -> None:
            failures.append(error)
            _say(f'agent "{source.id}": error in turn {turn}: {error}')

        root.on(AGENT_ERROR, on_error)
        _say(f"session {agent.session.id}")
        since = agent.session.seq
        received: list[int] = []
        force = asyncio.Event()

        def interrupt(number: int) -> None:
            received.append(number)
            if len(received) == 1:
                again = "press Ctrl-C again" if number == signal.SIGINT else "signal again"
                _say(f"{describe_signal(number)}: interrupting the turn ({again} to exit at once)")
                agent.cancel(SIGNAL_REASON[number])
            else:
                force.set()

        with on_numbered_signals(interrupt, *STOP_SIGNALS):
            agent.send([text(prompt)])
            settled = await first_of(asyncio.ensure_future(agent.when_idle()), force)
        if answer is not None:
            answer.end_line()
        signalled = SIGNAL_STATUS[received[0]] if received else None
        if not settled:
            _say("exiting without waiting for the turn to end")
            return SIGNAL_STATUS[received[0]]
        outcome = turn_outcome(agent.session, since)
        if outcome.turn is None:
            _say("the prompt did not start a turn")
            return EXIT_FAILED
        status = exit_status(outcome.reason)
        if signalled is not None and status == EXIT_INTERRUPTED:
            status = signalled
        if status != 0:
            _say(f"turn {outcome.turn} ended: {describe_reason(outcome.reason)}")
        elif failures:
            status = EXIT_FAILED
        return status


async def command(args: argparse.Namespace) -> int:
    """The ``run`` subcommand."""
    try:
        settings = Settings.from_args(args)
        prompt = read_prompt(list(args.prompt))
        tree = resolve_tree(settings)
        with logging_to_stderr(settings.verbose):
            return await run_prompt(tree, settings, prompt, json=bool(args.json), resume=args.resume)
    except CliError as error:
        return report(error)
