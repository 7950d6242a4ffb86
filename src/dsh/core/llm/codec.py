"""JSON in and out of the vocabulary, checked in one pass at the edge (SPEC §0.6, §2).

:func:`decode` (JSON text) and :func:`convert` (already decoded JSON, say a parsed
config or a socket frame) turn untrusted data into typed values or raise
``HarnessError(code="MALFORMED")`` naming the bad path; :func:`encode` writes a value
back. The rules are the types': no coercion (``"1"`` is no int, ``true`` no number),
optional fields absent but never ``null``, unknown *fields* ignored.

A union that admits :data:`~dsh.core.llm.types.Unknown` is open: a variant whose tag
this version does not know becomes an ``Unknown`` holding its exact JSON, which
:func:`encode` writes back unchanged. Such input fails the C decoder first; the
fallback walks the decoded JSON against the same types in Python, which only data
from a newer writer pays for. A union without ``Unknown`` (``StreamChunk``) is closed:
an unknown tag is malformed.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import msgspec
from msgspec import Raw, Struct

from dsh.core.errors import HarnessError
from dsh.core.llm.types import ContentBlock, FinishReason, Message, StreamChunk, TokenUsage

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
encode: Callable[[object], bytes] = _encoder.encode
"""The JSON bytes of any vocabulary value (an ``Unknown`` is written as it was read)."""


def to_json(value: object) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None)."""
    return msgspec.json.decode(_encoder.encode(value))


def variant_tag(value: object) -> str | None:
    """The tag (``type`` or ``kind``) of a union variant, known or ``Unknown``; None when it has none."""
    if isinstance(value, Struct):
        tag = value.__struct_config__.tag
        return tag if isinstance(tag, str) else None
    if isinstance(value, Raw):
        plain = msgspec.json.decode(value)
        if isinstance(plain, dict):
            tag = plain.get("type", plain.get("kind"))
            return tag if isinstance(tag, str) else None
    return None


class _Invalid(Exception):  # noqa: N818 - internal signal, turned into MALFORMED
    def __init__(self, message: str, path: str) -> None:
        super().__init__(f"{message} - at `{path}`")


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _malformed(what: str, detail: str, cause: BaseException) -> HarnessError:
    return HarnessError(f"malformed {what}: {detail}", "MALFORMED", cause=cause)


def decode(data: bytes | str, target: type[T] | Any, what: str = "JSON value") -> T:
    """The JSON text ``data`` as a ``target`` value, or raise MALFORMED naming ``what``."""
    decoder = _decoders.get(target)
    if decoder is None:
        decoder = _decoders[target] = msgspec.json.Decoder(target)
    try:
        value: T = decoder.decode(data)
    except msgspec.ValidationError as error:
        try:
            plain = msgspec.json.decode(data)
        except msgspec.DecodeError as bad:  # the typed decoder stopped at a wrong value before the bad JSON
            raise _malformed(what, f"not JSON: {bad}", bad) from bad
        value = _lenient_or_raise(plain, target, what, error)
    except msgspec.DecodeError as error:
        raise _malformed(what, f"not JSON: {error}", error) from error
    return value


def convert(value: object, target: type[T] | Any, what: str = "JSON value") -> T:
    """The decoded JSON ``value`` as a ``target`` value, or raise MALFORMED naming ``what``."""
    try:
        result: T = msgspec.convert(value, target, strict=True)
    except msgspec.ValidationError as error:
        result = _lenient_or_raise(value, target, what, error)
    return result


def _lenient_or_raise(value: object, target: Any, what: str, error: msgspec.ValidationError) -> Any:
    try:
        return _lenient(value, target, "$")
    except _Invalid as invalid:
        raise _malformed(what, str(invalid), error) from error


# ------------------------------------------------------------------ the fallback
@cache
def _members(union: Any) -> tuple[dict[str, type[Struct]], str | None, type[Struct] | None, bool]:
    """``(tag -> variant, tag field, the untagged struct member, open?)`` of a union."""
    variants: dict[str, type[Struct]] = {}
    field: str | None = None
    plain: type[Struct] | None = None
    for member in typing.get_args(union):
        if isinstance(member, type) and issubclass(member, Struct):
            config = member.__struct_config__
            if isinstance(config.tag, str):
                variants[config.tag] = member
                field = config.tag_field
            else:
                plain = member
    return variants, field, plain, Raw in typing.get_args(union)


@cache
def _hints(cls: type[Struct]) -> tuple[tuple[str, str, Any], ...]:
    """``(name, wire name, type)`` of every field of ``cls``."""
    return tuple((info.name, info.encode_name, info.type) for info in msgspec.structs.fields(cls))


def _lenient(value: object, target: Any, path: str) -> Any:
    """``value`` as ``target``, walking structs, tuples and unions in Python so unknown variants become ``Unknown``."""
    origin = typing.get_origin(target)
    if origin is types.UnionType or origin is typing.Union:
        variants, field, plain, open_ = _members(target)
        if type(value) is Raw and open_:
            return value
        if isinstance(value, dict):
            tag = value.get(field) if field is not None else None
            if isinstance(tag, str):
                variant = variants.get(tag)
                if variant is not None:
                    return _struct(value, variant, path)
                if open_:
                    return Raw(_encoder.encode(value))
            elif plain is not None:
                return _struct(value, plain, path)
    elif origin is tuple and isinstance(value, list | tuple):
        item = typing.get_args(target)[0]
        return tuple([_lenient(entry, item, f"{path}[{index}]") for index, entry in enumerate(value)])
    elif isinstance(target, type) and issubclass(target, Struct) and isinstance(value, dict):
        return _struct(value, target, path)
    try:
        return msgspec.convert(value, target, strict=True)
    except msgspec.ValidationError as error:
        message, _, where = str(error).partition(" - at `$")
        raise _Invalid(message, path + where.rstrip("`")) from error


def _struct(value: dict[str, Any], cls: type[Struct], path: str) -> Struct:
    config = cls.__struct_config__
    if config.tag_field is not None and config.tag_field in value and value[config.tag_field] != config.tag:
        raise _Invalid(f"Invalid value {value[config.tag_field]!r}", f"{path}.{config.tag_field}")
    fields: dict[str, Any] = {}
    for name, wire, hint in _hints(cls):
        if wire in value:
            fields[name] = _lenient(value[wire], hint, f"{path}.{wire}")
    try:
        return cls(**fields)
    except TypeError as error:
        missing = str(error).rpartition("'")[0].rpartition("'")[2]
        wire = next((w for n, w, _ in _hints(cls) if n == missing), missing)
        raise _Invalid(f"Object missing required field `{wire}`", path) from error


# ------------------------------------------------------------- typed shorthands
def parse_content_block(value: object) -> ContentBlock:
    """``value`` as a content block (an unknown ``type`` becomes ``Unknown``), or raise MALFORMED."""
    return convert(value, ContentBlock, "content block")


def parse_message(value: object) -> Message:
    """``value`` as a message (``role`` is closed, blocks are open), or raise MALFORMED."""
    return convert(value, Message, "message")


def parse_stream_chunk(value: object) -> StreamChunk:
    """``value`` as a stream chunk (a closed union), or raise MALFORMED."""
    return convert(value, StreamChunk, "stream chunk")


def parse_token_usage(value: object) -> TokenUsage:
    """``value`` as token counts (integers, never booleans or floats), or raise MALFORMED."""
    return convert(value, TokenUsage, "token usage")


def parse_finish_reason(value: object) -> FinishReason:
    """``value`` as a finish reason (an unknown ``kind`` becomes ``Unknown``), or raise MALFORMED."""
    return convert(value, FinishReason, "finish reason")
