"""The ``llm/*`` event catalog (SPEC §2.6).

* ``llm/stream`` (waterfall): ``(options, next) -> AsyncIterator[StreamChunk]``
* ``llm/generate`` (waterfall): ``(options, next) -> Awaitable[GenerateResult]``
* ``llm/adapter-change`` (emit): ``()``

Waterfall listeners are around-middleware: call ``next()`` to reach the next
listener and finally the service, or return without calling it to own the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

from dsh.core.llm.types import GenerateOptions, GenerateResult, StreamChunk
from dsh.kernel import EmitEvent, WaterfallEvent

LLM_STREAM: WaterfallEvent[[GenerateOptions], AsyncIterator[StreamChunk]] = WaterfallEvent(
    "llm/stream",
    doc=(
        "Wraps every model stream, including the one generate() drains. A listener gets "
        "(options, next) and returns an async iterator of chunks: next()'s iterator (maybe "
        "wrapped: retry, caching, logging) or its own (replay, canned answers). Each next() "
        "call starts a fresh stream beneath (a retry may call it again). The adapter is looked "
        "up only when the chain reaches the service, so a listener that never calls next() "
        "needs no adapter, while next() raises LlmError NO_ADAPTER for a model nobody "
        "serves. The returned iterator must honor the chunk contract of SPEC §2.2, and "
        "a wrapper must close the iterator it got from next() when it stops early."
    ),
)
"""Wraps or replaces a model stream; see ``doc``."""

LLM_GENERATE: WaterfallEvent[[GenerateOptions], Awaitable[GenerateResult]] = WaterfallEvent(
    "llm/generate",
    doc=(
        "Wraps every generate() call. A listener gets (options, next) and returns an "
        "awaitable of GenerateResult: await next() and transform the result, or return its "
        "own without calling next(). The default inner drains stream(options), so llm/stream "
        "listeners apply beneath this one."
    ),
)
"""Wraps or replaces a one-shot generation; see ``doc``."""

LLM_ADAPTER_CHANGE: EmitEvent[[]] = EmitEvent(
    "llm/adapter-change",
    doc=(
        "Emitted with no arguments after an adapter's models were registered or removed; "
        "read llm.models() for the new set. A listener that raises during registration "
        "makes register_adapter() raise and rolls that registration back."
    ),
)
"""The set of served models changed; see ``doc``."""
