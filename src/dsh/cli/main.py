"""The ``dsh`` console entry point: the parser and the dispatch to each subcommand.

``dsh --version`` prints ``dsh <version>``; ``dsh --help`` (or ``dsh`` alone) prints
the usage; both exit 0. A bad option exits 2 with the usage on stderr. Each
subcommand lives in its own module, imported only when it runs, so that ``dsh
--version`` and ``--help`` stay fast: this module imports nothing heavier than
``argparse``.

Global options (``--config``, ``--model``, ``--sessions-root``, ``--cwd``, ``--demo``,
...) are accepted before or after the subcommand name.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeAlias, cast

from dsh import __version__

RUN_EPILOG = """\
exit status:
  0    the turn completed
  1    the turn failed (the model or a tool reported an error), or it reached --max-cost,
       or dsh could not start (a bad plugin tree, an unknown session id); the reason is on stderr
  2    usage error, or no model is configured (see --demo), or a bad settings file
  3    the model stopped at its output limit (max-tokens)
  4    a limit stopped the run: the turn reached --max-steps (max-steps in the log), or
       --max-turns turns ran with more work queued; the message names the flag to raise
  5    the turn completed, but the permissions refused a tool call (the mode does not cover it
       and nobody can approve it in a headless run); the message names the flag that allows it
  129  SIGHUP (the terminal closed) aborted the turn
  130  interrupted: Ctrl-C aborted the turn (a second Ctrl-C exits at once)
  141  stdout was closed by its reader (`dsh run ... | head`): the turn was aborted
  143  SIGTERM (timeout, a CI job limit, systemd) aborted the turn
       after SIGINT, SIGTERM or SIGHUP the log records the aborted turn and the tool
       processes are killed; a second signal exits at once

The session id is printed on stderr; continue the conversation with --resume ID."""

MAIN_EPILOG = """\
models:
  DeepSeek (the default)       export DEEPSEEK_API_KEY=sk-...
  OpenAI                       export OPENAI_API_KEY=sk-...; dsh --provider openai --model gpt-4o-mini run ...
  a local OpenAI-compatible server (vLLM, Ollama, llama.cpp's llama-server):
                               export OPENAI_API_KEY=none OPENAI_BASE_URL=http://127.0.0.1:8000/v1
                               dsh --provider openai --model NAME run ...
                               (Ollama: http://127.0.0.1:11434/v1; llama-server: http://127.0.0.1:8080/v1)
  no key at all                dsh --demo run 'echo hello'   (a scripted, clearly labelled model)
  `provider:` and `model:` may also be set in $DSH_HOME/settings.yml (else ~/.config/dsh/settings.yml).

environment:
  DEEPSEEK_API_KEY   the DeepSeek API key (provider deepseek)
  DEEPSEEK_BASE_URL  another server speaking DeepSeek's chat-completions API (provider deepseek)
  OPENAI_API_KEY     the API key of provider openai
  OPENAI_BASE_URL    the base URL of provider openai (default https://api.openai.com/v1)
  DSH_HOME           where dsh keeps sessions/ and settings.yml (default ~/.local/share/dsh)

exit status:
  0 completed, 1 failed, 2 usage or configuration error, 3 max tokens, 4 --max-steps / --max-turns reached,
  5 a tool call was refused by the permissions, 129 SIGHUP, 130 interrupted (Ctrl-C),
  141 stdout closed, 143 SIGTERM; see `dsh run --help`. Failures are one line on stderr; --debug adds the traceback."""

Command: TypeAlias = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]
"""A subcommand: parsed arguments in, exit status out."""

COMMANDS: dict[str, str] = {
    "run": "dsh.cli.run",
    "chat": "dsh.cli.chat",
    "acp": "dsh.cli.serve_acp",
    "sessions": "dsh.cli.sessions",
    "config": "dsh.cli.show_config",
    "doctor": "dsh.cli.doctor",
    "batch": "dsh.cli.batch",
    "compact": "dsh.cli.compact",
}
"""Each subcommand's module; it defines ``async def command(args) -> int``."""


def positive_int(text: str) -> int:
    """An option's value as a whole number of at least 1 (argparse reports anything else)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _max_steps(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        metavar="N",
        help="end a turn after N steps (model calls) if the model still wants more "
        "(default: 100 with the built-in profile, the tree's agent-loop maxSteps with --config)",
    )


PERMISSION_MODES = ("read-only", "workspace-write", "full-access")
APPROVAL_POLICIES = ("ask", "auto", "never-ask")
"""The choices of ``--permission-mode`` and ``--approval-policy`` (``dsh.core.approval``'s, spelled here to
keep this module light)."""


def _permission_flags(parser: argparse.ArgumentParser) -> None:
    """``--permission-mode``, ``--approval-policy`` and ``--yes`` (see :mod:`dsh.cli.permission_flags`)."""
    parser.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="what the agent may do without asking: read-only, workspace-write (the default of a new session: "
        "write inside the workspace and the temp directory) or full-access; a resumed session keeps its own "
        "unless this is given",
    )
    parser.add_argument(
        "--approval-policy",
        choices=APPROVAL_POLICIES,
        help="what happens to a call the mode does not cover: ask (the default), auto (decide by the mode "
        "alone) or never-ask (refuse it)",
    )
    parser.add_argument(
        "--yes", action="store_true", help="allow every call that would be asked (each one is still logged)"
    )


def _global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Add the global options; on a subcommand (``suppress``) they only override when given."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    group.add_argument(
        "--config",
        metavar="FILE",
        default=default(None),
        help="boot this YAML plugin tree instead of the built-in profile",
    )
    group.add_argument(
        "--model", metavar="NAME", default=default(None), help="the model the agent asks (default: per profile)"
    )
    group.add_argument(
        "--provider",
        choices=("deepseek", "openai"),
        default=default(None),
        help="the built-in profile's model API: deepseek (default; DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL) or "
        "openai (OPENAI_API_KEY, OPENAI_BASE_URL: OpenAI or any OpenAI-compatible server)",
    )
    group.add_argument(
        "--sessions-root",
        metavar="DIR",
        default=default(None),
        help="where session logs live (default: $DSH_HOME/sessions or ~/.local/share/dsh/sessions)",
    )
    group.add_argument(
        "--store",
        metavar="URL",
        default=default(None),
        help="the session store: a JSONL directory, sqlite:///path/to/file or postgresql://... "
        "(default: $DSH_STORE, else JSONL under the sessions root)",
    )
    group.add_argument(
        "--cwd", metavar="DIR", default=default(None), help="the workspace of new sessions (default: here)"
    )
    group.add_argument(
        "--demo",
        action="store_true",
        default=default(False),
        help="use the keyless demo model (scripted; it runs real bash commands)",
    )
    group.add_argument("--system-prompt", metavar="TEXT", default=default(None), help="the agent's system prompt")
    group.add_argument(
        "--invariants",
        action="store_true",
        default=default(False),
        help="check the session-log contract at run time (development)",
    )
    group.add_argument(
        "--debug", action="store_true", default=default(False), help="print a traceback with an unexpected error"
    )
    group.add_argument("-v", "--verbose", action="count", default=default(0), help="log to stderr (-v info, -vv debug)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dsh``: global options and the subcommands."""
    parser = argparse.ArgumentParser(
        prog="dsh",
        description="dsh: an agent harness where everything is a plugin.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dsh {__version__}")
    _global_options(parser, suppress=False)
    shared = argparse.ArgumentParser(add_help=False)
    _global_options(shared, suppress=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        parents=[shared],
        help="send one prompt, stream the answer to stdout, exit",
        description="Headless one-shot: boot the profile, send PROMPT, stream the answer to stdout.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="*", metavar="PROMPT", help="the prompt (its words are joined; - reads stdin)")
    run.add_argument(
        "--json",
        action="store_true",
        help="print each session event this run appends as one JSON line, instead of the answer",
    )
    continued = run.add_mutually_exclusive_group()
    continued.add_argument("--resume", metavar="ID", help="continue the persisted session ID")
    continued.add_argument(
        "--fork", metavar="ID", help="continue a new fork of the persisted session ID (after its last completed turn)"
    )
    _max_steps(run)
    run.add_argument(
        "--max-turns",
        type=positive_int,
        metavar="N",
        help="let the agent run at most N turns, counting turns a plugin starts after the prompt's (default: no limit)",
    )
    run.add_argument(
        "--max-cost",
        metavar="USD",
        type=float,
        help="end the turn (reason max-cost) once the session has cost this many US dollars",
    )
    _permission_flags(run)

    chat = commands.add_parser(
        "chat",
        parents=[shared],
        help="talk with the agent interactively",
        description=(
            "Interactive chat: type a line to send it (while the agent works, it steers the turn). "
            "Ctrl-C aborts the turn in progress; Ctrl-D (end of input) quits once the agent is idle."
        ),
    )
    chat.add_argument("--resume", metavar="ID", help="continue the persisted session ID")
    chat.add_argument("--plain", action="store_true", help="plain text even on a terminal (no colors, no spinner)")
    _max_steps(chat)
    _permission_flags(chat)

    commands.add_parser(
        "acp",
        parents=[shared],
        help="serve the Agent Client Protocol on stdin/stdout (for editors)",
        description="Serve dsh to an editor over the Agent Client Protocol (JSON-RPC on stdin/stdout) "
        "until stdin closes. Logs go to stderr.",
    )

    sessions = commands.add_parser(
        "sessions",
        parents=[shared],
        help="list, show, fork, check, repair or remove persisted sessions",
        description="Inspect the sessions the persistence backend holds.",
    )
    actions = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", parents=[shared], help="list sessions: id, created, turns, cwd")
    listing.add_argument("--json", action="store_true", help="one JSON object per session")
    show = actions.add_parser(
        "show",
        parents=[shared],
        help="print a session as a transcript",
        description="Print a session as a readable transcript. Loading repairs a crash tail durably "
        "(an unfinished turn is closed as interrupted).",
    )
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", help="print the session's JSONL lines, header first")
    show.add_argument(
        "--follow",
        action="store_true",
        help="print the events as they are stored while another process writes the session, until Ctrl-C "
        "(reads only: no lock, no repair)",
    )
    show.add_argument(
        "--until-idle",
        action="store_true",
        help="with --follow: stop once the stored log ends with no turn open",
    )
    fork = actions.add_parser(
        "fork",
        parents=[shared],
        help="copy a session up to the end of a completed turn into a new session; print its id",
        description="Store a new session whose history is ID's up to the end of turn N (default: its last "
        "completed turn); its header names ID as its parent. Continue it with `dsh run --resume NEW`.",
    )
    fork.add_argument("id", metavar="ID")
    fork.add_argument("--turn", metavar="N", type=int, help="the completed turn to fork after (default: the last)")
    actions.add_parser("check", parents=[shared], help="verify every log; one line per problem, exit 1 if any")
    repair = actions.add_parser(
        "repair", parents=[shared], help="cut a damaged log back to its intact start (a copy is saved first)"
    )
    repair.add_argument("id", metavar="ID")
    remove = actions.add_parser("rm", parents=[shared], help="delete a session")
    remove.add_argument("id", metavar="ID")

    batch = commands.add_parser(
        "batch",
        parents=[shared],
        help="run a file of tasks (one JSON object a line) on a Ray cluster; one result line per task",
        description="Run each task of TASKS (JSONL: prompt, workspace, optional id, model, maxSteps, maxTurns) as "
        "one agent turn on a Ray cluster, and write one JSON result line per task to --out. A worker that dies "
        "has its tasks resumed from their logs by another. Needs Ray: pip install 'dsh[ray]'.",
        epilog="exit status: 0 every task completed, 1 some did not (see --out), 2 a bad task file or usage",
    )
    batch.add_argument("tasks", metavar="TASKS", help="the task file (JSONL)")
    batch.add_argument("--out", metavar="RESULTS", required=True, help="the results file (JSONL, overwritten)")
    batch.add_argument(
        "--workers", type=positive_int, default=2, metavar="N", help="worker processes (Ray actors) to run (default 2)"
    )
    batch.add_argument(
        "--agents-per-worker",
        type=positive_int,
        default=8,
        metavar="N",
        help="agents each worker runs at once (default 8)",
    )
    batch.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="join this Ray cluster (host:port, or auto) instead of starting a local one for the run",
    )
    compact = commands.add_parser(
        "compact",
        parents=[shared],
        help="summarize a stored session's older history now, so later turns send less",
        description="Resume the persisted session ID and compact its history with one summary request "
        "(the compaction plugin of the profile); the next --resume sees the summary and the recent turns.",
    )
    compact.add_argument("id", metavar="ID")
    compact.add_argument("--instructions", metavar="TEXT", help="what the summary must keep, added to its instruction")

    config = commands.add_parser(
        "config",
        parents=[shared],
        help="print the plugin tree that would boot, and validate it",
        description="Validate the effective plugin tree (FILE, else --config, else the built-in profile) "
        "and print it as YAML. Problems go to stderr and exit 1.",
    )
    config.add_argument("file", nargs="?", metavar="FILE", help="a YAML plugin tree to check (default: --config)")
    config.add_argument("--check", action="store_true", help="only validate; print a one-line verdict")

    doctor = commands.add_parser(
        "doctor",
        help="probe and print what this machine enforces (the bash sandbox per permission mode)",
        description="Probe the bash sandbox backends for real and print what each permission mode enforces.",
    )
    doctor.add_argument(
        "--backend", choices=("auto", "bwrap", "landlock"), default="auto", help="the backend to report on"
    )
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status when argparse already answered (help, version, error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    if args.command is None:
        parser.print_help()
        return 0
    return args


def _command(args: argparse.Namespace) -> Command:
    module = importlib.import_module(COMMANDS[args.command])
    return cast(Command, module.command)


async def amain(argv: Sequence[str] | None = None) -> int:
    """Run ``dsh`` with ``argv`` inside the running event loop; return the exit status."""
    parsed = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    return await _dispatch(parsed)


async def _dispatch(parsed: argparse.Namespace) -> int:
    """Run the parsed subcommand; an error it did not expect is :func:`unexpected`."""
    try:
        return await _command(parsed)(parsed)
    except Exception as error:
        return unexpected(error, debug=bool(getattr(parsed, "debug", False)))


def unexpected(error: Exception, *, debug: bool) -> int:
    """Report an error no subcommand expected: one line (the traceback too with ``--debug``); status 1."""
    if debug:
        import traceback

        traceback.print_exception(error, file=sys.stderr)
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    hint = "" if debug else " (run again with --debug for the traceback)"
    print(f"dsh: unexpected error: {detail}{hint}", file=sys.stderr, flush=True)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dsh`` with ``argv`` (default: the process arguments); return the exit status.

    A subcommand runs in a fresh event loop. A Ctrl-C that arrives while no
    subcommand handles it (during startup, say) ends the run with status 130.
    Imports no command needs are deferred first (see :mod:`dsh.cli.startup`).
    The process-wide garbage-collector schedule is not touched: that is
    :func:`console`'s, for a process that is dsh's own.
    """
    parsed = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    import asyncio

    from dsh.cli.startup import defer_httpx_cli

    defer_httpx_cli()
    try:
        return asyncio.run(_dispatch(parsed))
    except KeyboardInterrupt:
        print("dsh: interrupted", file=sys.stderr)
        return 130


def console() -> int:
    """The ``dsh`` console script: :func:`main` in a process that is dsh's own.

    Around it the garbage collector waits until the plugins are booted and the
    start-up objects are frozen before exit (see
    :class:`~dsh.cli.startup.CollectorPolicy`).
    """
    from dsh.cli.startup import COLLECTOR

    COLLECTOR.pause()
    try:
        return main()
    finally:
        COLLECTOR.finish()
