"""``dsh sessions list | show ID | rm ID``: the persisted sessions.

The built-in profile boots only ``sessions`` and JSONL persistence under the sessions
root (no model, no key needed); ``--config`` boots the given tree, which must provide
``session_persistence``. Everything goes through that service, so any backend works.

* ``list``: one row per stored session, oldest first: id, creation time, turns and
  workspace (``--json``: one object per line). ``list`` never loads a log (loading
  repairs a crash tail, which must not happen to a session another process is still
  writing): turns are counted from the JSONL file read-only, and shown as ``-`` for
  other backends.
* ``show``: the session as a transcript (``--json``: its JSONL lines, header first).
  Loading repairs a crash tail durably first (SPEC §4b), so what is shown is what a
  resume would continue.
* ``rm``: delete the session.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.cli.transcript import format_time, render_transcript
from dsh.core.errors import HarnessError
from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence, escape_lone_surrogates
from dsh.core.session import SessionHeader, header_line, session_event_line
from dsh.kernel import unwrap
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path

TURN_START_LINE = b'\n{"type":"turn/start",'
"""How every ``turn/start`` line of a JSONL log begins (its key order is fixed)."""


def count_turns(persistence: SessionPersistence, header: SessionHeader) -> int | None:
    """The number of turns a session's log holds, read without loading it; None when unknown.

    Only the JSONL backend's files can be read this way (other backends give None), and
    an unreadable file gives None too.
    """
    backend = unwrap(persistence)
    if not isinstance(backend, SessionPersistenceJsonl):
        return None
    try:
        with open(log_path(backend.root, header.get("cwd"), header["id"]), "rb") as file:
            return file.read().count(TURN_START_LINE)
    except OSError:
        return None


def _row(header: SessionHeader, turns: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {"id": header["id"], "createdAt": header["createdAt"]}
    if "cwd" in header:
        row["cwd"] = header["cwd"]
    if "parentSession" in header:
        row["parentSession"] = header["parentSession"]
    if turns is not None:
        row["turns"] = turns
    return row


def format_table(rows: list[dict[str, Any]]) -> str:
    """The ``list`` table: a header line, then one aligned line per session."""
    table = [("ID", "CREATED", "TURNS", "CWD")]
    for row in rows:
        turns = str(row["turns"]) if "turns" in row else "-"
        table.append((row["id"], format_time(row["createdAt"]), turns, row.get("cwd", "-")))
    widths = [max(len(line[column]) for line in table) for column in range(3)]
    lines = [
        f"{line[0]:<{widths[0]}}  {line[1]:<{widths[1]}}  {line[2]:>{widths[2]}}  {line[3]}".rstrip() for line in table
    ]
    return "\n".join(lines) + "\n"


def _out(text: str) -> None:
    sys.stdout.write(escape_lone_surrogates(text))
    sys.stdout.flush()


async def list_sessions(persistence: SessionPersistence, tree: Tree, *, json_lines: bool) -> int:
    headers = sorted(await persistence.list(), key=lambda header: (header["createdAt"], header["id"]))
    rows = [_row(header, count_turns(persistence, header)) for header in headers]
    if json_lines:
        _out("".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows))
    elif rows:
        _out(format_table(rows))
    else:
        print(f"dsh: no sessions stored by {tree.label}", file=sys.stderr)
    return 0


async def show_session(persistence: SessionPersistence, session_id: str, *, json_lines: bool) -> int:
    loaded = await persistence.load(session_id)
    if json_lines:
        lines = [header_line(loaded.meta), *(session_event_line(event) for event in loaded.events)]
        _out("".join(line + "\n" for line in lines))
    else:
        _out(render_transcript(loaded.meta, loaded.events))
    return 0


async def remove_session(persistence: SessionPersistence, session_id: str, tree: Tree) -> int:
    if not await persistence.has(session_id):
        raise CliError(f'no session "{session_id}" is stored by {tree.label}: see `dsh sessions list`')
    await persistence.delete(session_id)
    _out(f"removed {session_id}\n")
    return 0


async def run_action(tree: Tree, args: argparse.Namespace) -> int:
    """Boot ``tree`` and run the ``sessions`` action ``args.action`` against its persistence."""
    async with booted(tree) as root:
        persistence = root.get(SESSION_PERSISTENCE)
        if persistence is None:
            raise CliError(
                f"{tree.label} provides no session persistence: add an entry such as "
                "{id: persistence, name: session-persistence-jsonl, config: {root: DIR}}"
            )
        try:
            if args.action == "list":
                return await list_sessions(persistence, tree, json_lines=bool(args.json))
            if args.action == "show":
                return await show_session(persistence, args.id, json_lines=bool(args.json))
            return await remove_session(persistence, args.id, tree)
        except HarnessError as error:
            raise CliError(f"sessions {args.action}: {error}") from error


async def command(args: argparse.Namespace) -> int:
    """The ``sessions`` subcommand."""
    try:
        settings = Settings.from_args(args)
        tree = resolve_tree(settings, "storage")
        with logging_to_stderr(settings.verbose):
            return await run_action(tree, args)
    except CliError as error:
        return report(error)
