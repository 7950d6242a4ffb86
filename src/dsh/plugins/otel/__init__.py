"""``otel``: OpenTelemetry spans of turns, model requests and tool calls (GenAI semantic conventions).

The plugin itself is :mod:`dsh.plugins.otel.plugin` (entry point ``otel``), which needs
the ``otel`` extra (``pip install 'dsh[otel]'``); importing it without OpenTelemetry
raises an ``ImportError`` saying so. This package exposes only the environment rules
(:mod:`.env`), which import nothing of OpenTelemetry, so the CLI can decide whether to
load the plugin. See ``docs/telemetry.md``.
"""

from dsh.plugins.otel.env import CAPTURE_ENV, capture_requested, exporter_requested

__all__ = ["CAPTURE_ENV", "capture_requested", "exporter_requested"]
