"""``dsh sessions show --follow ID``: print a session's events as they are stored (the live tail).

The session may be one another process is writing, on this host or (PostgreSQL) any
other: following reads only, through ``SessionPersistence.follow``, so it takes no
writer lock and repairs nothing. The header comes first, then every event in seq order,
each once, as soon as its writer has stored it (``--json``: the JSONL lines; otherwise
the transcript lines of :func:`~dsh.cli.transcript.event_lines`, which leave out steps,
chunks and usage). Without ``--until-idle`` it follows until Ctrl-C (status 130) or
until the session is deleted (status 0); with it, it stops (status 0) once the stored
log ends with no turn open: at once for a session already idle, after the running
turn's ``turn/end`` otherwise. A log whose writer died inside a turn keeps it waiting
until another process resumes the session and closes that turn.
"""

from __future__ import annotations

import sys
from typing import cast

from dsh.cli.errors import CliError
from dsh.cli.session_ids import resolve_session_id
from dsh.cli.transcript import event_lines, header_lines
from dsh.core.persistence import (
    PersistenceBackend,
    SessionHeader,
    SessionPersistence,
    escape_lone_surrogates,
    event_text,
    header_text,
)
from dsh.core.session import SessionEvent, TurnEndEvent
from dsh.kernel import unwrap


def _out(text: str) -> None:
    sys.stdout.write(escape_lone_surrogates(text))
    sys.stdout.flush()


async def _header(persistence: SessionPersistence, id: str) -> SessionHeader:
    for header in await persistence.list():
        if header.id == id:
            return header
    raise CliError(f'session "{id}" is no longer stored: see `dsh sessions list`')


def _lines(event: SessionEvent, json_lines: bool) -> str:
    if json_lines:
        return event_text(event) + "\n"
    return "".join(line + "\n" for line in event_lines(event))


async def follow_session(
    persistence: SessionPersistence, session_id: str, *, json_lines: bool, until_idle: bool
) -> int:
    """Print ``session_id``'s header and events as they are stored; see the module docstring."""
    id = await resolve_session_id(persistence, session_id)
    header = await _header(persistence, id)
    _out(header_text(header) + "\n" if json_lines else "".join(line + "\n" for line in header_lines(header)))
    backend = cast(PersistenceBackend, unwrap(persistence))
    events = persistence.follow(id)
    try:
        async for event in events:
            _out(_lines(event, json_lines))
            if until_idle and type(event) is TurnEndEvent and not await backend.read_after(id, event.seq):
                return 0
    finally:
        await events.aclose()
    return 0
