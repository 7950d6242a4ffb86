"""What the plugin tells UIs and callers: the ``agent/compaction`` event and a compaction's result."""

from __future__ import annotations

from typing import Literal, TypeAlias

from msgspec import Struct

from dsh.core.agent import Agent
from dsh.core.session import CompactionEvent
from dsh.kernel import EmitEvent

NoticeKind: TypeAlias = Literal["compacted", "failed", "stopped"]


class CompactionNotice(Struct, frozen=True, kw_only=True):
    """One compaction attempt as a UI shows it.

    ``kind`` is ``compacted`` (the history shrank), ``failed`` (an attempt changed
    nothing: no summary, a summary that did not shrink, a failed request) or
    ``stopped`` (that many attempts failed in a row: automatic compaction is off for
    the session). ``message`` is one line for a person; the token counts are the
    request's estimated size before and after.
    """

    kind: NoticeKind
    trigger: str
    message: str
    tokens_before: int
    tokens_after: int


AGENT_COMPACTION: EmitEvent[[Agent, CompactionNotice]] = EmitEvent(
    "agent/compaction",
    doc="""``(agent, notice)``: a compaction attempt of ``agent``'s session ended (see :class:`CompactionNotice`).

    Emitted by the ``compaction`` plugin after the attempt's ``compaction`` event is
    logged, and once more (``stopped``) when automatic compaction gives up. Observe
    only; a raise is logged, never reaches the step.""",
)


class CompactionResult(Struct, frozen=True, kw_only=True):
    """What :meth:`~dsh.plugins.compaction.Compaction.compact` did.

    ``compacted`` is True when the history the model sees shrank; ``event`` is the
    logged ``compaction`` (None when nothing was logged: nothing to compact);
    ``message`` says what happened in one line.
    """

    compacted: bool
    message: str
    tokens_before: int
    tokens_after: int
    event: CompactionEvent | None = None
