"""The single chunk-to-block assembly algorithm (SPEC §2.4).

Every consumer of a model stream (``LlmService.generate``, ``stream_blocks``, the
agent loop, replay tooling) folds :data:`~dsh.core.llm.types.StreamChunk` values
through a :class:`BlockAssembler`, so they all agree on what a stream means:

* blocks are ordered by the index's first appearance, whatever chunk introduced it;
* deltas need no ``block-start`` (the block type is inferred from the delta);
* the first ``block-end`` for an index wins and closes it: later deltas and later
  ``block-end`` chunks for that index are stragglers and are ignored;
* an index never closed is assembled from its deltas at the end (text, reasoning
  and tool-call only; other block types must arrive whole in a ``block-end``);
* the last ``usage`` and the last ``finish`` win; ``finish`` defaults to ``stop``.
"""

from __future__ import annotations

from dsh.core.errors import HarnessError, assert_never
from dsh.core.llm.types import (
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    FinishChunk,
    FinishReason,
    GenerateResult,
    Message,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    UsageChunk,
)

_STOP = StopFinish()


class _Partial:
    """One index's private, mutable state: deltas collected so far and, once closed, its block."""

    __slots__ = ("arguments", "block", "block_type", "text", "tool_call_id", "tool_call_name")

    def __init__(self, block_type: str) -> None:
        self.block_type = block_type
        self.text: list[str] = []
        self.arguments: list[str] = []
        self.tool_call_id: str | None = None
        self.tool_call_name: str | None = None
        self.block: ContentBlock | None = None


class BlockAssembler:
    """Folds one model stream into content blocks; see the module docstring.

    One assembler serves one stream and is not thread-safe. A block a ``block-end``
    carried is returned as that very (immutable) value; a block assembled from
    deltas is built once it is asked for. ``push`` raises only for a chunk outside
    the closed ``StreamChunk`` union (``UNREACHABLE``); ``blocks`` raises only for an
    index that never closed and whose type cannot be assembled from deltas
    (``cannot assemble incomplete block of type "<t>"``, code ``INCOMPLETE_BLOCK``).
    """

    __slots__ = ("_finish", "_flushed", "_order", "_partials", "_usage")

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}
        self._order: list[int] = []
        self._flushed = 0
        self._usage: TokenUsage | None = None
        self._finish: FinishReason | None = None

    def _open(self, index: int, block_type: str) -> _Partial:
        partial = _Partial(block_type)
        self._partials[index] = partial
        self._order.append(index)
        return partial

    def push(self, chunk: StreamChunk) -> ContentBlock | None:
        """Fold one chunk in; return the block a ``block-end`` closed, else None."""
        if type(chunk) is TextDeltaChunk:
            partial = self._partials.get(chunk.index) or self._open(chunk.index, "text")
            if partial.block is None:
                partial.text.append(chunk.text)
            return None
        if type(chunk) is ToolCallDeltaChunk:
            partial = self._partials.get(chunk.index) or self._open(chunk.index, "tool-call")
            if partial.block is None:
                partial.tool_call_id = chunk.id
                if chunk.name:
                    partial.tool_call_name = chunk.name
                partial.arguments.append(chunk.arguments_delta)
            return None
        if type(chunk) is ReasoningDeltaChunk:
            partial = self._partials.get(chunk.index) or self._open(chunk.index, "reasoning")
            if partial.block is None:
                partial.text.append(chunk.text)
            return None
        if type(chunk) is BlockStartChunk:
            if chunk.index not in self._partials:
                self._open(chunk.index, chunk.block_type)
            return None
        if type(chunk) is BlockEndChunk:
            partial = self._partials.get(chunk.index) or self._open(chunk.index, "")
            if partial.block is not None:
                return None
            block = partial.block = chunk.block
            return block
        if type(chunk) is UsageChunk:
            self._usage = chunk.usage
            return None
        if type(chunk) is not FinishChunk:
            assert_never(chunk, "BlockAssembler.push")
        self._finish = chunk.reason
        return None

    def _get(self, index: int) -> _Partial:
        partial = self._partials.get(index)
        if partial is None:
            message = f"BlockAssembler invariant violated: no partial for index {index}"
            raise HarnessError(message, "INVARIANT")
        return partial

    def _assemble(self, index: int) -> ContentBlock:
        partial = self._get(index)
        if partial.block is not None:
            return partial.block
        kind = partial.block_type
        if kind == "text":
            return TextBlock(text="".join(partial.text))
        if kind == "reasoning":
            return ReasoningBlock(text="".join(partial.text))
        if kind == "tool-call":
            call_id = partial.tool_call_id
            name = partial.tool_call_name
            return ToolCallBlock(
                id=f"call-{index}" if call_id is None else call_id,
                name="" if name is None else name,
                arguments="".join(partial.arguments),
            )
        raise HarnessError(f'cannot assemble incomplete block of type "{kind}"', "INCOMPLETE_BLOCK")

    def blocks(self) -> list[ContentBlock]:
        """Every block in first-seen order, open ones assembled from their deltas.

        Pure: calling it again returns equal blocks, and it never advances flushing.
        """
        return [self._assemble(index) for index in self._order]

    def flush_ready(self) -> list[ContentBlock]:
        """The closed blocks not yet flushed that no open block precedes (each once).

        Stops at the first open block, so what it returns over a stream is always a
        prefix of the final :meth:`blocks`.
        """
        order = self._order
        ready: list[ContentBlock] = []
        while self._flushed < len(order):
            block = self._get(order[self._flushed]).block
            if block is None:
                break
            ready.append(block)
            self._flushed += 1
        return ready

    def flush_remaining(self) -> list[ContentBlock]:
        """Every block not yet flushed, open ones assembled; call once the stream ended.

        All :meth:`flush_ready` results followed by this one equal :meth:`blocks`.
        """
        order = self._order
        rest = [self._assemble(index) for index in order[self._flushed :]]
        self._flushed = len(order)
        return rest

    @property
    def usage(self) -> TokenUsage | None:
        """The last ``usage`` chunk's counts, or None when none arrived."""
        return self._usage

    @property
    def finish(self) -> FinishReason:
        """The last ``finish`` chunk's reason, or :class:`StopFinish` when none arrived."""
        finish = self._finish
        return _STOP if finish is None else finish

    def message(self) -> Message:
        """The assembled assistant message (``content`` is :meth:`blocks` as a tuple)."""
        return Message(role="assistant", content=tuple(self.blocks()))

    def result(self) -> GenerateResult:
        """The assembled answer: message, finish, and usage (None when none arrived)."""
        return GenerateResult(message=self.message(), finish=self.finish, usage=self._usage)
