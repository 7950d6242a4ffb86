"""The replay script vocabulary: one :data:`ReplayEntry` per model call (SPEC §12).

A script is a JSON array; entry ``n`` answers the ``n``-th model call. The union is
closed, tagged by ``kind``:

* ``{"kind": "chunks", "chunks": [...]}`` -- stream these chunks;
* ``{"kind": "throw", "chunks": [...], "message", "code", "status"?}`` -- stream the
  prefix chunks, then raise ``LlmError(message, code, status)``;
* ``{"kind": "hang"}`` -- stream ``block-start`` and a ``"partial"`` text delta, then
  wait for the call's abort signal and raise.

Entries are frozen ``msgspec`` structs whose encoded JSON is the entry's JSON (the
form of a ``replay.override.json`` sidecar). :func:`parse_replay_entry` turns untrusted
JSON into an entry in one checked pass at the edge.
"""

from __future__ import annotations

from typing import TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.errors import HarnessError, assert_never
from dsh.core.llm import StreamChunk, convert


class _Entry(Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of the replay entries (not itself an entry)."""


class ChunksEntry(_Entry, frozen=True, tag="chunks"):
    """Stream ``chunks`` in order (the shape every derived entry has)."""

    chunks: tuple[StreamChunk, ...]


class ThrowEntry(_Entry, frozen=True, tag="throw"):
    """Stream ``chunks``, then raise ``LlmError(message, code, status)``."""

    chunks: tuple[StreamChunk, ...]
    message: str
    code: str
    status: int | UnsetType = UNSET


class HangEntry(_Entry, frozen=True, tag="hang"):
    """Stream ``block-start`` + ``text-delta "partial"``, then wait for the abort signal."""


ReplayEntry: TypeAlias = ChunksEntry | ThrowEntry | HangEntry

ENTRY_KINDS = ("chunks", "throw", "hang")


def parse_replay_entry(value: object, where: str = "replay entry") -> ReplayEntry:
    """One decoded JSON value as a :data:`ReplayEntry` (unknown keys are ignored).

    A JSON object whose ``kind`` is outside the closed union (or missing) raises through
    :func:`~dsh.core.errors.assert_never` (code ``UNREACHABLE``, context ``llm-replay
    replay entry``, a note naming ``where`` and the kinds); any other bad shape --
    not an object, a chunk outside the ``StreamChunk`` union, a missing or mistyped
    field -- raises ``HarnessError`` code ``MALFORMED`` naming ``where`` and the path.
    """
    if isinstance(value, dict) and value.get("kind") not in ENTRY_KINDS:
        try:
            assert_never(value, "llm-replay replay entry")
        except HarnessError as error:
            error.add_note(f'{where}: "kind" must be one of {", ".join(ENTRY_KINDS)}')
            raise
    try:
        entry: ReplayEntry = convert(value, ReplayEntry, "replay entry")
    except HarnessError as error:
        raise HarnessError(f"llm-replay: {where}: {error.message}", "MALFORMED", cause=error) from error
    return entry
