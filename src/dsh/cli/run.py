"""``dsh run PROMPT``: one prompt, headless.

Boots the tree, creates (or with ``--resume`` resumes) the agent, prints the session
id on stderr, sends the prompt and streams the answer to stdout (``--json``: every
new session event as a JSON line instead), then disposes everything, which flushes
the session log. The exit status says how the turn ended (see ``dsh run --help``).

``--json`` ends with one ``run/summary`` line (:class:`~dsh.cli.usage.RunSummary`:
session id, turns, steps, usage, cost, duration, end reason). ``--fork ID`` continues
a new fork of session ``ID`` (cut after its last completed turn) instead of a new
session; ``--max-cost USD`` loads the ``budget`` plugin, which ends the turn with
reason ``max-cost`` once the session has cost that much.

Any ``agent/error`` during the turn (a failed checkpoint of the log, say) makes the
run fail even when the turn completed; it is printed on stderr after the turn's
outcome unless that already names it, and each failure is said once however many
layers report it (:class:`~dsh.cli.errors.Once`). Before anything boots, the
built-in profile's sessions root is checked (:func:`~dsh.cli.settings.check_sessions_root`).

``--max-steps N`` caps the steps of each turn (a turn cut off ends ``max-steps``,
exit status 4, and the message names the flag); ``--max-turns N`` caps how many
turns the run lets the agent take, counting turns a plugin starts after the
prompt's own (:mod:`dsh.cli.limits`): queued input beyond it is dropped and the run
exits 4 saying so.

``--permission-mode``, ``--approval-policy`` and ``--yes`` set what the agent may do
(:mod:`dsh.cli.permission_flags`). Nobody can answer an approval in a headless run,
so without ``--yes`` a call the mode does not cover is refused (the model reads why);
when the turn completed with a refused call, one line names the flag that allows it
and the run exits 5.

When stdout's reader goes away (``dsh run ... | head``) the turn is cancelled
(reason ``output closed``) and the run exits 141 without a word.

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
import time

from dsh.cli import errors
from dsh.cli.agent import (
    EXIT_COMPLETED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_LIMIT,
    TurnOutcome,
    describe_reason,
    exit_status,
    start_agent,
    turn_outcome,
)
from dsh.cli.announce import announce_session
from dsh.cli.answer import EventLines, TextAnswer, detach_stdout
from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.limits import TurnBudget
from dsh.cli.permission_flags import EXIT_REFUSED, Refusals, apply_permission_flags
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.cli.signals import SIGNAL_REASON, SIGNAL_STATUS, STOP_SIGNALS, first_of, on_numbered_signals
from dsh.cli.usage import price_of, run_summary
from dsh.core.agent import AGENT_ERROR, Agent
from dsh.core.llm import text
from dsh.core.persistence import json_text
from dsh.core.session import ErrorReason
from dsh.core.usage import summarize_usage
from dsh.kernel import Context
from dsh.plugins import budget

INTERRUPT_REASON = SIGNAL_REASON[signal.SIGINT]
"""The abort reason a Ctrl-C (SIGINT) leaves in the log."""


OUTPUT_CLOSED_REASON = "output closed"
"""The abort reason when stdout's reader went away (``dsh run ... | head``)."""

EXIT_OUTPUT_CLOSED = 141
"""The exit status then (as a process killed by SIGPIPE reports it), with nothing more said."""


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


async def load_budget(root: Context, max_cost: float | None) -> None:
    """Load the ``budget`` plugin with ``maxCost`` into the booted tree (nothing for None).

    Raises :class:`CliError` (status 2) for a budget that is not above 0.
    """
    if max_cost is None:
        return
    if not max_cost > 0:
        raise CliError(f"--max-cost must be above 0 (US dollars), got {max_cost}", 2)
    await root.plugin(budget, {"maxCost": max_cost})


async def run_prompt(
    tree: Tree,
    settings: Settings,
    prompt: str,
    *,
    json: bool,
    resume: str | None,
    fork: str | None = None,
    max_cost: float | None = None,
    max_steps: int | None = None,
    max_turns: int | None = None,
    flags: argparse.Namespace | None = None,
) -> int:
    """Run one turn for ``prompt`` on ``tree`` and return the exit status (see the module docstring).

    ``flags`` holds ``--permission-mode``, ``--approval-policy`` and ``--yes``
    (:mod:`dsh.cli.permission_flags`).
    """
    async with booted(tree) as root:
        await load_budget(root, max_cost)
        agent = await start_agent(root, tree, settings, resume, fork=fork, max_steps=max_steps)
        await apply_permission_flags(root, agent, flags or argparse.Namespace())
        refusals = Refusals(root)
        turn_budget = TurnBudget(root, agent, max_turns) if max_turns is not None else None
        closed: list[bool] = []

        def output_closed() -> None:
            closed.append(True)
            detach_stdout()
            agent.cancel(OUTPUT_CLOSED_REASON)

        answer = None if json else TextAnswer(root, agent, output_closed)
        if json:
            EventLines(root, agent.session, output_closed)
        failures: list[tuple[str, str]] = []

        def on_error(source: Agent, turn: int, step: int, error: BaseException) -> None:
            # said after the turn's own outcome, unless that names it (later ones are logged by the agent)
            failures.append((str(error), f'agent "{source.id}": error in turn {turn}: {error}'))

        root.on(AGENT_ERROR, on_error)
        announce_session(root, agent, _say, new=resume is None and fork is None)
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

        started = time.monotonic()
        with on_numbered_signals(interrupt, *STOP_SIGNALS):
            agent.send([text(prompt)])
            settled = await first_of(asyncio.ensure_future(agent.when_idle()), force)
        if answer is not None:
            answer.end_line()
        signalled = SIGNAL_STATUS[received[0]] if received else None
        if closed:
            return EXIT_OUTPUT_CLOSED
        if not settled:
            _say("exiting without waiting for the turn to end")
            return SIGNAL_STATUS[received[0]]
        outcome = turn_outcome(agent.session, since)
        if json:
            duration_ms = int((time.monotonic() - started) * 1000)
            usage = summarize_usage(agent.session.events, price_of(agent.options.model), start=since)
            summary = run_summary(agent.session.id, usage, duration_ms, outcome.reason)
            print(json_text(summary), flush=True)
        status = _report(outcome, signalled, failures, key_hint(tree, settings))
        refusal = refusals.report(agent, since)
        if refusal is not None:
            errors.ONCE.say(refusal)
            if status == EXIT_COMPLETED:
                status = EXIT_REFUSED
        if turn_budget is not None and turn_budget.stopped and status == EXIT_COMPLETED:
            errors.ONCE.say(
                f"stopped after {turn_budget.turns} turns (--max-turns {turn_budget.limit}) with more work queued; "
                "raise --max-turns to let the agent go on"
            )
            return EXIT_LIMIT
        return status


def key_hint(tree: Tree, settings: Settings) -> str:
    """What to check when the provider refuses the key (an ``AUTH`` error)."""
    if tree.file is not None:
        return f"check the API key the model entry of {tree.file} uses"
    return f"check ${settings.key_env} (the API key the provider refused)"


def _report(outcome: TurnOutcome, signalled: int | None, failures: list[tuple[str, str]], hint: str) -> int:
    """Say how the turn ended (when not completed) and the agent errors it does not name; the exit status.

    An ``AUTH`` error gets ``hint`` (which variable holds the key).
    """
    if outcome.turn is None:
        status, said = EXIT_FAILED, "the prompt did not start a turn"
    else:
        status = exit_status(outcome.reason)
        if signalled is not None and status == EXIT_INTERRUPTED:
            status = signalled
        said = f"turn {outcome.turn} ended: {describe_reason(outcome.reason)}" if status != 0 else ""
        if type(outcome.reason) is ErrorReason and outcome.reason.code == "AUTH":
            said += f"; {hint}"
    if said:
        errors.ONCE.say(said)
    elif failures:
        status = EXIT_FAILED
    for message, line in failures:
        if message not in said:
            errors.ONCE.say(line)
    return status


async def command(args: argparse.Namespace) -> int:
    """The ``run`` subcommand."""
    try:
        settings = Settings.from_args(args)
        prompt = read_prompt(list(args.prompt))
        tree = resolve_tree(settings, writes=True)
        with logging_to_stderr(settings.verbose, debug=settings.debug):
            return await run_prompt(
                tree,
                settings,
                prompt,
                json=bool(args.json),
                resume=args.resume,
                fork=args.fork,
                max_cost=args.max_cost,
                max_steps=getattr(args, "max_steps", None),
                max_turns=getattr(args, "max_turns", None),
                flags=args,
            )
    except CliError as error:
        return report(error)
