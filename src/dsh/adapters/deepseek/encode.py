"""The request body as bytes, reusing the encoding of messages seen before (SPEC §10, request mapping).

Each model call sends the whole history, and the history handed to the adapter is a
fresh copy every step, so without a cache the same messages are mapped to the wire
format and JSON-encoded again on every step of a turn (quadratic in its length).
:class:`RequestEncoder` keeps a bounded cache from a message's *content* to its
encoded wire JSON and builds the body by joining cached fragments; its output is
byte for byte that of :func:`encode_request`, the uncached definition.

The cache key of a message is ``marshal.dumps(message, 2)``. Format version 2 writes
every value in full (no back-references, no interning marks), so the key does not
depend on which objects happen to be shared; it records exact types (``True``, ``1``
and ``1.0`` differ) and dict key order, and equal keys decode to equal values of the
same types, which map and encode to the same bytes. Equal values with different keys
(a tuple for a list) only cost a miss. A message ``marshal`` refuses (a ``str``
subclass, a custom object, nesting deeper than ``marshal`` allows) is encoded without
the cache.

Most calls extend a history seen before by a message or two, so the encoder also keeps
the last few message lists it encoded as *prefixes*: the ``marshal`` (version 2) bytes
of each list's elements with the joined wire fragments of the whole list. A call
marshals its message list once (one C call) and, when those bytes continue a kept
prefix, reuses that prefix's fragments and looks up only the messages after it.
``marshal`` writes every value as a self-delimiting record, so equal leading bytes mean
the leading messages are equal, record for record.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from dsh.adapters.deepseek.serialize import RequestDefaults, serialize_message, serialize_request
from dsh.core.llm import GenerateOptions, Message

DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
"""The default bound of a :class:`RequestEncoder` cache: 16 MiB of keys plus fragments."""

PREFIXES = 4
"""How many recent message lists a :class:`RequestEncoder` keeps as prefixes (one per conversation in flight)."""

_LIST_HEAD = 5
"""Bytes before the first element in ``marshal.dumps(a_list, 2)``: the type code and a 4-byte count."""

_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""Encodes as ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` does."""


def encode_request(options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
    """The UTF-8 JSON request body for ``options``, built from scratch.

    Compact separators, non-ASCII kept as is, keys in wire order (SPEC §0.2): exactly
    ``json.dumps(serialize_request(options, defaults), ensure_ascii=False,
    separators=(",", ":")).encode()``. Raises what that expression raises.
    """
    return _JSON.encode(serialize_request(options, defaults)).encode()


def _fragment(message: Message) -> bytes:
    """The wire messages of one history message, encoded and joined by commas."""
    return b",".join(_JSON.encode(wire).encode() for wire in serialize_message(message))


class RequestEncoder:
    """Encodes request bodies as :func:`encode_request` does, reusing the fragments of messages seen before.

    ``max_bytes`` bounds the cache: the sum of ``len(key) + len(fragment)`` over the
    cached messages never exceeds it, the least recently used going first; a message
    larger than the bound on its own is not cached; ``0`` disables the cache. The last
    system prompt's encoding is kept too when it fits the bound. The kept prefixes (see
    the module docstring), ``prefixes`` of them at most, are bounded by ``max_bytes`` as
    well, separately; messages a prefix covers count as ``hits``. A long-lived
    adapter serving many sessions therefore holds about twice ``max_bytes`` at most
    (plus the bookkeeping per entry), however much history it has seen.

    Ownership: the encoder keeps its own encoded bytes, never a reference to the
    caller's messages, so a caller (an ``agent/request`` listener, say) may edit a
    history between calls: an edited message simply misses. Not thread-safe: one
    event loop uses an encoder. ``hits`` and ``misses`` count the cache lookups of
    successful calls, for observation.
    """

    __slots__ = ("_cache", "_cached_bytes", "_prefixes", "_system", "hits", "max_bytes", "misses", "prefixes")

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, prefixes: int = PREFIXES) -> None:
        if max_bytes < 0:
            raise ValueError(f"RequestEncoder max_bytes is {max_bytes}: give 0 (no cache) or a positive byte count")
        if prefixes < 0:
            raise ValueError(f"RequestEncoder prefixes is {prefixes}: give 0 (keep none) or a positive count")
        self.max_bytes = max_bytes
        self.prefixes = prefixes
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[bytes, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._system: tuple[str, bytes] | None = None
        self._prefixes: list[tuple[bytes, int, bytes]] = []  # (element bytes, message count, joined fragments)

    @property
    def cached_bytes(self) -> int:
        """The bytes the message cache holds now (keys plus fragments)."""
        return self._cached_bytes

    def __len__(self) -> int:
        """How many messages the cache holds."""
        return len(self._cache)

    def clear(self) -> None:
        """Forget every cached encoding (the counters are kept)."""
        self._cache.clear()
        self._cached_bytes = 0
        self._system = None
        self._prefixes = []

    def encode(self, options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
        """The request body for ``options``: the bytes ``encode_request(options, defaults)`` returns.

        Failures are those of :func:`encode_request` for the same input, with the same
        type and message (``LlmError`` ``UNSUPPORTED`` for a ``prefill``,
        ``UnicodeEncodeError`` for a lone surrogate, ``KeyError`` for a block missing a
        field, ``TypeError`` for a value JSON cannot hold, ...): when the cached path
        fails, the definition is run and raises its own error. Precondition:
        ``options.messages`` can be iterated twice (a list, as typed).
        """
        try:
            return self._encode(options, defaults)
        except Exception:
            return encode_request(options, defaults)

    def _encode(self, options: GenerateOptions, defaults: RequestDefaults | None) -> bytes:
        # The body without messages, by the definition itself: '{"model":M,"messages":[],"stream":true,...}'.
        rest = _JSON.encode(serialize_request(dataclasses.replace(options, messages=[], system=None), defaults))
        head = '{"model":' + _JSON.encode(options.model) + ',"messages":['
        parts: list[bytes] = []
        if options.system is not None:
            parts.append(self._system_fragment(options.system))
        messages = options.messages
        whole, start, known = self._known_prefix(messages)
        fragments: list[bytes] = [known] if start else []
        cache = self._cache
        lookup = cache.get
        refresh = cache.move_to_end
        add = fragments.append
        dumps: Callable[[Any, int], bytes] = marshal.dumps
        hits, misses = start, 0
        for message in messages[start:] if start else messages:
            try:
                key = dumps(message, 2)
            except ValueError:  # marshal cannot hold it: encode it without the cache
                add(_fragment(message))
                continue
            fragment = lookup(key)
            if fragment is None:
                misses += 1
                fragment = _fragment(message)
                self._store(key, fragment)
            else:
                hits += 1
                refresh(key)
            add(fragment)
        if fragments:
            joined = b",".join(fragments)
            parts.append(joined)
            if whole is not None:
                self._remember(whole, len(messages), joined)
        body = b"".join((head.encode(), b",".join(parts), rest[len(head) :].encode()))
        self.hits += hits
        self.misses += misses
        return body

    def _known_prefix(self, messages: Sequence[Message]) -> tuple[bytes | None, int, bytes]:
        """``(marshal of messages or None, how many leading messages a kept prefix covers, their fragments)``."""
        if not self.prefixes:
            return None, 0, b""
        try:
            whole = marshal.dumps(messages, 2)  # type: ignore[arg-type]  # a list, as typed; else ValueError
        except ValueError:  # marshal cannot hold some message (or the sequence): no prefix for this list
            return None, 0, b""
        prefixes = self._prefixes
        for index, (elements, count, joined) in enumerate(prefixes):
            if count <= len(messages) and whole.startswith(elements, _LIST_HEAD):
                if index:
                    prefixes.insert(0, prefixes.pop(index))
                return whole, count, joined
        return whole, 0, b""

    def _remember(self, whole: bytes, count: int, joined: bytes) -> None:
        """Keep this message list as the most recent prefix, within ``self.prefixes`` and ``max_bytes``."""
        elements = whole[_LIST_HEAD:]
        prefixes = self._prefixes
        if prefixes and prefixes[0][1] <= count and elements.startswith(prefixes[0][0]):
            prefixes.pop(0)  # the list this one extends: superseded
        prefixes.insert(0, (elements, count, joined))
        del prefixes[self.prefixes :]
        budget = self.max_bytes
        for index, (kept, _, kept_joined) in enumerate(prefixes):
            budget -= len(kept) + len(kept_joined)
            if budget < 0:
                del prefixes[index:]
                break

    def _system_fragment(self, system: str) -> bytes:
        """The encoded ``{"role":"system","content":system}``, reused while the prompt stays the same."""
        last = self._system
        if last is not None and type(system) is str and system == last[0]:
            return last[1]
        fragment = _JSON.encode({"role": "system", "content": system}).encode()
        if type(system) is str and len(fragment) <= self.max_bytes:
            self._system = (system, fragment)
        return fragment

    def _store(self, key: bytes, fragment: bytes) -> None:
        size = len(key) + len(fragment)
        if size > self.max_bytes:
            return
        cache = self._cache
        cache[key] = fragment
        self._cached_bytes += size
        while self._cached_bytes > self.max_bytes:
            old_key, old_fragment = cache.popitem(last=False)
            self._cached_bytes -= len(old_key) + len(old_fragment)
