"""The ``mcp`` plugin's config: which MCP servers to run and how hard to retry them.

YAML keys are camelCase (``maxRestarts``); snake_case is accepted too. ``servers`` maps
a local server name to its spec (:mod:`dsh.core.mcp`): ``command`` with ``args``,
``env`` and ``cwd`` for a subprocess over stdio, or ``url`` with ``headers`` for
streamable HTTP (``transport`` may name the kind; it defaults by ``url``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dsh.core.mcp import SERVER_NAME, ServerSpec


class McpConfig(BaseModel):
    """``servers`` (name -> spec), the restart policy and the per-call timeout.

    A server that exits or drops its connection is started again after
    ``restartDelay`` seconds, doubling up to ``maxRestartDelay``; after
    ``maxRestarts`` failed starts in a row its tools are withdrawn and it stays down
    until the plugin is loaded again. A connection that lived at least
    ``maxRestartDelay`` seconds resets the count. ``callTimeout`` (seconds) bounds one
    tool call; None waits as long as the call runs (cancel still stops it).
    ``startTimeout`` (seconds) bounds a start: launching or reaching the server, the
    handshake and the tool list; a start that takes longer counts as failed.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    servers: dict[str, ServerSpec] = Field(default_factory=dict)
    restart_delay: float = Field(0.5, alias="restartDelay", gt=0)
    max_restart_delay: float = Field(30.0, alias="maxRestartDelay", gt=0)
    max_restarts: int = Field(10, alias="maxRestarts", ge=0)
    call_timeout: float | None = Field(None, alias="callTimeout", gt=0)
    start_timeout: float = Field(30.0, alias="startTimeout", gt=0)

    @model_validator(mode="before")
    @classmethod
    def _tag_servers(cls, data: Any) -> Any:
        """Give each server spec its ``transport`` tag so a bad spec reports one shape's errors."""
        if isinstance(data, dict) and isinstance(data.get("servers"), dict):
            servers = {}
            for name, spec in data["servers"].items():
                if isinstance(spec, dict) and "transport" not in spec:
                    spec = {**spec, "transport": "http" if "url" in spec else "stdio"}
                servers[name] = spec
            data = {**data, "servers": servers}
        return data

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, ServerSpec]) -> dict[str, ServerSpec]:
        for name in servers:
            if not SERVER_NAME.match(name):
                raise ValueError(f"server name {name!r} must be 1-32 letters, digits, '_' or '-'")
        return servers
