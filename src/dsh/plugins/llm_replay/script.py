"""From a recorded session log (or a sidecar override) to a replay script (SPEC §12).

* :func:`parse_session_log` -- JSONL text to typed events (the header line dropped);
* :func:`derive_replay_script` -- ``assistant/chunk`` events to one ``chunks`` entry
  per model call;
* :func:`load_replay_script` -- a fixture path (plus an optional override path) to
  the script, eagerly.

Every line and entry is decoded once, here, into the typed values. Every failure is a
``HarnessError`` whose message starts ``llm-replay:`` and says what to do: codes
``MALFORMED`` (bad JSON or shape), ``UNREACHABLE`` (an override entry of unknown kind),
``REPLAY_FIXTURE_NOT_FOUND``, ``REPLAY_IO`` (unreadable file) and
``REPLAY_NEEDS_OVERRIDE`` (a recorded model call that raised instead of finishing,
which a log alone cannot replay).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TypeAlias

from dsh.core.errors import HarnessError
from dsh.core.llm import FinishChunk, StreamChunk, decode
from dsh.core.session import AssistantChunkEvent, SessionEvent, parse_session_event_line
from dsh.plugins.llm_replay.entries import ChunksEntry, ReplayEntry, parse_replay_entry

StrPath: TypeAlias = str | os.PathLike[str]

OVERRIDE_FILE_NAME = "replay.override.json"
"""The conventional name of the sidecar override beside a recorded session log."""


def parse_session_log(text: str, origin: str = "session log") -> list[SessionEvent]:
    """The events of a session JSONL text, in order.

    Splits on ``\\n``, drops blank (whitespace-only) lines, drops the first remaining
    line (the header) and decodes the rest as typed events (an event type this
    version does not define becomes an ``UntypedEvent``). ``origin`` names the text in
    errors. Raises ``MALFORMED`` naming the line for one that is not a valid event.
    """
    numbered = [(number, line) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    events: list[SessionEvent] = []
    for number, line in numbered[1:]:
        try:
            events.append(parse_session_event_line(line))
        except HarnessError as error:
            raise HarnessError(
                f"llm-replay: {origin} line {number}: {error.message}; re-record the scenario",
                "MALFORMED",
                cause=error,
            ) from error
    return events


def _closed(key: tuple[int, int], chunks: list[StreamChunk]) -> ReplayEntry:
    if type(chunks[-1]) is not FinishChunk:
        turn, step = key
        raise HarnessError(
            f"llm-replay: model call {turn}/{step} ended without a finish chunk (a thrown stream); "
            f"this scenario needs a {OVERRIDE_FILE_NAME} sidecar",
            "REPLAY_NEEDS_OVERRIDE",
        )
    return ChunksEntry(chunks=tuple(chunks))


def derive_replay_script(events: Iterable[SessionEvent]) -> list[ReplayEntry]:
    """One ``chunks`` entry per recorded model call, in log order.

    Only ``assistant/chunk`` events count. Consecutive chunks with the same
    ``(turn, step)`` form one call; a change of key starts the next. Each call must
    end with a ``finish`` chunk (an in-band error finish is fine: it replays as
    recorded), else ``REPLAY_NEEDS_OVERRIDE`` names the ``<turn>/<step>``. No chunk
    events give ``[]``.
    """
    script: list[ReplayEntry] = []
    key: tuple[int, int] | None = None
    group: list[StreamChunk] = []
    for event in events:
        if type(event) is not AssistantChunkEvent:
            continue
        data = event.data
        if key != (data.turn, data.step):
            if key is not None:
                script.append(_closed(key, group))
            key, group = (data.turn, data.step), []
        group.append(data.chunk)
    if key is not None:
        script.append(_closed(key, group))
    return script


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise HarnessError(
            f"llm-replay: cannot read {path}: {error} (check the path points at a readable UTF-8 file)",
            "REPLAY_IO",
            cause=error,
        ) from error


def _load_override(path: str) -> list[ReplayEntry]:
    text = _read(path)
    try:
        value: Any = decode(text, Any, "override")
    except HarnessError as error:
        raise HarnessError(
            f"llm-replay: override {path} is not valid JSON ({error.message}); fix or delete it",
            "MALFORMED",
            cause=error,
        ) from error
    if not isinstance(value, list):
        raise HarnessError(f"llm-replay: override is not a JSON array: {path}", "MALFORMED")
    items: list[object] = value
    return [parse_replay_entry(item, f"override {path} [{index}]") for index, item in enumerate(items)]


def load_replay_script(file: StrPath, override_file: StrPath | None = None) -> list[ReplayEntry]:
    """The replay script for a recorded scenario, read now.

    When ``override_file`` is given (not empty) and exists, its JSON array *is* the
    script and ``file`` is not read. Otherwise the script is derived from the
    session log ``file``; a missing ``file`` raises ``REPLAY_FIXTURE_NOT_FOUND``.
    """
    override = os.fspath(override_file) if override_file is not None else ""
    if override and os.path.exists(override):
        return _load_override(override)
    path = os.fspath(file)
    if not os.path.exists(path):
        raise HarnessError(
            f"llm-replay: fixture not found: {path} — run the snapshot recorder first (DSH_SNAPSHOT=record)",
            "REPLAY_FIXTURE_NOT_FOUND",
        )
    return derive_replay_script(parse_session_log(_read(path), path))
