"""The ACP bridge: one client connection serving N independent dsh sessions (SPEC §14.2-14.6).

The connection is the SDK's (:mod:`dsh.acp.rpc`); every request's params are validated
against its ``acp.schema`` model and every answer is one. Each ACP session is one
agent created through the ``agents`` registry (so any loop that fills the factory
seam works; :mod:`dsh.acp.opening`) and one record here
(:class:`~dsh.acp.settlement.SessionRecord`): the agent, its tool presenter, the
terminal capability snapshotted when the session was opened, and at most one
in-flight prompt, settled exactly once (:mod:`dsh.acp.settlement`).

**Approvals and modes.** The bridge answers ``approval/request`` for its own agents
by asking the client (:mod:`dsh.acp.permission`), and with the ``permissions``
service loaded its sessions have ACP modes (:mod:`dsh.acp.modes`): ``modes`` in the
``session/new`` / ``session/load`` answers, ``session/set_mode``, and a
``current_mode_update`` whenever a session's mode changes.

**Updates.** Every ``session/update`` is checked against ``acp.schema.SessionNotification``
before it is written (one that fails is logged and not sent) and written at once, in
the order it was made: a prompt's updates precede its answer.

**Teardown** (:meth:`AcpBridge.quiesce`, memoized, shared by client disconnect and
fiber disposal): no new work is accepted, every pending prompt settles
``cancelled``, every step in flight is aborted, every follow is stopped, and the agents
(and the follows' tasks) are awaited idle.

**Following** (:mod:`dsh.acp.following`): a ``session/load`` of a session another
live process writes (its writer lock or lease is held) answers with the stored log
replayed and then keeps sending the updates of what that writer stores; the session is
read-only here meanwhile. A ``session/prompt`` on it takes it over once the writer has
ended (the usual load, repair included, then the prompt), and is refused naming the
writer while it still runs; ``session/cancel`` does nothing to the remote turn.

**Extras** (:mod:`dsh.acp.extras`): slash commands, model selection, ``usage_update``,
steering and the editor's files; ``session/fork`` opens a stored fork of a session
(after its last completed turn) like a load, without replay.
"""

from __future__ import annotations

import asyncio
import os.path
import uuid
from collections.abc import Awaitable
from typing import Any, Final

from acp.schema import (
    AuthenticateRequest,
    AuthenticateResponse,
    CancelNotification,
    ForkSessionRequest,
    ForkSessionResponse,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
)
from pydantic import ValidationError

from dsh.acp.children import child_progress_listener
from dsh.acp.codec import acp_prompt_to_text, prompt_has_unsupported_content
from dsh.acp.config import Config
from dsh.acp.extras import SessionExtras
from dsh.acp.following import SessionFollowing, read_only, writer_still_runs
from dsh.acp.listing import list_page
from dsh.acp.mcp_servers import mcp_capabilities
from dsh.acp.modes import SET_MODE, SessionModes
from dsh.acp.opening import Servers, SessionOpener, check_header_cwd, check_workspace, header_cwd
from dsh.acp.permission import PermissionAnswerer
from dsh.acp.rpc import RpcServer, internal_error, invalid_params
from dsh.acp.settlement import Inflight, SessionRecord, observe, reconcile, resolve
from dsh.acp.stream import TerminalContext, ToolPresenter, stream_session_event_update
from dsh.acp.transport import LineTransport
from dsh.acp.unconfigured import initialize_result
from dsh.core.agent import AGENT_STATUS, Agent, AgentStatus
from dsh.core.approval import APPROVAL_REQUEST, PERMISSION_CHANGED
from dsh.core.approval import session_of as agent_session
from dsh.core.errors import HarnessError
from dsh.core.llm import text
from dsh.core.mcp import MCP
from dsh.core.persistence import SESSION_PERSISTENCE, PersistenceError
from dsh.core.session import SESSION_EVENT, SESSIONS, Session, SessionEvent, UsageEvent, session_title
from dsh.core.subagent import SUBAGENT_PROGRESS
from dsh.core.tools import TOOLS
from dsh.kernel import Context, Fiber

DISPOSED_MESSAGE: Final = "the ACP bridge has been disposed"
UNSUPPORTED_CONTENT_MESSAGE: Final = (
    "only text and resource_link prompt content is supported; "
    "image/audio/embedded resource blocks are rejected rather than silently dropped"
)


class AcpBridge:
    """The bridge behind the ``acp`` plugin; built by ``apply`` (see the module docstring).

    ``ctx`` is the plugin's context: the services are captured from it once, and the
    session listeners and the teardown effect are owned by its fiber.
    """

    def __init__(self, ctx: Context, config: Config, transport: LineTransport, *, owns_transport: bool = False) -> None:
        self._ctx = ctx
        self._config = config
        self._persistence = ctx[SESSION_PERSISTENCE]
        self._tools = ctx[TOOLS]
        self._logger = ctx.logger
        self._sessions: dict[str, SessionRecord] = {}
        self._loading: set[str] = set()
        self._closed = False
        self._terminal_output = False
        self._quiesced: asyncio.Task[None] | None = None
        self._owns_transport = owns_transport
        self._opener = SessionOpener(ctx, config, lambda: self._closed, self._warn)
        self._following = SessionFollowing(self._persistence, self._tools, self._notify, self._warn)
        self._modes = SessionModes(ctx, self._agent_of, self.session_of, self._notify)
        self._extras = SessionExtras(ctx, config, self._sessions.values, self._live, self._notify, self._client_request)
        self._connection = RpcServer(
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
        record = self._live(session_id)
        return record.agent if record is not None else None

    def _live(self, session_id: str) -> SessionRecord | None:
        """The live session ``session_id`` for a request that changes it; a followed one refuses it (read-only)."""
        if self._following.get(session_id) is not None:
            raise read_only(session_id)
        return self._sessions.get(session_id)

    async def wait_closed(self) -> None:
        """Return once the client connection has ended (end of input) and its teardown has run."""
        await self._connection.wait_closed()

    def _notify(self, notification: dict[str, Any]) -> None:
        """Best effort: an update the schema refuses, or that cannot be written, is logged, never raised."""
        try:
            SessionNotification.model_validate(notification)
            self._connection.notify("session/update", notification)
        except ValidationError as error:
            self._logger.warn("acp: a session/update the ACP schema refuses was not sent: %s", error)
        except Exception as error:
            self._logger.warn("acp: session/update failed: %s", error)

    def _client_request(self, method: str, params: Any) -> Awaitable[Any]:
        return self._connection.request(method, params)

    def _warn(self, message: str) -> None:
        self._logger.warn("%s", message)

    def _assert_open(self) -> None:
        if self._closed:
            raise internal_error(DISPOSED_MESSAGE)

    def _record(self, session_id: str) -> SessionRecord:
        record = self._sessions.get(session_id)
        if record is None:
            raise invalid_params(f"unknown session: {session_id}")
        return record

    def _register(self, session_id: str, agent: Agent, owner: Fiber) -> SessionRecord:
        record = SessionRecord(
            session_id=session_id,
            agent=agent,
            presenter=ToolPresenter(self._tools, self._warn),
            terminal=TerminalContext(self._terminal_output, header_cwd(agent.session.header)),
            owner=owner,
        )
        self._sessions[session_id] = record
        return record

    # ----------------------------------------------------------------- methods
    async def initialize(self, raw: Any) -> InitializeResponse:
        """Negotiate the SDK's protocol version and remember ``clientCapabilities._meta.terminal_output is true``."""
        params = InitializeRequest.model_validate(raw)
        capabilities = params.client_capabilities
        meta = capabilities.field_meta if capabilities is not None else None
        self._terminal_output = meta is not None and meta.get("terminal_output") is True
        result = initialize_result(self._config)
        host = self._ctx.get(MCP)
        if host is not None:
            result["agentCapabilities"]["mcpCapabilities"] = mcp_capabilities(host.transports)
        self._extras.initialize(params, result)
        return InitializeResponse.model_validate(result)

    async def authenticate(self, raw: Any) -> AuthenticateResponse:
        """A no-op (no auth methods are advertised); answers ``{}``."""
        AuthenticateRequest.model_validate(raw)
        return AuthenticateResponse()

    async def new_session(self, raw: Any) -> NewSessionResponse:
        """Open a session on a fresh agent whose session header cwd is the request's cwd."""
        params = NewSessionRequest.model_validate(raw)
        self._assert_open()
        check_workspace(params.cwd, params.additional_directories)
        servers = self._opener.mcp_servers(raw)
        session_id = str(uuid.uuid4())
        agent, owner = await self._opener.create(session_id, params.cwd, servers, internal_error(DISPOSED_MESSAGE))
        record = self._register(session_id, agent, owner)
        return NewSessionResponse.model_validate(
            {
                "sessionId": session_id,
                **self._modes.modes_for(session_id, agent),
                **self._extras.opened(record, resumed=False),
            }
        )

    async def load_session(self, raw: Any) -> LoadSessionResponse:
        """Resume a persisted session and replay its whole log as updates before answering ``{}``.

        A session already live on this connection (an editor reopening a thread) is
        not resumed again: its log so far is replayed. An id that is neither live nor
        stored is ``-32602 unknown session``. A session another live process writes is
        followed (:mod:`dsh.acp.following`): the answer is ``{"_meta": {"following":
        {"writer": <who holds it>}}}``, after the replay of what is stored. Loading a
        followed session again stops its follow first.
        """
        params = LoadSessionRequest.model_validate(raw)
        self._assert_open()
        session_id = params.session_id
        if session_id in self._loading:
            raise invalid_params(f"session {session_id} is already loaded")
        check_workspace(params.cwd, params.additional_directories)
        servers = self._opener.mcp_servers(raw)
        record = self._sessions.get(session_id)
        resumed = record is None
        if record is not None:
            check_header_cwd(session_id, header_cwd(record.agent.session.header), params.cwd)
        else:
            self._following.stop(session_id)
            self._loading.add(session_id)
            try:
                await self._opener.check_persisted_cwd(session_id, params.cwd)
                opened = await self._resume_or_follow(session_id, params.cwd, servers)
            finally:
                self._loading.discard(session_id)
            if isinstance(opened, PersistenceError):
                return LoadSessionResponse.model_validate({"_meta": {"following": {"writer": str(opened)}}})
            record = self._register(session_id, *opened)
        extra = self._extras.opened(record, resumed=resumed, replayed=True)
        self._replay(record)
        return LoadSessionResponse.model_validate({**self._modes.modes_for(session_id, record.agent), **extra})

    async def fork_session(self, raw: Any) -> ForkSessionResponse:
        """``session/fork``: store a fork of the session after its last completed turn and open it.

        The source is live here or stored; its workspace must be the request's cwd. A
        source without a completed turn is ``-32602``. The fork is opened like a load
        (MCP servers, model, editor files) but nothing is replayed.
        """
        params = ForkSessionRequest.model_validate(raw)
        self._assert_open()
        check_workspace(params.cwd, params.additional_directories)
        servers = self._opener.mcp_servers(raw)
        source = self._sessions.get(params.session_id)
        if source is not None:
            check_header_cwd(params.session_id, header_cwd(source.agent.session.header), params.cwd)
        else:
            await self._opener.check_persisted_cwd(params.session_id, params.cwd)
        try:
            forked = await self._persistence.fork(params.session_id)
        except HarnessError as error:
            raise invalid_params(f"cannot fork session {params.session_id}: {error}") from error
        agent, owner = await self._opener.resume(forked.meta.id, servers)
        record = self._register(forked.meta.id, agent, owner)
        return ForkSessionResponse.model_validate(
            {
                "sessionId": forked.meta.id,
                **self._modes.modes_for(forked.meta.id, agent),
                **self._extras.opened(record, resumed=True),
            }
        )

    async def list_sessions(self, raw: Any) -> ListSessionsResponse:
        """The stored and live sessions, newest first, filtered by ``cwd``, paged (:mod:`dsh.acp.listing`)."""
        params = ListSessionsRequest.model_validate(raw)
        self._assert_open()
        if params.cwd is not None and not os.path.isabs(params.cwd):
            raise invalid_params(f"cwd must be an absolute path: {params.cwd}")
        headers = {header.id: header for header in await self._persistence.list()}
        for record in self._sessions.values():
            headers.setdefault(record.session_id, record.agent.session.header)
        store = self._ctx[SESSIONS]

        def title_of(session_id: str) -> str | None:
            live = store.get(session_id)
            return session_title(live.events) if live is not None else None

        return ListSessionsResponse.model_validate(
            list_page(list(headers.values()), title_of, params.cwd, params.cursor)
        )

    async def _resume_or_follow(
        self, session_id: str, cwd: str, servers: Servers
    ) -> tuple[Agent, Fiber] | PersistenceError:
        """The resumed session's agent and owner, or (another process writes it) the refusal, once followed."""
        try:
            return await self._opener.resume(session_id, servers)
        except PersistenceError as error:
            if error.code != "SESSION_LOCKED":
                raise
            await self._following.open(session_id, servers, TerminalContext(self._terminal_output, cwd))
            if self._closed:  # the connection closed while the stored log was read
                self._following.stop(session_id)
                raise invalid_params("connection closed during session/load") from None
            return error

    async def _live_record(self, session_id: str) -> SessionRecord:
        """The live session ``session_id``; a followed one is taken over first (the writer must have ended)."""
        followed = self._following.get(session_id)
        if followed is None:
            return self._record(session_id)
        if session_id in self._loading:
            raise invalid_params(f"session {session_id} is being taken over by another prompt")
        self._loading.add(session_id)
        try:
            agent, owner = await self._opener.resume(session_id, followed.servers)
        except PersistenceError as error:
            if error.code != "SESSION_LOCKED":
                raise
            raise writer_still_runs(session_id, error) from None
        finally:
            self._loading.discard(session_id)
        self._following.stop(session_id)
        self._following.send(followed, agent.session.events[followed.last_seq + 1 :])  # what it had not sent yet
        record = self._register(session_id, agent, owner)
        self._extras.opened(record, resumed=True)
        self._modes.modes_for(session_id, agent)
        return record

    def _replay(self, record: SessionRecord) -> None:
        replay = ToolPresenter(self._tools, self._warn)  # historical calls never leak into live state
        events = record.agent.session.events
        for event in events[: len(events)]:  # the log as it is now, even if a listener appends meanwhile
            stream_session_event_update(
                record.session_id, event, self._notify, replay, record.terminal, include_user_messages=True
            )

    async def prompt(self, raw: Any) -> PromptResponse:
        """Send the prompt's text to the session's agent; answer ``{"stopReason"}`` when its turn settles."""
        params = PromptRequest.model_validate(raw)
        self._assert_open()
        record = await self._live_record(params.session_id)
        if prompt_has_unsupported_content(params.prompt):
            raise invalid_params(UNSUPPORTED_CONTENT_MESSAGE)
        prompt = acp_prompt_to_text(params.prompt)
        if not prompt.strip():
            raise invalid_params("empty prompt")
        handled = await self._extras.command(record, prompt)
        if handled is not None:
            return PromptResponse(stop_reason=handled)
        if record.inflight is not None:
            return PromptResponse(stop_reason=await self._extras.steer(record, record.inflight, prompt))
        inflight = Inflight(asyncio.get_running_loop().create_future(), len(record.agent.session.events))
        record.inflight = inflight
        try:
            record.agent.send([text(prompt)])
        except BaseException:
            record.inflight = None  # nothing else ran meanwhile: the slot is still ours
            raise
        await asyncio.wait({inflight.answer})
        return PromptResponse(stop_reason=inflight.answer.result())

    def cancel(self, raw: Any) -> None:
        """``session/cancel``: cancel the agent's work and settle its prompt ``cancelled``.

        On a followed session it does nothing: the turn it would cancel runs in the
        process that writes the session.

        An unknown id raises ``-32602 unknown session``: answered when the cancel was
        sent as a request, only logged (debug) for the usual notification.
        """
        params = CancelNotification.model_validate(raw)
        if self._following.get(params.session_id) is not None:
            return  # the turn runs in another process: nothing here to cancel
        record = self._record(params.session_id)
        record.agent.cancel("session/cancel")
        resolve(record, "cancelled")

    # -------------------------------------------------------------- live events
    def _on_session_event(self, session: Session, event: SessionEvent) -> None:
        record = self._sessions.get(session.id)
        if record is None or record.agent.session is not session:
            return
        stream_session_event_update(
            record.session_id, event, self._notify, record.presenter, record.terminal, include_user_messages=False
        )
        if type(event) is UsageEvent:
            self._extras.on_usage(record, event)
        observe(record, event)

    def _on_agent_status(self, agent: Agent, status: AgentStatus) -> None:
        if status == "running":
            return
        for record in self._sessions.values():
            if record.agent is agent:
                if record.inflight is not None:
                    reconcile(record, record.inflight)
                return

    # ---------------------------------------------------------------- teardown
    def quiesce(self) -> Awaitable[None]:
        """Stop accepting work and drain every session; memoized (every caller awaits the same teardown).

        The first call marks the bridge closed, settles every pending prompt
        ``cancelled``, aborts every step in flight (reason ``disposed``) and stops every
        follow, then the returned awaitable waits for every agent to be idle and every
        follow task to end. Agents stay registered:
        they go with the bridge fiber.
        """
        if self._quiesced is None:
            self._closed = True
            records = list(self._sessions.values())
            self._sessions.clear()
            for record in records:
                resolve(record, "cancelled")
                record.agent.abort("disposed")
            follows = self._following.close()
            self._quiesced = asyncio.get_running_loop().create_task(self._drain(records, follows), name="acp: quiesce")
        return self._await_quiesced(self._quiesced)

    @staticmethod
    async def _drain(records: list[SessionRecord], follows: list[asyncio.Task[None]]) -> None:
        ended = (asyncio.wait({task}) for task in follows)  # a cancelled follow is ended, not a failure
        await asyncio.gather(*(record.agent.when_idle() for record in records), *ended)

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
