"""``compaction``: keep a long session under its model's context window.

A class plugin providing the ``compaction`` service (YAML name ``compaction``; needs
``llm``). Before each model request it measures the request (provider usage, plus a
chars/4 estimate of what was added since) against the model's context window and,
at ``threshold`` (80%) or more, first prunes large old tool results, then if needed
replaces the older history with one model-written summary, keeping a recent tail
verbatim. A "context too long" refusal is compacted once and sent again. Each
attempt is one durable ``compaction`` log event, from which every later request is
derived (see :mod:`dsh.core.session.derive`), and an ``agent/compaction`` notice.
Manual: :meth:`Compaction.compact` (``dsh compact ID``) and
:meth:`Compaction.compact_command` (``/compact [instructions]``).

Config: see :class:`~.config.Config`. Behavior: see :mod:`.service`.
"""

from dsh.plugins.compaction.config import DEFAULT_CONTEXT_WINDOW, Config, ModelSettings
from dsh.plugins.compaction.history import estimate, estimate_request
from dsh.plugins.compaction.meter import Meter
from dsh.plugins.compaction.notices import AGENT_COMPACTION, CompactionNotice, CompactionResult, NoticeKind
from dsh.plugins.compaction.service import COMPACTION, SUMMARY_HEADER, SUMMARY_INSTRUCTION, Compaction

__all__ = [
    "AGENT_COMPACTION",
    "COMPACTION",
    "DEFAULT_CONTEXT_WINDOW",
    "SUMMARY_HEADER",
    "SUMMARY_INSTRUCTION",
    "Compaction",
    "CompactionNotice",
    "CompactionResult",
    "Config",
    "Meter",
    "ModelSettings",
    "NoticeKind",
    "estimate",
    "estimate_request",
]
