"""Playing one replay entry as a model stream (SPEC §12)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import StreamChunk
from dsh.kernel import AbortSignal
from dsh.plugins.llm_replay.entries import ReplayEntry


def _aborted() -> HarnessError:
    return HarnessError("aborted", "ABORTED")


async def play_entry(
    script: Sequence[ReplayEntry], index: int, signal: AbortSignal | None
) -> AsyncIterator[StreamChunk]:
    """Stream ``script[index]`` as the answer to model call ``index`` (0-based).

    Nothing happens until the first iteration, where an index past the script
    raises ``REPLAY_EXHAUSTED``. ``chunks`` and ``throw`` entries check ``signal``
    before each chunk and raise ``HarnessError("aborted", "ABORTED")`` once it has
    fired; a ``throw`` entry then raises its ``LlmError``. A ``hang`` entry streams
    its two chunks, then waits for ``signal`` (returning at once if it already fired;
    forever, until cancelled, without one) and raises ``ABORTED``.
    """
    if index >= len(script):
        raise HarnessError(
            f"llm-replay: script exhausted — requested model call #{index + 1} but the fixture has only "
            f"{len(script)}; re-record the scenario",
            "REPLAY_EXHAUSTED",
        )
    waiter = signal if signal is not None else AbortSignal()  # no signal: only cancellation ends a hang
    entry = script[index]
    if entry["kind"] == "hang":
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        yield {"type": "text-delta", "index": 0, "text": "partial"}
        await waiter.wait()
        raise _aborted()
    for chunk in entry["chunks"]:
        if waiter.aborted:
            raise _aborted()
        yield chunk
    if entry["kind"] == "throw":
        raise LlmError(entry["message"], entry["code"], entry.get("status"))
