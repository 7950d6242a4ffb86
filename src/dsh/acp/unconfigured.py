"""ACP when dsh cannot run an agent (no API key, an unreadable tree): the editor still gets answers.

An editor that starts ``dsh acp`` and sees the process exit can only say "server
exited". :func:`serve_unconfigured` instead speaks the protocol with no tree behind
it: ``initialize`` and ``authenticate`` are answered as the bridge answers them, and
every session method (``session/new``, ``session/load``, ``session/prompt``) fails
with ``-32603`` whose message is ``reason``, the one line that says what to fix.
Malformed frames get the same errors as on the real bridge (same connection).
It serves until end of input, then closes the transport.
"""

from __future__ import annotations

from typing import Any, Final

from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from acp.schema import AuthenticateRequest, AuthenticateResponse, InitializeRequest, InitializeResponse

from dsh.acp.config import Config
from dsh.acp.frames import INTERNAL_ERROR
from dsh.acp.rpc import RpcServer
from dsh.acp.transport import LineTransport
from dsh.kernel import Logger

SESSION_METHODS: Final = ("session/new", "session/load", "session/prompt")
"""The methods that need an agent, refused while dsh is not configured."""


def initialize_result(config: Config) -> dict[str, Any]:
    """The ``initialize`` answer (an ``acp.schema.InitializeResponse``): the SDK's protocol
    version, agent info, capabilities, no auth methods."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentInfo": {"name": config.agent_name, "version": config.agent_version},
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
        },
        "authMethods": [],
    }


async def serve_unconfigured(
    reason: str, config: Config, transport: LineTransport, logger: Logger | None = None
) -> None:
    """Serve ``transport`` until end of input, refusing every session method with ``reason``."""

    async def initialize(raw: Any) -> InitializeResponse:
        InitializeRequest.model_validate(raw)
        return InitializeResponse.model_validate(initialize_result(config))

    async def authenticate(raw: Any) -> AuthenticateResponse:
        AuthenticateRequest.model_validate(raw)
        return AuthenticateResponse()

    async def refuse(raw: Any) -> None:
        raise RequestError(INTERNAL_ERROR, reason)

    requests = {"initialize": initialize, "authenticate": authenticate} | dict.fromkeys(SESSION_METHODS, refuse)
    connection = RpcServer(
        transport,
        requests=requests,
        notifications={"session/cancel": lambda raw: None},
        logger=logger if logger is not None else Logger("acp"),
    )
    connection.start()
    await connection.wait_closed()
