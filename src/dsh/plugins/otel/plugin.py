"""The ``otel`` plugin: GenAI spans of every agent's turns, model requests and tool calls.

A module plugin (``name``, ``inject``, ``Config``, ``apply``; entry point ``otel``). It
needs the ``otel`` extra (``pip install 'dsh[otel]'``): without OpenTelemetry, importing
this module raises an ``ImportError`` naming that command.

Where spans go. A tracer provider the process already set globally (the application
embedding dsh, ``opentelemetry-instrument``) is used as it is. Otherwise, when the
standard variables ask for an exporter (:func:`~dsh.plugins.otel.env.exporter_requested`:
``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), the plugin sets up a provider of its own (not
the global one): resource from ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``
(``service.name`` defaults to ``serviceName``), a batch processor, and the OTLP
HTTP/protobuf exporter (which reads the other ``OTEL_EXPORTER_OTLP_*`` variables) or the
console exporter on stderr; unloading the plugin flushes and shuts it down. With neither,
spans go to the global provider, which drops them until one is set.

Config: ``providerName`` (``gen_ai.provider.name``, default ``deepseek``),
``captureContent`` (default: the ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
variable, off), ``serviceName``. The spans are described in :mod:`.tracer`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

try:
    from opentelemetry import trace
except ModuleNotFoundError as error:  # the extra is not installed
    raise ImportError(
        "the otel plugin needs OpenTelemetry: install it with `pip install 'dsh[otel]'`", name=error.name
    ) from error
from pydantic import BaseModel, ConfigDict, Field

import dsh
from dsh.core.agent import (
    AGENT_ERROR,
    AGENT_REQUEST,
    AGENT_REQUEST_ERROR,
    AGENT_STATUS,
    AGENT_STEP_END,
    AGENT_STEP_RESULT,
    AGENT_TURN_END,
    AGENT_TURN_START,
)
from dsh.core.errors import HarnessError
from dsh.core.tools import TOOLS_EXECUTE
from dsh.kernel import Context
from dsh.plugins.otel.env import capture_requested, exporter_requested
from dsh.plugins.otel.tracer import GenAiTracer

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

name = "otel"
inject: list[str] = []

INSTALL_HINT = "pip install 'dsh[otel]'"


class Config(BaseModel):
    """See the module docstring."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    provider_name: str = Field(default="deepseek", min_length=1, alias="providerName")
    capture_content: bool | None = Field(default=None, alias="captureContent")
    service_name: str = Field(default="dsh", min_length=1, alias="serviceName")


def make_exporter(exporter: str, env: Mapping[str, str]) -> SpanExporter:
    """The span exporter named ``exporter`` (``otlp`` over HTTP/protobuf, or ``console`` on stderr)."""
    if exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    if exporter != "otlp":
        raise HarnessError(
            f'OTEL_TRACES_EXPORTER names "{exporter}", which dsh cannot set up: use otlp, console or none, '
            "or configure a tracer provider yourself (opentelemetry-instrument)",
            "OTEL_EXPORTER",
        )
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    )
    if protocol != "http/protobuf":
        raise HarnessError(
            f'OTLP protocol "{protocol}" is not supported by dsh: set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf',
            "OTEL_EXPORTER",
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as error:
        raise HarnessError(f"the OTLP exporter is not installed: {INSTALL_HINT}", "OTEL_EXPORTER", error) from error
    return OTLPSpanExporter()


def choose_provider(
    env: Mapping[str, str], current: trace.TracerProvider, service_name: str
) -> tuple[trace.TracerProvider, bool]:
    """The provider spans go to, and whether the plugin set it up (and must shut it down).

    ``current`` is the global provider; see the module docstring for the rules.
    """
    if not isinstance(current, trace.ProxyTracerProvider):
        return current, False
    exporter_name = exporter_requested(env)
    if exporter_name is None:
        return current, False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        raise HarnessError(
            f"OTEL_* variables ask for an exporter, but the OpenTelemetry SDK is not installed: {INSTALL_HINT}",
            "OTEL_EXPORTER",
            error,
        ) from error

    exporter = make_exporter(exporter_name, env)
    named = "OTEL_SERVICE_NAME" in env or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, True


def apply(ctx: Context, config: Config) -> None:
    """Listen to the agent and tool events (request-shaped waterfalls outermost); see the module docstring."""
    env = os.environ
    provider, owned = choose_provider(env, trace.get_tracer_provider(), config.service_name)
    capture = config.capture_content if config.capture_content is not None else capture_requested(env)
    spans = GenAiTracer(
        provider.get_tracer("dsh", dsh.__version__), provider_name=config.provider_name, capture=capture
    )
    ctx.on(AGENT_TURN_START, spans.turn_start)
    ctx.on(AGENT_TURN_END, spans.turn_end)
    ctx.on(AGENT_STATUS, spans.status)
    ctx.on(AGENT_ERROR, spans.error)
    ctx.on(AGENT_STEP_END, spans.step_end)
    ctx.on(AGENT_REQUEST, spans.request, prepend=True)
    ctx.on(AGENT_REQUEST_ERROR, spans.request_error, prepend=True)
    ctx.on(AGENT_STEP_RESULT, spans.step_result, prepend=True)
    ctx.on(TOOLS_EXECUTE, spans.execute, prepend=True)
    ctx.effect(lambda: spans.close, "otel: end open spans")
    if owned:
        shutdown = getattr(provider, "shutdown")  # noqa: B009 - the SDK provider's, not the API's

        async def flush() -> None:
            await asyncio.to_thread(shutdown)

        ctx.effect(lambda: flush, "otel: flush and shut down the tracer provider")
