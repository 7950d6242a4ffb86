"""How to reach one MCP server: a :class:`StdioServer`, an :class:`HttpServer` or an :class:`SseServer`.

A server is known by a local name (:data:`SERVER_NAME`), the ``<server>`` of its
tools' ``mcp__<server>__<tool>`` names; the name is configuration, never what the
server announces about itself, so tool names stay stable. The specs are frozen
pydantic models, validated where they enter (a plugin config, an ACP request).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
"""What a server name may be: 1-32 letters, digits, ``_`` or ``-``."""


class _Spec(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


class StdioServer(_Spec):
    """A server dsh starts as a subprocess and talks to over its stdin/stdout.

    The process gets a small safe environment (``PATH``, ``HOME``, ...) plus ``env``;
    ``cwd`` defaults to dsh's working directory.
    """

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServer(_Spec):
    """A server reached over streamable HTTP at ``url``, every request carrying ``headers``."""

    transport: Literal["http"] = "http"
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {value!r}")
        return value


class SseServer(HttpServer):
    """A server reached over the older HTTP+SSE transport (events on a GET stream at ``url``,
    messages posted to the endpoint the server names), every request carrying ``headers``."""

    transport: Literal["sse"] = "sse"  # type: ignore[assignment]  # the tag of this kind of HTTP server


ServerSpec: TypeAlias = Annotated[StdioServer | HttpServer | SseServer, Field(discriminator="transport")]
"""One server's spec, told apart by ``transport`` (``stdio`` unless a ``url`` is given, then ``http``)."""
