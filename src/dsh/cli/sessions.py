"""``dsh sessions list | show ID | fork ID | check | repair ID | rm ID``: the persisted sessions.

The built-in profile boots only ``sessions`` and JSONL persistence under the sessions
root (no model, no key needed); ``--config`` boots the given tree, which must provide
``session_persistence``. Everything goes through that service, so any backend works.

* ``list``: one row per stored session, oldest first: id, creation time, turns,
  workspace and first prompt (``--json``: one object per line, the prompt as
  ``title``). ``list`` never loads a log (loading
  repairs a crash tail, which must not happen to a session another process is still
  writing): turns are counted from the JSONL file read-only, and shown as ``-`` for
  other backends.
* ``show``: the session as a transcript (``--json``: its JSONL lines, header first).
  ``ID`` may be any unique start of a session id (:func:`resolve_session_id`, also
  used for ``--resume``).
  Loading repairs a crash tail durably first (SPEC §4b), so what is shown is what a
  resume would continue. The transcript ends with the session's usage per turn and in
  total (a fork's copied history left out), priced at ``--model``'s price (else the
  default profile's model; :mod:`dsh.cli.usage`).
* ``show --follow ID [--until-idle]``: the live tail of a session another process may be
  writing (:mod:`dsh.cli.follow`): no lock, no repair, events printed as they are stored.
* ``fork ID [--turn N]``: store a new session holding ID's log up to the end of turn N
  (default: its last completed turn), with ID as its ``parentSession``; print its id.
* ``check``: read every log back without writing; one line per problem (damage in
  committed history, a torn tail), exit 1 when there is any.
* ``repair ID``: cut a damaged JSONL log back to its intact start after saving the
  whole file as ``<log>.bak-<time>-<pid>``, then load it (closing an interrupted turn).
* ``rm``: delete the session.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import cast

from msgspec import UNSET, Struct, UnsetType

from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.follow import follow_session
from dsh.cli.profile import DEFAULT_MODEL, Tree, resolve_tree
from dsh.cli.session_ids import resolve_session_id
from dsh.cli.settings import Settings
from dsh.cli.transcript import format_time, render_transcript
from dsh.cli.usage import price_of, usage_lines
from dsh.core.errors import HarnessError
from dsh.core.persistence import (
    MISSING,
    SESSION_PERSISTENCE,
    PersistenceBackend,
    SessionPersistence,
    escape_lone_surrogates,
    event_text,
    header_text,
    json_text,
)
from dsh.core.session import SessionHeader, UserMessageEvent, parse_session_event, prompt_title
from dsh.core.usage import own_start, summarize_usage
from dsh.kernel import unwrap
from dsh.plugins.bash_local import session_folder
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path

TURN_START_LINE = b'\n{"type":"turn/start",'
"""How every ``turn/start`` line of a JSONL log begins (its key order is fixed)."""

USER_MESSAGE_LINE = b'\n{"type":"user/message",'
"""How every ``user/message`` line of a JSONL log begins."""

TITLE_WIDTH = 50
"""The widest first prompt the ``list`` table shows (longer ones are cut with an ellipsis)."""


def _log_bytes(persistence: SessionPersistence, header: SessionHeader) -> bytes | None:
    """The JSONL file of a session, read without loading it; None for other backends or an unreadable file."""
    backend = unwrap(persistence)
    if not isinstance(backend, SessionPersistenceJsonl):
        return None
    try:
        cwd = header.cwd if isinstance(header.cwd, str) else None
        with open(log_path(backend.root, cwd, header.id), "rb") as file:
            return file.read()
    except OSError:
        return None


def count_turns(persistence: SessionPersistence, header: SessionHeader) -> int | None:
    """The number of turns a session's log holds, read without loading it; None when unknown.

    Only the JSONL backend's files can be read this way (other backends give None), and
    an unreadable file gives None too.
    """
    data = _log_bytes(persistence, header)
    return None if data is None else data.count(TURN_START_LINE)


def first_prompt(data: bytes) -> str | None:
    """The text of the first ``user/message`` line of JSONL log bytes ``data``, on one line.

    None when there is none, or when that line is no valid ``user/message`` event.
    """
    start = data.find(USER_MESSAGE_LINE)
    if start < 0:
        return None
    end = data.find(b"\n", start + 1)
    try:
        event = parse_session_event(json.loads(data[start + 1 : end if end >= 0 else len(data)]))
    except (ValueError, HarnessError):
        return None
    if type(event) is not UserMessageEvent:
        return None
    return prompt_title(event)


def _title(text: str) -> str:
    return text if len(text) <= TITLE_WIDTH else text[: TITLE_WIDTH - 1] + "…"


class SessionRow(Struct, frozen=True, kw_only=True, rename="camel"):
    """One ``list`` row; ``--json`` writes it as is (absent fields left out)."""

    id: str
    created_at: int
    cwd: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    turns: int | UnsetType = UNSET
    title: str | UnsetType = UNSET


def _row(header: SessionHeader, data: bytes | None) -> SessionRow:
    if data is None:
        turns: int | UnsetType = UNSET
        title: str | UnsetType = UNSET
    else:
        turns = data.count(TURN_START_LINE)
        title = first_prompt(data) or UNSET
    return SessionRow(
        id=header.id,
        created_at=header.created_at,
        cwd=header.cwd,
        parent_session=header.parent_session,
        turns=turns,
        title=title,
    )


def row_line(row: SessionRow) -> str:
    """The ``--json`` line of ``row`` (no newline); a lone surrogate in the title is written as its escape."""
    return json_text(row)


def format_table(rows: list[SessionRow]) -> str:
    """The ``list`` table: a header line, then one aligned line per session (the title shortened)."""
    table = [("ID", "CREATED", "TURNS", "CWD", "FIRST PROMPT")]
    for row in rows:
        turns = str(row.turns) if isinstance(row.turns, int) else "-"
        title = _title(row.title) if isinstance(row.title, str) else "-"
        cwd = row.cwd if isinstance(row.cwd, str) else "-"
        table.append((row.id, format_time(row.created_at), turns, cwd, title))
    widths = [max(len(line[column]) for line in table) for column in range(4)]
    lines = [
        f"{line[0]:<{widths[0]}}  {line[1]:<{widths[1]}}  {line[2]:>{widths[2]}}  {line[3]:<{widths[3]}}  {line[4]}"
        for line in table
    ]
    return "\n".join(lines) + "\n"


def _out(text: str) -> None:
    sys.stdout.write(escape_lone_surrogates(text))
    sys.stdout.flush()


async def list_sessions(persistence: SessionPersistence, tree: Tree, *, json_lines: bool) -> int:
    headers = sorted(await persistence.list(), key=lambda header: (header.created_at, header.id))
    rows = [_row(header, _log_bytes(persistence, header)) for header in headers]
    if json_lines:
        _out("".join(row_line(row) + "\n" for row in rows))
    elif rows:
        _out(format_table(rows))
    else:
        print(f"dsh: no sessions stored by {tree.label}", file=sys.stderr)
    return 0


async def show_session(
    persistence: SessionPersistence, session_id: str, *, json_lines: bool, model: str | None = None
) -> int:
    """Print the session (``--json``: its lines); the transcript ends with its usage, priced at ``model``."""
    loaded = await persistence.load(await resolve_session_id(persistence, session_id))
    if json_lines:
        lines = [header_text(loaded.meta), *(event_text(event) for event in loaded.events)]
        _out("".join(line + "\n" for line in lines))
    else:
        summary = summarize_usage(loaded.events, price_of(model), start=own_start(loaded.meta))
        _out(render_transcript(loaded.meta, loaded.events) + "\n".join(usage_lines(summary, model)) + "\n")
    return 0


async def fork_session(persistence: SessionPersistence, session_id: str, turn: int | None) -> int:
    """Store a fork of the session after turn ``turn`` (default: its last completed one); print the new id."""
    forked = await persistence.fork(await resolve_session_id(persistence, session_id), turn)
    _out(forked.meta.id + "\n")
    return 0


async def remove_session(persistence: SessionPersistence, session_id: str, tree: Tree, sessions_root: Path) -> int:
    """Delete the session's log, then the files dsh kept for it (bash spill files) under ``sessions_root``."""
    if not await persistence.has(session_id):
        raise CliError(f'no session "{session_id}" is stored by {tree.label}: see `dsh sessions list`')
    await persistence.delete(session_id)
    shutil.rmtree(session_folder(str(sessions_root), session_id), ignore_errors=True)
    _out(f"removed {session_id}\n")
    return 0


async def check_sessions(persistence: SessionPersistence, tree: Tree) -> int:
    """Read every stored log back without writing; one stdout line per problem, 1 when there is any.

    Reads through the storage hooks (:class:`PersistenceBackend`, which every shipped
    backend implements), never through ``load``, which would repair what it finds.
    """
    backend = cast(PersistenceBackend, unwrap(persistence))
    headers = sorted(await persistence.list(), key=lambda header: (header.created_at, header.id))
    problems: list[str] = []
    for header in headers:
        id = header.id
        try:
            stored = await backend.load_stored(id)
        except HarnessError as error:
            problems.append(f"{id}: {error} (run `dsh sessions repair {id}`)")
            continue
        if stored is not None and stored.torn_marker is not MISSING:
            problems.append(
                f"{id}: a torn tail (an unfinished write); a resume or `dsh sessions repair {id}` removes it"
            )
    if isinstance(backend, SessionPersistenceJsonl):
        problems.extend(
            f"{path}: not a readable session log (a symbolic link, or no valid header line): move it away"
            for path in backend.unlisted_logs(headers)
        )
    _out("".join(problem + "\n" for problem in problems))
    print(f"dsh: checked {len(headers)} session(s) of {tree.label}: {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


async def repair_session(persistence: SessionPersistence, session_id: str) -> int:
    """Cut a damaged JSONL log back to its intact start (a copy of the file saved first), then close its turn."""
    backend = unwrap(persistence)
    if not isinstance(backend, SessionPersistenceJsonl):
        raise CliError("sessions repair works on JSONL logs only: restore other backends from a backup")
    cut = await backend.cut_damage(session_id)
    if cut is not None:
        path, backup, size = cut
        _out(f"{path}: cut {size} damaged byte(s); the whole file was saved as {backup}\n")
    loaded = await persistence.load(session_id)
    _out(f"repaired {session_id}: {len(loaded.events)} event(s) kept\n")
    return 0


def pricing_model(settings: Settings) -> str | None:
    """The model whose prices ``show`` uses: ``--model``, else the built-in DeepSeek profile's default."""
    if settings.model is not None:
        return settings.model
    return DEFAULT_MODEL if settings.config is None and settings.provider == "deepseek" else None


async def run_action(tree: Tree, args: argparse.Namespace, sessions_root: Path, model: str | None = None) -> int:
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
            if args.action == "show" and args.until_idle and not args.follow:
                raise CliError("sessions show: --until-idle only applies with --follow", 2)
            if args.action == "show" and args.follow:
                return await follow_session(
                    persistence, args.id, json_lines=bool(args.json), until_idle=args.until_idle
                )
            if args.action == "show":
                return await show_session(persistence, args.id, json_lines=bool(args.json), model=model)
            if args.action == "fork":
                return await fork_session(persistence, args.id, args.turn)
            if args.action == "check":
                return await check_sessions(persistence, tree)
            if args.action == "repair":
                return await repair_session(persistence, args.id)
            return await remove_session(persistence, args.id, tree, sessions_root)
        except HarnessError as error:
            raise CliError(f"sessions {args.action}: {error}") from error


async def command(args: argparse.Namespace) -> int:
    """The ``sessions`` subcommand."""
    try:
        settings = Settings.from_args(args)
        tree = resolve_tree(settings, "storage")
        with logging_to_stderr(settings.verbose):
            return await run_action(tree, args, settings.sessions_root, pricing_model(settings))
    except CliError as error:
        return report(error)
