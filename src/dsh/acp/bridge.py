"""The ACP bridge: one client connection serving N independent dsh sessions (SPEC §14.2-14.6).

Each ACP session is one agent created through the ``agents`` registry (so any loop
that fills the factory seam works) and one record here: the agent, its tool
presenter, the terminal capability snapshotted when the session was opened, and at
most one in-flight prompt. The MCP servers a client passes with ``session/new`` /
``session/load`` run for that session only (through the ``mcp`` plugin's host, owned
by the session's fiber), started before the answer.

**Ownership.** Each agent is created through a small child fiber of the bridge
(``acp-session``): disposing the bridge fiber disposes those children, which
unregisters and stops the agents (caller attribution, SPEC §1.2); a session/load
that must be abandoned disposes just its own child.

**Prompt settlement** (exactly once): the prompt installs its in-flight marker
(with the log length as a watermark) before ``agent.send``; the first
message-triggered ``turn/start`` after that is the owning turn, and its
``turn/end`` settles the prompt (an ``error`` end rejects it with ``Internal error:
turn failed: <message>``). If a peer ``session/event`` listener starves the bridge of
those events, ``agent/status`` idle/disposed reconciles from the log. ``session/cancel``
settles ``cancelled`` at once, so the cancelled turn's late end is ignored.

**Approvals and modes.** The bridge answers ``approval/request`` for its own agents
by asking the client (:mod:`dsh.acp.permission`), and with the ``permissions``
service loaded its sessions have ACP modes (:mod:`dsh.acp.modes`): ``modes`` in the
``session/new`` / ``session/load`` answers, ``session/set_mode``, and a
``current_mode_update`` whenever a session's mode changes.

**Teardown** (:meth:`AcpBridge.quiesce`, memoized, shared by client disconnect and
fiber disposal): no new work is accepted, every pending prompt settles
``cancelled``, every step in flight is aborted, and the agents are awaited idle.

**Extras** (:mod:`dsh.acp.extras`): slash commands, model selection, ``usage_update``,
steering and the editor's files; ``session/fork`` opens a stored fork of a session
(after its last completed turn) like a load, without replay.
"""

from __future__ import annotations

import asyncio
import os.path
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from dsh.acp.children import child_progress_listener
from dsh.acp.codec import StopReason, acp_prompt_to_text, prompt_has_unsupported_content, turn_end_to_stop_reason
from dsh.acp.config import Config, agent_options
from dsh.acp.extras import SessionExtras
from dsh.acp.jsonrpc import JsonRpcConnection, RequestError
from dsh.acp.listing import list_page
from dsh.acp.mcp_servers import mcp_capabilities, session_servers
from dsh.acp.modes import SET_MODE, SessionModes
from dsh.acp.params import (
    AuthenticateParams,
    CancelParams,
    ForkSessionParams,
    InitializeParams,
    ListSessionsParams,
    LoadSessionParams,
    NewSessionParams,
    PromptParams,
)
from dsh.acp.permission import PermissionAnswerer
from dsh.acp.stream import TerminalContext, ToolPresenter, stream_session_event_update
from dsh.acp.transport import LineTransport
from dsh.acp.unconfigured import initialize_result
from dsh.core.agent import (
    AGENT_STATUS,
    AGENTS,
    Agent,
    AgentRegistry,
    AgentStatus,
    CreateAgentOptions,
    ResumeAgentOptions,
)
from dsh.core.approval import APPROVAL_REQUEST, PERMISSION_CHANGED
from dsh.core.approval import session_of as agent_session
from dsh.core.errors import HarnessError
from dsh.core.llm import UnsetType, text
from dsh.core.mcp import MCP, HttpServer, McpHost, StdioServer
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import (
    SESSION_EVENT,
    SESSIONS,
    ErrorReason,
    MessageTrigger,
    Session,
    SessionEvent,
    SessionHeader,
    SessionMeta,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
    UsageEvent,
    session_title,
)
from dsh.core.subagent import SUBAGENT_PROGRESS
from dsh.core.tools import TOOLS
from dsh.kernel import Context, Fiber, PluginSpec, ServiceHandle, unwrap

DISPOSED_MESSAGE: Final = "the ACP bridge has been disposed"
UNSUPPORTED_CONTENT_MESSAGE: Final = (
    "only text and resource_link prompt content is supported; "
    "image/audio/embedded resource blocks are rejected rather than silently dropped"
)


@dataclass
class Inflight:
    """The one prompt a session is running: its answer, its owning turn once seen, the log watermark."""

    answer: asyncio.Future[StopReason]
    log_watermark: int
    turn: int | None = None


@dataclass
class SessionRecord:
    """One live ACP session; ``owner`` is the child fiber its agent belongs to.

    ``terminal`` (whether tool calls render as terminal cards, and the session's cwd)
    is fixed when the session is registered: neither changes for a session.
    """

    session_id: str
    agent: Agent
    presenter: ToolPresenter
    terminal: TerminalContext
    owner: Fiber
    inflight: Inflight | None = field(default=None)


def _hold(ctx: Context, config: object) -> None:
    """``apply`` of an ``acp-session`` fiber: it only owns what is created through it."""


def _message_turn(event: SessionEvent) -> int | None:
    """The turn number of a message-triggered ``turn/start``; None for any other event."""
    if type(event) is TurnStartEvent and type(event.data.trigger) is MessageTrigger:
        return event.data.turn
    return None


def _first_message_turn(events: Sequence[SessionEvent], start: int) -> int | None:
    for event in events[start:]:
        turn = _message_turn(event)
        if turn is not None:
            return turn
    return None


def _turn_end(events: Sequence[SessionEvent], turn: int) -> TurnEndReason | None:
    for event in reversed(events):
        if type(event) is TurnEndEvent and event.data.turn == turn:
            return event.data.reason
    return None


def _header_cwd(header: SessionHeader) -> str | None:
    return None if isinstance(header.cwd, UnsetType) else header.cwd


def _check_header_cwd(session_id: str, persisted: str | None, requested: str) -> None:
    """Refuse a load whose persisted workspace is unknown or differs from the requested one."""
    if not isinstance(persisted, str) or not os.path.isabs(persisted):
        raise RequestError.invalid_params(
            f"session {session_id} has no absolute persisted cwd; cannot determine its workspace "
            "(it predates per-session cwd, or was created without one)"
        )
    if os.path.normpath(persisted) != os.path.normpath(requested):
        raise RequestError.invalid_params(
            f"session {session_id} cwd mismatch: persisted {persisted}, requested {requested}"
        )


class AcpBridge:
    """The bridge behind the ``acp`` plugin; built by ``apply`` (see the module docstring).

    ``ctx`` is the plugin's context: the services are captured from it once, and the
    session listeners and the teardown effect are owned by its fiber.
    """

    def __init__(self, ctx: Context, config: Config, transport: LineTransport, *, owns_transport: bool = False) -> None:
        self._ctx = ctx
        self._config = config
        self._agents: AgentRegistry = unwrap(ctx[AGENTS])
        self._persistence = ctx[SESSION_PERSISTENCE]
        self._tools = ctx[TOOLS]
        self._logger = ctx.logger
        self._sessions: dict[str, SessionRecord] = {}
        self._loading: set[str] = set()
        self._closed = False
        self._terminal_output = False
        self._quiesced: asyncio.Task[None] | None = None
        self._owns_transport = owns_transport
        self._modes = SessionModes(ctx, self._agent_of, self.session_of, self._notify)
        self._extras = SessionExtras(
            ctx, config, self._sessions.values, self._sessions.get, self._notify, self._client_request
        )
        self._connection = JsonRpcConnection(
            transport,
            requests={
                "initialize": self.initialize,
                "authenticate": self.authenticate,
                "session/new": self.new_session,
                "session/load": self.load_session,
                "session/list": self.list_sessions,
                "session/prompt": self.prompt,
                SET_MODE: self._modes.set_mode,
                "session/fork": self.fork_session,
                **self._extras.requests,
            },
            notifications={"session/cancel": self.cancel},
            logger=self._logger,
            on_close=self.quiesce,
        )
        ctx.on(SESSION_EVENT, self._on_session_event)
        ctx.on(AGENT_STATUS, self._on_agent_status)
        ctx.on(PERMISSION_CHANGED, self._modes.on_changed)
        ctx.on(SUBAGENT_PROGRESS, child_progress_listener(self.session_of, self._notify))
        answerer = PermissionAnswerer(self._connection.request, self.session_of, self._tools, self._logger)
        ctx.on(APPROVAL_REQUEST, answerer.on_request)
        ctx.effect(lambda: self._dispose, "acp bridge teardown")

    def start(self) -> None:
        """Begin serving the client; end of input runs :meth:`quiesce`."""
        self._connection.start()

    @property
    def closed(self) -> bool:
        """True once teardown began: no session is opened and no prompt accepted any more."""
        return self._closed

    @property
    def session_ids(self) -> list[str]:
        """The ids of the live ACP sessions, in opening order."""
        return list(self._sessions)

    def session_of(self, agent: object | None) -> str | None:
        """The id of the live session whose agent is exactly ``agent``, else None."""
        session = agent_session(agent)
        record = self._sessions.get(session.id) if session is not None else None
        return record.session_id if record is not None and record.agent is agent else None

    def _agent_of(self, session_id: str) -> Agent | None:
        record = self._sessions.get(session_id)
        return record.agent if record is not None else None

    async def wait_closed(self) -> None:
        """Return once the client connection has ended (end of input) and its teardown has run."""
        await self._connection.wait_closed()

    def _notify(self, notification: dict[str, Any]) -> None:
        """Best effort: a ``session/update`` that cannot be written is logged, never raised."""
        try:
            self._connection.notify("session/update", notification)
        except Exception as error:
            self._logger.warn("acp: session/update failed: %s", error)

    def _client_request(self, method: str, params: Any) -> Awaitable[Any]:
        return self._connection.request(method, params)

    def _warn(self, message: str) -> None:
        self._logger.warn("%s", message)

    # ------------------------------------------------------------------ guards
    def _assert_open(self) -> None:
        if self._closed:
            raise RequestError.internal_error(DISPOSED_MESSAGE)

    @staticmethod
    def _check_workspace(params: NewSessionParams) -> None:
        if not os.path.isabs(params.cwd):
            raise RequestError.invalid_params(f"cwd must be an absolute path: {params.cwd}")
        if params.additionalDirectories:
            raise RequestError.invalid_params("additionalDirectories is not supported in this MVP")

    def _mcp_servers(self, params: NewSessionParams) -> dict[str, StdioServer | HttpServer]:
        """The request's MCP servers by local name (none when it passes none)."""
        if not params.mcpServers:
            return {}
        host = self._ctx.get(MCP)
        if host is None:
            raise RequestError.invalid_params(
                "mcpServers needs the mcp plugin: add `- {id: mcp, name: mcp}` to the plugin tree"
            )
        return session_servers(params.mcpServers, host.transports)

    async def _start_mcp(self, session_id: str, servers: dict[str, StdioServer | HttpServer], owner: Fiber) -> None:
        """Run ``servers`` for the session, owned by its fiber, and wait for their first start."""
        if not servers:
            return
        host = self._ctx.get(MCP)
        assert host is not None  # _mcp_servers found it, and the session's fiber holds no service back
        scoped = cast(McpHost, ServiceHandle(unwrap(host), owner.ctx))  # what it starts belongs to the session
        scoped.start_for_session(session_id, servers)
        for name, state in (await scoped.wait_ready(session_id)).items():
            if state != "connected":
                self._warn(f'acp: MCP server "{name}" of session {session_id} did not start ({state})')

    async def _open_owner(self) -> Fiber:
        """A child fiber to own one session's agent (ready to use when this returns)."""
        return await self._ctx.plugin(PluginSpec(name="acp-session", apply=_hold))

    def _agents_for(self, owner: Fiber) -> AgentRegistry:
        """The registry as seen by ``owner``: what it creates belongs to that fiber."""
        return cast(AgentRegistry, ServiceHandle(self._agents, owner.ctx))

    def _register(self, session_id: str, agent: Agent, owner: Fiber) -> SessionRecord:
        record = SessionRecord(
            session_id=session_id,
            agent=agent,
            presenter=ToolPresenter(self._tools, self._warn),
            terminal=TerminalContext(self._terminal_output, _header_cwd(agent.session.header)),
            owner=owner,
        )
        self._sessions[session_id] = record
        return record

    # ----------------------------------------------------------------- methods
    async def initialize(self, raw: Any) -> dict[str, Any]:
        """Negotiate version 1 and remember ``clientCapabilities._meta.terminal_output is true``."""
        params = InitializeParams.model_validate(raw)
        capabilities = params.clientCapabilities
        meta = capabilities.meta if capabilities is not None else None
        self._terminal_output = meta is not None and meta.get("terminal_output") is True
        result = initialize_result(self._config)
        host = self._ctx.get(MCP)
        if host is not None:
            result["agentCapabilities"]["mcpCapabilities"] = mcp_capabilities(host.transports)
        self._extras.initialize(params, result)
        return result

    async def authenticate(self, raw: Any) -> dict[str, Any]:
        """A no-op (no auth methods are advertised); answers ``{}``."""
        AuthenticateParams.model_validate(raw)
        return {}

    async def new_session(self, raw: Any) -> dict[str, Any]:
        """Open a session on a fresh agent whose session header cwd is the request's cwd."""
        params = NewSessionParams.model_validate(raw)
        self._assert_open()
        self._check_workspace(params)
        servers = self._mcp_servers(params)
        session_id = str(uuid.uuid4())
        owner = await self._open_owner()
        try:
            self._assert_open()
            await self._start_mcp(session_id, servers, owner)
            self._assert_open()
            agent = self._agents_for(owner).create(
                CreateAgentOptions(
                    agent_id=session_id,
                    session_id=session_id,
                    meta=SessionMeta(cwd=params.cwd),
                    agent_options=agent_options(self._config),
                )
            )
        except BaseException:
            await owner.dispose()
            raise
        record = self._register(session_id, agent, owner)
        return {
            "sessionId": session_id,
            **self._modes.modes_for(session_id, agent),
            **self._extras.opened(record, resumed=False),
        }

    async def load_session(self, raw: Any) -> dict[str, Any]:
        """Resume a persisted session and replay its whole log as updates before answering ``{}``.

        A session already live on this connection (an editor reopening a thread) is
        not resumed again: its log so far is replayed. An id that is neither live nor
        stored is ``-32602 unknown session``.
        """
        params = LoadSessionParams.model_validate(raw)
        self._assert_open()
        session_id = params.sessionId
        if session_id in self._loading:
            raise RequestError.invalid_params(f"session {session_id} is already loaded")
        self._check_workspace(params)
        servers = self._mcp_servers(params)
        record = self._sessions.get(session_id)
        resumed = record is None
        if record is not None:
            _check_header_cwd(session_id, _header_cwd(record.agent.session.header), params.cwd)
        else:
            self._loading.add(session_id)
            try:
                await self._check_persisted_cwd(session_id, params.cwd)
                agent, owner = await self._resume(session_id, servers)
            finally:
                self._loading.discard(session_id)
            record = self._register(session_id, agent, owner)
        extra = self._extras.opened(record, resumed=resumed, replayed=True)
        self._replay(record)
        return {**self._modes.modes_for(session_id, record.agent), **extra}

    async def fork_session(self, raw: Any) -> dict[str, Any]:
        """``session/fork``: store a fork of the session after its last completed turn and open it.

        The source is live here or stored; its workspace must be the request's cwd. A
        source without a completed turn is ``-32602``. The fork is opened like a load
        (MCP servers, model, editor files) but nothing is replayed.
        """
        params = ForkSessionParams.model_validate(raw)
        self._assert_open()
        self._check_workspace(params)
        servers = self._mcp_servers(params)
        source = self._sessions.get(params.sessionId)
        if source is not None:
            _check_header_cwd(params.sessionId, _header_cwd(source.agent.session.header), params.cwd)
        else:
            await self._check_persisted_cwd(params.sessionId, params.cwd)
        try:
            forked = await self._persistence.fork(params.sessionId)
        except HarnessError as error:
            raise RequestError.invalid_params(f"cannot fork session {params.sessionId}: {error}") from error
        agent, owner = await self._resume(forked.meta.id, servers)
        record = self._register(forked.meta.id, agent, owner)
        return {
            "sessionId": forked.meta.id,
            **self._modes.modes_for(forked.meta.id, agent),
            **self._extras.opened(record, resumed=True),
        }

    async def list_sessions(self, raw: Any) -> dict[str, Any]:
        """The stored and live sessions, newest first, filtered by ``cwd``, paged (:mod:`dsh.acp.listing`)."""
        params = ListSessionsParams.model_validate(raw)
        self._assert_open()
        if params.cwd is not None and not os.path.isabs(params.cwd):
            raise RequestError.invalid_params(f"cwd must be an absolute path: {params.cwd}")
        headers = {header.id: header for header in await self._persistence.list()}
        for record in self._sessions.values():
            headers.setdefault(record.session_id, record.agent.session.header)
        store = self._ctx[SESSIONS]

        def title_of(session_id: str) -> str | None:
            live = store.get(session_id)
            return session_title(live.events) if live is not None else None

        return list_page(list(headers.values()), title_of, params.cwd, params.cursor)

    def _replay(self, record: SessionRecord) -> None:
        replay = ToolPresenter(self._tools, self._warn)  # historical calls never leak into live state
        events = record.agent.session.events
        for event in events[: len(events)]:  # the log as it is now, even if a listener appends meanwhile
            stream_session_event_update(
                record.session_id, event, self._notify, replay, record.terminal, include_user_messages=True
            )

    async def _check_persisted_cwd(self, session_id: str, cwd: str) -> None:
        for header in await self._persistence.list():
            if header.id == session_id:
                _check_header_cwd(session_id, _header_cwd(header), cwd)
                return
        if not await self._persistence.has(session_id):
            raise RequestError.invalid_params(f"unknown session: {session_id}")

    async def _resume(self, session_id: str, servers: dict[str, StdioServer | HttpServer]) -> tuple[Agent, Fiber]:
        owner = await self._open_owner()
        try:
            await self._start_mcp(session_id, servers, owner)
            agent = await self._agents_for(owner).resume(
                ResumeAgentOptions(
                    agent_id=session_id, resume_session_id=session_id, agent_options=agent_options(self._config)
                )
            )
            if self._closed:
                raise RequestError.invalid_params("connection closed during session/load")
        except BaseException:
            await owner.dispose()
            raise
        return agent, owner

    async def prompt(self, raw: Any) -> dict[str, Any]:
        """Send the prompt's text to the session's agent; answer ``{"stopReason"}`` when its turn settles."""
        params = PromptParams.model_validate(raw)
        self._assert_open()
        record = self._sessions.get(params.sessionId)
        if record is None:
            raise RequestError.invalid_params(f"unknown session: {params.sessionId}")
        if prompt_has_unsupported_content(params.prompt):
            raise RequestError.invalid_params(UNSUPPORTED_CONTENT_MESSAGE)
        prompt = acp_prompt_to_text(params.prompt)
        if not prompt.strip():
            raise RequestError.invalid_params("empty prompt")
        handled = await self._extras.command(record, prompt)
        if handled is not None:
            return handled
        if record.inflight is not None:
            return {"stopReason": await self._extras.steer(record, record.inflight, prompt)}
        inflight = Inflight(asyncio.get_running_loop().create_future(), len(record.agent.session.events))
        record.inflight = inflight
        try:
            record.agent.send([text(prompt)])
        except BaseException:
            record.inflight = None  # nothing else ran meanwhile: the slot is still ours
            raise
        await asyncio.wait({inflight.answer})
        return {"stopReason": inflight.answer.result()}

    def cancel(self, raw: Any) -> None:
        """``session/cancel``: cancel the agent's work and settle its prompt ``cancelled``.

        An unknown id raises ``-32602 unknown session``: answered when the cancel was
        sent as a request, only logged (debug) for the usual notification.
        """
        params = CancelParams.model_validate(raw)
        record = self._sessions.get(params.sessionId)
        if record is None:
            raise RequestError.invalid_params(f"unknown session: {params.sessionId}")
        record.agent.cancel("session/cancel")
        self._resolve(record, "cancelled")

    # -------------------------------------------------------------- settlement
    @staticmethod
    def _resolve(record: SessionRecord, stop: StopReason) -> None:
        """Settle the session's pending prompt (if any) with ``stop`` and free the slot."""
        inflight, record.inflight = record.inflight, None
        if inflight is not None:
            inflight.answer.set_result(stop)

    @staticmethod
    def _settle(record: SessionRecord, inflight: Inflight, reason: TurnEndReason) -> None:
        """Settle ``inflight`` (the session's pending prompt) from its turn's end reason."""
        record.inflight = None
        if type(reason) is ErrorReason:
            inflight.answer.set_exception(RequestError.internal_error(f"turn failed: {reason.message}"))
        else:
            inflight.answer.set_result(turn_end_to_stop_reason(reason))

    def _on_session_event(self, session: Session, event: SessionEvent) -> None:
        record = self._sessions.get(session.id)
        if record is None or record.agent.session is not session:
            return
        stream_session_event_update(
            record.session_id, event, self._notify, record.presenter, record.terminal, include_user_messages=False
        )
        if type(event) is UsageEvent:
            self._extras.on_usage(record, event)
        inflight = record.inflight
        if inflight is None:
            return
        if inflight.turn is None:
            inflight.turn = _message_turn(event)
        elif type(event) is TurnEndEvent and event.data.turn == inflight.turn:
            self._settle(record, inflight, event.data.reason)

    def _on_agent_status(self, agent: Agent, status: AgentStatus) -> None:
        if status == "running":
            return
        for record in self._sessions.values():
            if record.agent is agent:
                if record.inflight is not None:
                    self._reconcile(record, record.inflight)
                return

    def _reconcile(self, record: SessionRecord, inflight: Inflight) -> None:
        """Settle a prompt from the log when its turn events never reached the bridge.

        The owning turn is the captured one, else the first message-triggered turn
        logged since the prompt was installed; its last ``turn/end`` settles the
        prompt, and without one (no such turn, or it never ended) it is ``cancelled``.
        """
        events = record.agent.session.events
        turn = inflight.turn if inflight.turn is not None else _first_message_turn(events, inflight.log_watermark)
        end = _turn_end(events, turn) if turn is not None else None
        if end is None:
            self._resolve(record, "cancelled")
        else:
            self._settle(record, inflight, end)

    # ---------------------------------------------------------------- teardown
    def quiesce(self) -> Awaitable[None]:
        """Stop accepting work and drain every session; memoized (every caller awaits the same teardown).

        The first call marks the bridge closed, settles every pending prompt
        ``cancelled`` and aborts every step in flight (reason ``disposed``), then the
        returned awaitable waits for every agent to be idle. Agents stay registered:
        they go with the bridge fiber.
        """
        if self._quiesced is None:
            self._closed = True
            records = list(self._sessions.values())
            self._sessions.clear()
            for record in records:
                self._resolve(record, "cancelled")
                record.agent.abort("disposed")
            self._quiesced = asyncio.get_running_loop().create_task(self._drain(records), name="acp: quiesce")
        return self._await_quiesced(self._quiesced)

    @staticmethod
    async def _drain(records: list[SessionRecord]) -> None:
        await asyncio.gather(*(record.agent.when_idle() for record in records))

    @staticmethod
    async def _await_quiesced(task: asyncio.Task[None]) -> None:
        await asyncio.wait({task})
        task.result()

    def _dispose(self) -> Awaitable[None]:
        """The fiber's disposer: :meth:`quiesce` (its synchronous part runs now, before any
        other teardown task), then, if the bridge opened the transport, close the connection."""
        return self._finish_dispose(self.quiesce())

    async def _finish_dispose(self, quiesced: Awaitable[None]) -> None:
        await quiesced
        if self._owns_transport:
            await self._connection.aclose()
