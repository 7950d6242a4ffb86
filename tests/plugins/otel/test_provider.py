"""Where the otel plugin's spans go: the global provider, or one it sets up from the OTEL_* variables.

The OTLP case exports to a real OTLP/HTTP receiver on 127.0.0.1 (protobuf decoded with the
OpenTelemetry proto package), in process and from a `dsh run` subprocess.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from dsh.cli.profile import DEFAULT_MODEL, profile_entries
from dsh.cli.settings import Settings
from dsh.core.errors import HarnessError
from dsh.core.llm import TextBlock
from dsh.plugins.otel import plugin as otel
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from dsh.testing.wire import WireServer, text_reply
from tests.cli.helpers import child_env, dsh, namespace, session_id_of


class Receiver:
    """A minimal OTLP/HTTP trace receiver: every POSTed export request, decoded."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                self.paths.append(lines[0].split(" ")[1])
                length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length"))
                request = ExportTraceServiceRequest()
                request.ParseFromString(await reader.readexactly(length))
                self.requests.append(request)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def span_names(self) -> list[str]:
        return [
            span.name
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def service_names(self) -> set[str]:
        return {
            attribute.value.string_value
            for request in self.requests
            for resource in request.resource_spans
            for attribute in resource.resource.attributes
            if attribute.key == "service.name"
        }


@asynccontextmanager
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    got = Receiver()
    server = await asyncio.start_server(got._serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield got, f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def test_a_provider_the_process_set_is_used_as_it_is() -> None:
    mine = TracerProvider()
    assert otel.choose_provider({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, mine, "dsh") == (mine, False)


def test_without_exporter_variables_the_global_proxy_is_used() -> None:
    proxy = trace.ProxyTracerProvider()
    assert otel.choose_provider({}, proxy, "dsh") == (proxy, False)


def test_the_console_exporter_writes_to_stderr() -> None:
    exporter = otel.make_exporter("console", {})
    assert isinstance(exporter, ConsoleSpanExporter)


@pytest.mark.parametrize(
    ("name", "env", "message"),
    [
        ("zipkin", {}, 'OTEL_TRACES_EXPORTER names "zipkin"'),
        ("otlp", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, 'OTLP protocol "grpc" is not supported'),
    ],
)
def test_exporters_dsh_cannot_set_up_are_refused_naming_the_fix(name: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(HarnessError, match=message) as caught:
        otel.make_exporter(name, env)
    assert caught.value.code == "OTEL_EXPORTER"


def test_a_missing_exporter_or_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(HarnessError, match=r"pip install 'dsh\[otel\]'"):
        otel.make_exporter("otlp", {})
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(HarnessError, match=r"SDK is not installed: pip install 'dsh\[otel\]'"):
        otel.choose_provider({"OTEL_TRACES_EXPORTER": "otlp"}, trace.ProxyTracerProvider(), "dsh")


def test_without_opentelemetry_loading_the_plugin_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    for module in [name for name in sys.modules if name.startswith("dsh.plugins.otel.")]:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ImportError, match=r"pip install 'dsh\[otel\]'"):
        importlib.import_module("dsh.plugins.otel.plugin")


async def test_the_plugin_sets_up_an_otlp_provider_and_flushes_it_when_unloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otel.trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    async with receiver() as (got, endpoint):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        async with Harness([text_response("hello")]) as h:
            fiber = await h.ctx.plugin(otel, {"serviceName": "agents"})
            agent = h.agent()
            agent.send((TextBlock(text="hi"),))
            await agent.when_idle()
            await fiber.dispose()
    assert sorted(got.span_names) == ["chat mock", "invoke_agent main"]
    assert got.paths == ["/v1/traces"]
    assert got.service_names() == {"agents"}


def test_a_service_name_from_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "from-env"}
    provider, owned = otel.choose_provider(env, trace.ProxyTracerProvider(), "dsh")
    assert owned
    assert isinstance(provider, TracerProvider)
    assert provider.resource.attributes["service.name"] == "from-env"
    provider.shutdown()


async def test_dsh_run_exports_its_spans_when_an_otlp_endpoint_is_set(tmp_path: Path) -> None:
    async with receiver() as (got, endpoint), WireServer([text_reply("traced")]) as server:
        env = child_env(base_url=server.base_url, home=tmp_path / "home")
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        env.pop("OTEL_SDK_DISABLED", None)
        done = await dsh("run", "--cwd", str(tmp_path), "hi", env=env, cwd=tmp_path)
    assert (done.status, done.stdout) == (0, "traced\n"), done.stderr
    assert session_id_of(done.stderr)
    assert sorted(got.span_names) == [f"chat {DEFAULT_MODEL}", "invoke_agent main"]


def test_the_built_in_profile_adds_the_plugin_when_an_exporter_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings.from_args(namespace(demo=True), {})
    assert "otel" not in [entry["name"] for entry in profile_entries(settings)]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    (entry,) = [entry for entry in profile_entries(settings) if entry["name"] == "otel"]
    assert entry["config"] == {"providerName": settings.provider}
