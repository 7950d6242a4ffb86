"""What the standard ``OTEL_*`` environment variables ask of dsh (no OpenTelemetry import).

* :func:`exporter_requested`: the span exporter the environment names, or None when it
  asks for none. ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none`` say no;
  an explicit ``OTEL_TRACES_EXPORTER`` names it (its first entry); otherwise an OTLP
  endpoint (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``)
  means ``otlp``. The CLI loads the ``otel`` plugin exactly when this is not None.
* :func:`capture_requested`: whether prompts, answers and tool arguments may go into
  spans (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``; off unless set to
  ``true``, ``1``, ``span_only`` or ``span_and_event``).
"""

from __future__ import annotations

from collections.abc import Mapping

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable the GenAI instrumentations read to capture message content."""

_CAPTURE_ON = frozenset({"true", "1", "span_only", "span_and_event"})


def exporter_requested(env: Mapping[str, str]) -> str | None:
    """The exporter name ``env`` asks for (lower case), or None; see the module docstring."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = env.get("OTEL_TRACES_EXPORTER")
    if names is not None:
        first = names.split(",")[0].strip().lower()
        return None if first in ("", "none") else first
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return "otlp"
    return None


def capture_requested(env: Mapping[str, str]) -> bool:
    """True when ``env`` turns message-content capture on; see the module docstring."""
    return env.get(CAPTURE_ENV, "").strip().lower() in _CAPTURE_ON
