"""The ``mcpServers`` of ``session/new`` / ``session/load``: validated and turned into server specs.

ACP describes a stdio server as ``{name, command, args, env: [{name, value}]}`` and an
HTTP one as ``{type: "http", name, url, headers: [{name, value}]}``; stdio is always
accepted, HTTP and SSE (``{type: "sse", name, url, headers}``) only when the MCP host
runs them (and the ``initialize`` answer then advertises ``mcpCapabilities.http`` /
``.sse``). Each server's ACP
name becomes a local server name (the ``<server>`` of ``mcp__<server>__<tool>``):
characters other than letters, digits, ``_`` and ``-`` become ``_``, the name is cut
to 32 characters, and a repeated name gets ``_2``, ``_3``, ...
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from dsh.acp.rpc import invalid_params
from dsh.core.mcp import HttpServer, SseServer, StdioServer


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class NameValue(_Entry):
    name: str
    value: str


class AcpStdioServer(_Entry):
    type: Literal["stdio"] = "stdio"
    name: str
    command: str
    args: list[str] = []
    env: list[NameValue] = []


class AcpHttpServer(_Entry):
    type: Literal["http", "sse"]
    name: str
    url: str
    headers: list[NameValue] = []


_ENTRIES: TypeAdapter[list[AcpHttpServer | AcpStdioServer]] = TypeAdapter(list[AcpHttpServer | AcpStdioServer])
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 32


def local_name(name: str, taken: set[str]) -> str:
    """``name`` made a valid local server name distinct from ``taken`` (see the module docstring)."""
    base = _INVALID.sub("_", name)[:_MAX_NAME] or "server"
    candidate, count = base, 1
    while candidate in taken:
        count += 1
        suffix = f"_{count}"
        candidate = base[: _MAX_NAME - len(suffix)] + suffix
    return candidate


def mcp_capabilities(transports: frozenset[str]) -> dict[str, bool]:
    """The ``mcpCapabilities`` an agent whose MCP host runs ``transports`` advertises."""
    return {"http": "http" in transports, "sse": "sse" in transports}


def session_servers(raw: Sequence[Any], transports: frozenset[str]) -> dict[str, StdioServer | HttpServer]:
    """The request's servers by local name; ``-32602`` for an entry of the wrong shape or kind."""
    for item in raw:
        kind = item.get("type") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind not in ("stdio", "http", "sse"):
            raise invalid_params(
                f'MCP server "{item.get("name")}": {kind} servers are not supported; use a stdio server'
            )
    try:
        entries = _ENTRIES.validate_python(list(raw))
    except ValidationError as error:
        raise invalid_params(f"mcpServers: {error.errors(include_url=False)}") from error
    servers: dict[str, StdioServer | HttpServer] = {}
    for entry in entries:
        name = local_name(entry.name, set(servers))
        try:
            if type(entry) is AcpStdioServer:
                servers[name] = StdioServer(
                    command=entry.command, args=tuple(entry.args), env={item.name: item.value for item in entry.env}
                )
            elif type(entry) is AcpHttpServer and entry.type in transports:
                spec = HttpServer if entry.type == "http" else SseServer
                servers[name] = spec(url=entry.url, headers={item.name: item.value for item in entry.headers})
            else:
                raise invalid_params(
                    f'MCP server "{entry.name}": {entry.type} servers are not supported; use a stdio server'
                    + (" or an http one" if "http" in transports else "")
                )
        except ValidationError as error:
            problems = error.errors(include_url=False)
            raise invalid_params(f'MCP server "{entry.name}": {problems}') from error
    return servers
