"""The ``acp`` plugin and its entry points: serve dsh to an editor over ACP (SPEC §14).

As a plugin (a module plugin: ``name``, ``inject``, ``Config``, ``apply``; YAML name
``dsh.acp``), it needs ``agents``, ``sessions``, ``session_persistence`` and ``tools``
and serves this process's stdin/stdout, which it closes when disposed. Nothing may
write to stdout but the bridge: keep every log handler on stderr.

From code, :func:`run_acp` serves one client over any
:class:`~dsh.acp.transport.LineTransport` and :func:`serve_stdio` over stdin/stdout;
both return once the client has disconnected and the teardown has run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh.acp.bridge import AcpBridge
from dsh.acp.config import Config
from dsh.acp.transport import LineTransport, StdioTransport
from dsh.core.agent import AGENTS
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import SESSIONS
from dsh.core.tools import TOOLS
from dsh.kernel import Context, KernelError, PluginSpec, ServiceKey, validate_config

name = "acp"
inject = [AGENTS.name, SESSIONS.name, SESSION_PERSISTENCE.name, TOOLS.name]


def _config(config: Config | Mapping[str, Any] | None) -> Config:
    validated: Config = validate_config(name, Config, config)
    return validated


async def apply(
    ctx: Context, config: Config | Mapping[str, Any] | None, *, transport: LineTransport | None = None
) -> AcpBridge:
    """Start the bridge on ``ctx`` and return it (it becomes the fiber's ``instance``).

    ``transport`` is a runtime-only override (never YAML). When given, its owner
    keeps it: the connection serves until the client closes it, even after this
    plugin is disposed (late requests are then refused with ``the ACP bridge has
    been disposed``). When omitted, the bridge opens stdin/stdout and closes them
    on disposal. Disposal (or the client's disconnect) runs the teardown:
    :meth:`AcpBridge.quiesce`.
    """
    owns = transport is None
    line_transport = await StdioTransport.open() if transport is None else transport
    bridge = AcpBridge(ctx, _config(config), line_transport, owns_transport=owns)
    bridge.start()
    return bridge


def _require_services(ctx: Context) -> None:
    missing = [service for service in inject if ctx.get(ServiceKey(service)) is None]
    if missing:
        raise KernelError(
            f"the ACP bridge cannot start without the {', '.join(missing)} service(s): "
            "load the plugins that provide them before serving ACP"
        )


async def run_acp(ctx: Context, config: Config | Mapping[str, Any] | None = None, *, transport: LineTransport) -> None:
    """Serve one ACP client over ``transport`` until it disconnects, then unload the bridge.

    The bridge is loaded as a child plugin of ``ctx`` (whose tree must already
    provide the services in :data:`inject`; otherwise this raises naming the missing
    ones). Returns once the client closed its side, every prompt settled, every
    agent is idle and the bridge fiber (with its agents) is disposed. The transport
    is closed by the connection when it ends (or here, if the bridge cannot start).
    """
    try:
        _require_services(ctx)
        spec = PluginSpec(name=name, inject=inject, apply=lambda inner, _raw: apply(inner, config, transport=transport))
        fiber = await ctx.plugin(spec)
    except BaseException:
        await transport.aclose()
        raise
    try:
        bridge: AcpBridge = fiber.instance
        await bridge.wait_closed()
    finally:
        await fiber.dispose()


async def serve_stdio(
    ctx: Context,
    config: Config | Mapping[str, Any] | None = None,
    *,
    stdin: int | None = None,
    stdout: int | None = None,
) -> None:
    """:func:`run_acp` over this process's stdin/stdout (or the given file descriptors).

    Returns when stdin reaches end of file and the teardown has run; the caller then
    disposes the rest of its tree (flushing persistence) and exits.
    """
    _require_services(ctx)
    transport = await StdioTransport.open(stdin, stdout)
    await run_acp(ctx, config, transport=transport)
