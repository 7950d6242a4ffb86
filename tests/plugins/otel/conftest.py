"""Fixtures of the otel plugin tests: the process's tracer provider records spans in memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def _global_provider() -> InMemorySpanExporter:
    """Set the global tracer provider once for this test process (OpenTelemetry allows one)."""
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    return _EXPORTER


@pytest.fixture
def exporter(_global_provider: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The in-memory exporter, emptied before and after the test."""
    _global_provider.clear()
    yield _global_provider
    _global_provider.clear()
