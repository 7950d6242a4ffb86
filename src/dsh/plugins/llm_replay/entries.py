"""The replay script vocabulary: one :data:`ReplayEntry` per model call (SPEC §12).

A script is a JSON array; entry ``n`` answers the ``n``-th model call. The union is
closed:

* ``{"kind": "chunks", "chunks": [...]}`` -- stream these chunks;
* ``{"kind": "throw", "chunks": [...], "message", "code", "status"?}`` -- stream the
  prefix chunks, then raise ``LlmError(message, code, status)``;
* ``{"kind": "hang"}`` -- stream ``block-start`` and a ``"partial"`` text delta, then
  wait for the call's abort signal and raise.

Entries are ``TypedDict`` values: the Python value is the JSON value of a
``replay.override.json`` sidecar. :func:`parse_replay_entry` vouches for untrusted
JSON at the edge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, NotRequired, TypeAlias, TypedDict, TypeGuard, cast

from dsh.core.errors import HarnessError, assert_never
from dsh.core.llm import StreamChunk, parse_stream_chunk


class ChunksEntry(TypedDict):
    """Stream ``chunks`` in order (the shape every derived entry has)."""

    kind: Literal["chunks"]
    chunks: list[StreamChunk]


class ThrowEntry(TypedDict):
    """Stream ``chunks``, then raise ``LlmError(message, code, status)``."""

    kind: Literal["throw"]
    chunks: list[StreamChunk]
    message: str
    code: str
    status: NotRequired[int]


class HangEntry(TypedDict):
    """Stream ``block-start`` + ``text-delta "partial"``, then wait for the abort signal."""

    kind: Literal["hang"]


ReplayEntry: TypeAlias = ChunksEntry | ThrowEntry | HangEntry

ENTRY_KINDS = ("chunks", "throw", "hang")


def is_int(value: object) -> TypeGuard[int]:
    """True for a JSON integer (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown(value: object) -> str:
    """``value`` as short compact JSON, for error messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def malformed(where: str, problem: str) -> HarnessError:
    """The error for a bad replay input (code ``MALFORMED``); ``where`` names the place."""
    return HarnessError(f"llm-replay: {where}: {problem}", "MALFORMED")


def parse_chunk(value: object, where: str) -> StreamChunk:
    """``value`` as a stream chunk, or raise ``MALFORMED`` naming ``where``."""
    try:
        return parse_stream_chunk(value)
    except HarnessError as error:
        raise HarnessError(f"llm-replay: {where}: {error.message}", "MALFORMED", cause=error) from error


def _chunks(entry: dict[str, object], where: str) -> list[StreamChunk]:
    value = entry.get("chunks")
    if not isinstance(value, list):
        raise malformed(where, f'"chunks" must be a list of stream chunks (got {shown(value)})')
    items: Sequence[object] = value
    for position, item in enumerate(items):
        parse_chunk(item, f"{where} chunks[{position}]")
    return cast(list[StreamChunk], value)


def parse_replay_entry(value: object, where: str = "replay entry") -> ReplayEntry:
    """Check one decoded JSON value as a :data:`ReplayEntry` and return it.

    The returned entry is a fresh dict holding only the entry's keys (the chunk list
    is the one given). Raises ``HarnessError`` code ``MALFORMED`` naming ``where`` for
    a bad shape, and :func:`~dsh.core.errors.assert_never` (code ``UNREACHABLE``,
    context ``llm-replay replay entry``) for a ``kind`` outside the closed union.
    """
    if not isinstance(value, dict):
        raise malformed(where, f"an entry must be a JSON object with a kind (got {shown(value)})")
    entry = cast(dict[str, object], value)
    kind = entry.get("kind")
    if kind == "hang":
        return {"kind": "hang"}
    if kind not in ("chunks", "throw"):
        try:
            assert_never(entry, "llm-replay replay entry")
        except HarnessError as error:
            error.add_note(f'{where}: "kind" must be one of {", ".join(ENTRY_KINDS)}')
            raise
    chunks = _chunks(entry, where)
    if kind == "chunks":
        return {"kind": "chunks", "chunks": chunks}
    message, code, status = entry.get("message"), entry.get("code"), entry.get("status")
    if not isinstance(message, str):
        raise malformed(where, f'a throw entry needs a string "message" (got {shown(message)})')
    if not isinstance(code, str):
        raise malformed(where, f'a throw entry needs a string "code" (got {shown(code)})')
    thrown: ThrowEntry = {"kind": "throw", "chunks": chunks, "message": message, "code": code}
    if "status" in entry:
        if not is_int(status):
            raise malformed(where, f'"status" must be an integer HTTP status when present (got {shown(status)})')
        thrown["status"] = status
    return thrown
