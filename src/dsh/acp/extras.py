"""The bridge's session extras: commands, model selection, usage, steering and editor files.

:class:`SessionExtras` is what the bridge consults around its own session lifecycle;
each concern's rules live in its module (:mod:`.commands`, :mod:`.models`,
:mod:`.usage`, :mod:`.steering`, :mod:`.fs_client`). The bridge calls:

* :meth:`~SessionExtras.initialize` with the client's capabilities and its answer;
* :meth:`~SessionExtras.opened` when a session is registered (new, load or fork): it
  returns the answer's extra fields (``configOptions``), attaches the editor's files,
  applies a logged model choice on a resumed session, and after the answer sends
  ``available_commands_update`` (and, on a load, the last ``usage_update``);
* :meth:`~SessionExtras.command` before a prompt, :meth:`~SessionExtras.steer` for a
  prompt that meets one in flight, :meth:`~SessionExtras.on_usage` for each logged
  ``usage`` event of a live session.

:attr:`~SessionExtras.requests` holds the methods it serves itself
(``session/set_config_option``, ``session/set_model``, ``_session/steering``). State
per session (usage tally, a model choice not logged yet) lives here, keyed by session id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp.schema import (
    InitializeRequest,
    PromptRequest,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionSelectRequest,
)
from pydantic import BaseModel, ConfigDict, Field

from dsh.acp.codec import StopReason, acp_prompt_to_text
from dsh.acp.commands import available_commands_update, run_command
from dsh.acp.config import Config
from dsh.acp.fs_client import AcpEditorFiles, FsCapabilities, Request
from dsh.acp.models import (
    CONFIG_ID,
    model_option,
    unknown_model_message,
)
from dsh.acp.rpc import invalid_params
from dsh.acp.steering import INITIALIZE_META, STEERING_METHOD, prompt_required, steers_prompts
from dsh.acp.usage import UsageTally
from dsh.core.agent import AGENT_TURN_START, Agent
from dsh.core.commands import COMMANDS, COMMANDS_CHANGE
from dsh.core.fs import FS
from dsh.core.llm import LLM, text
from dsh.core.session import ModelSelectData, ModelSelectEvent, UsageEvent, logged_model
from dsh.core.usage import DEFAULT_CONTEXT_WINDOWS, own_start
from dsh.kernel import Context

if TYPE_CHECKING:
    from dsh.acp.settlement import Inflight, SessionRecord

Notify = Callable[[dict[str, Any]], None]


class SetModelRequest(BaseModel):
    """``session/set_model`` params: the older model switch the SDK schema no longer has."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")


@dataclass
class _Extra:
    tally: UsageTally
    unlogged_model: str | None = None


class SessionExtras:
    """See the module docstring. ``records`` lists the live sessions; ``notify`` sends one
    ``session/update`` params object; ``request`` sends a request to the client."""

    def __init__(
        self,
        ctx: Context,
        config: Config,
        records: Callable[[], Iterable[SessionRecord]],
        record_of: Callable[[str], SessionRecord | None],
        notify: Notify,
        request: Request,
    ) -> None:
        self._ctx = ctx
        self._records = records
        self._record_of = record_of
        self._notify = notify
        self._request = request
        self._windows = {**DEFAULT_CONTEXT_WINDOWS, **config.context_windows}
        self._extras: dict[str, _Extra] = {}
        self._fs = FsCapabilities()
        self._steer_prompts = False
        self.requests: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "session/set_config_option": self.set_config_option,
            "session/set_model": self.set_model,
            STEERING_METHOD: self.steering,
        }
        ctx.on(COMMANDS_CHANGE, self._on_commands_change)
        ctx.on(AGENT_TURN_START, self._on_turn_start)

    def _send(self, session_id: str, update: dict[str, Any]) -> None:
        self._notify({"sessionId": session_id, "update": update})

    # -------------------------------------------------------------- lifecycle
    def initialize(self, params: InitializeRequest, result: dict[str, Any]) -> None:
        """Remember the client's fs and steering capabilities; advertise list, fork and steering."""
        capabilities = params.client_capabilities
        self._fs = FsCapabilities(capabilities.fs if capabilities is not None else None)
        self._steer_prompts = capabilities is not None and steers_prompts(capabilities.field_meta)
        result["agentCapabilities"]["sessionCapabilities"] = {"list": {}, "fork": {}}
        result["_meta"] = INITIALIZE_META

    def opened(self, record: SessionRecord, *, resumed: bool, replayed: bool = False) -> dict[str, Any]:
        """Set up a just-registered session; the extra fields of its answer (see the module docstring)."""
        agent = record.agent
        session = agent.session
        if resumed:
            model = logged_model(session.events)
            if model is not None:
                agent.options.model = model
        extra = self._extras.get(record.session_id)
        if extra is None:
            extra = self._extras[record.session_id] = _Extra(UsageTally(session.events, own_start(session.header)))
            fs = self._ctx.get(FS)
            if fs is not None and self._fs.any:
                editor = AcpEditorFiles(self._request, record.session_id, self._fs)
                record.owner.ctx.effect(lambda: fs.attach_editor(record.session_id, editor), "acp editor files")
        asyncio.get_running_loop().call_soon(self._after_open, record, extra, replayed)
        return self._config_options(agent)

    def _after_open(self, record: SessionRecord, extra: _Extra, replayed: bool) -> None:
        """Right after the answer: the session's commands (and its usage, after a replay)."""
        registry = self._ctx.get(COMMANDS)
        commands = registry.list() if registry is not None else ()
        if commands:  # no commands: nothing to show yet (a later change is sent, even to none)
            self._send(record.session_id, available_commands_update(commands))
        if replayed:
            update = extra.tally.update(record.agent.options.model, self._windows)
            if update is not None:
                self._send(record.session_id, update)

    def _on_commands_change(self) -> None:
        registry = self._ctx.get(COMMANDS)
        commands = registry.list() if registry is not None else ()
        update = available_commands_update(commands)
        for record in self._records():
            self._send(record.session_id, update)

    # ------------------------------------------------------------------ models
    def _models(self) -> list[str]:
        llm = self._ctx.get(LLM)
        return llm.models() if llm is not None else []

    def _config_options(self, agent: Agent) -> dict[str, Any]:
        models = self._models()
        current = agent.options.model
        if not models and current is None:
            return {}
        return {"configOptions": [model_option(models, current)]}

    def _record(self, session_id: str) -> SessionRecord:
        record = self._record_of(session_id)
        if record is None:
            raise invalid_params(f"unknown session: {session_id}")
        return record

    def _switch(self, session_id: str, model: str) -> SessionRecord:
        record = self._record(session_id)
        models = self._models()
        if model not in models:
            raise invalid_params(unknown_model_message(model, models))
        agent = record.agent
        if agent.options.model != model:
            agent.options.model = model
            self._extras[session_id].unlogged_model = model
        return record

    async def set_config_option(self, raw: Any) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: only ``model`` is a config option; answers them all."""
        params = SetSessionConfigOptionSelectRequest.model_validate(raw)
        if params.config_id != CONFIG_ID:
            raise invalid_params(f'unknown config option "{params.config_id}": the only one is "model"')
        record = self._switch(params.session_id, params.value)
        return SetSessionConfigOptionResponse.model_validate(self._config_options(record.agent))

    async def set_model(self, raw: Any) -> dict[str, Any]:
        """``session/set_model`` (``modelId``): the older spelling of the model switch; answers ``{}``."""
        params = SetModelRequest.model_validate(raw)
        self._switch(params.session_id, params.model_id)
        return {}

    def _on_turn_start(self, agent: Agent, turn: int) -> None:
        extra = self._extras.get(agent.session.id)
        if extra is None or extra.unlogged_model is None:
            return
        model, extra.unlogged_model = extra.unlogged_model, None
        agent.session.append(ModelSelectEvent, ModelSelectData(model))

    # ------------------------------------------------------------------- usage
    def on_usage(self, record: SessionRecord, event: UsageEvent) -> None:
        """Count a live session's step and send its ``usage_update`` (when the window is known)."""
        extra = self._extras[record.session_id]  # set up when the session was registered
        extra.tally.add(event.data.usage)
        update = extra.tally.update(record.agent.options.model, self._windows)
        if update is not None:
            self._send(record.session_id, update)

    # ---------------------------------------------------------------- prompts
    async def command(self, record: SessionRecord, prompt: str) -> StopReason | None:
        """Run the registered command ``prompt`` invokes; its stop reason, or None when it invokes none."""
        registry = self._ctx.get(COMMANDS)
        call = registry.match(prompt) if registry is not None else None
        if call is None:
            return None
        reply = await run_command(call, record.agent)
        if reply is not None:
            self._send(record.session_id, reply)
        return "end_turn"

    async def steer(self, record: SessionRecord, inflight: Inflight, prompt: str) -> StopReason:
        """Steer the turn of ``inflight`` with ``prompt`` (when the client opted in); its stop reason."""
        if not self._steer_prompts:
            raise invalid_params("a prompt is already in flight for this session")
        record.agent.steer([text(prompt)])
        await asyncio.wait({inflight.answer})
        return inflight.answer.result()

    async def steering(self, raw: Any) -> dict[str, Any]:
        """``_session/steering``: see :mod:`dsh.acp.steering`."""
        params = PromptRequest.model_validate(raw)
        record = self._record(params.session_id)
        prompt = acp_prompt_to_text(params.prompt)
        if not prompt.strip():
            raise invalid_params("empty prompt")
        meta = params.field_meta
        agent = record.agent
        if agent.status == "running" or record.inflight is not None:
            agent.steer([text(prompt)])
            return {"outcome": "injected"}
        if prompt_required(meta):
            return {"outcome": "promptRequired", "reason": "no turn is running: send it with session/prompt"}
        agent.send([text(prompt)])
        return {"outcome": "startedNewTurn"}
