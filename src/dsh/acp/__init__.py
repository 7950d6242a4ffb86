"""``dsh.acp``: serve dsh to editors over the Agent Client Protocol (SPEC §14).

This package is the ``acp`` plugin (``name``, ``inject``, ``Config``, ``apply``; load
it as ``dsh.acp``) and its entry points :func:`run_acp` / :func:`serve_stdio`:

* :mod:`.bridge` — :class:`AcpBridge`: the ACP methods, live events, teardown;
* :mod:`.opening` — opening a session's agent (workspace, MCP servers, owner fiber);
* :mod:`.following` — following, read-only, a loaded session another process writes;
* :mod:`.settlement` — which turn answers a prompt, with which stop reason;
* :mod:`.stream` — session events → ``session/update`` (pure), tool presentation;
* :mod:`.codec` — prompt text, stop reasons, content mapping (pure);
* :mod:`.rpc` — the connection: the ACP SDK's ``Connection`` with dsh's method table;
* :mod:`.frames` — the hardened frame layer under it (decode errors answered, ordered writes);
* :mod:`.permission` — the answerer of ``approval/request``: ``session/request_permission``;
* :mod:`.modes` — ACP session modes over the ``permissions`` service;
* :mod:`.transport` — in-memory and stdio line transports;
* :mod:`.unconfigured` — :func:`serve_unconfigured`: answers ``initialize`` and refuses
  session methods with the configuration problem when no agent can run.
"""

from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION

from dsh.acp.bridge import DISPOSED_MESSAGE, AcpBridge
from dsh.acp.codec import (
    StopReason,
    acp_prompt_to_text,
    harness_block_to_acp_content,
    prompt_has_unsupported_content,
    turn_end_to_stop_reason,
)
from dsh.acp.config import DEFAULT_AGENT_NAME, DEFAULT_AGENT_VERSION, Config, agent_options
from dsh.acp.frames import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    FrameTransport,
    encode_frame,
)
from dsh.acp.plugin import apply, inject, name, run_acp, serve_stdio
from dsh.acp.rpc import RpcServer, internal_error, invalid_params, unexpected_error
from dsh.acp.settlement import Inflight, SessionRecord
from dsh.acp.stream import (
    NO_TERMINAL,
    NULL_PRESENTER,
    NullToolPresenter,
    Presenter,
    TerminalContext,
    ToolCallView,
    ToolPresenter,
    ToolResultView,
    stream_session_event_update,
    terminal_cwd,
    tool_kind_for,
)
from dsh.acp.transport import LineTransport, MemoryTransport, StdioTransport, memory_transport_pair
from dsh.acp.unconfigured import initialize_result, serve_unconfigured
from dsh.core.tools import parse_arguments

__all__ = [
    "DEFAULT_AGENT_NAME",
    "DEFAULT_AGENT_VERSION",
    "DISPOSED_MESSAGE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "NO_TERMINAL",
    "NULL_PRESENTER",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "AcpBridge",
    "Config",
    "FrameTransport",
    "Inflight",
    "LineTransport",
    "MemoryTransport",
    "NullToolPresenter",
    "Presenter",
    "RequestError",
    "RpcServer",
    "SessionRecord",
    "StdioTransport",
    "StopReason",
    "TerminalContext",
    "ToolCallView",
    "ToolPresenter",
    "ToolResultView",
    "acp_prompt_to_text",
    "agent_options",
    "apply",
    "encode_frame",
    "harness_block_to_acp_content",
    "initialize_result",
    "inject",
    "internal_error",
    "invalid_params",
    "memory_transport_pair",
    "name",
    "parse_arguments",
    "prompt_has_unsupported_content",
    "run_acp",
    "serve_stdio",
    "serve_unconfigured",
    "stream_session_event_update",
    "terminal_cwd",
    "tool_kind_for",
    "turn_end_to_stop_reason",
    "unexpected_error",
]
