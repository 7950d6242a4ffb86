"""Session events → ACP ``session/update`` notifications (SPEC §14.4).

:func:`stream_session_event_update` is a pure translation shared by live streaming
and ``session/load`` replay: it reads one logged event and hands zero or more
notifications to ``notify``. Tool calls are shown the way the tool itself presents
them (``present_call`` / ``present_result``, see :class:`ToolPresenter`), optionally
as a terminal card when the client advertised ``_meta.terminal_output``. A call's
``locations`` become the card's ``locations`` and a result's ``diffs`` its content as
``diff`` entries (which then stand for the text content: they show the same change);
relative paths are resolved against the session cwd (ACP asks for absolute ones).

Key orders of every update are the wire contract (the reference goldens compare
them): ``tool_call`` is ``sessionUpdate, toolCallId, title, kind, status, rawInput?,
content?, locations?, _meta?`` and ``tool_call_update`` is ``sessionUpdate, toolCallId, status,
content?, title?, _meta?``.
"""

from __future__ import annotations

import os.path
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dsh.acp.codec import harness_block_to_acp_content
from dsh.core.llm import ContentBlock, ReasoningDeltaChunk, TextDeltaChunk
from dsh.core.session import AssistantChunkEvent, SessionEvent, ToolCallEvent, ToolResultEvent, UserMessageEvent
from dsh.core.tools import ToolDefinition, ToolDiff, ToolLocation, ToolResult, ToolTerminal, parse_arguments

Notify = Callable[[dict[str, Any]], None]
"""Receives one ``session/update`` params object ``{"sessionId", "update"}``; must not raise."""

_EXECUTE_TOOLS = frozenset({"bash", "bash_output", "bash_kill"})


def tool_kind_for(name: str) -> str:
    """The ACP tool kind guessed from a tool name (used when the tool presents nothing).

    ``bash``/``bash_output``/``bash_kill`` → ``execute``; ``read*`` → ``read``; exactly
    ``write``, exactly ``edit`` or ``edit*`` → ``edit``; anything else → ``other``.
    """
    if name in _EXECUTE_TOOLS:
        return "execute"
    if name.startswith("read"):
        return "read"
    if name == "write" or name.startswith("edit"):
        return "edit"
    return "other"


def terminal_cwd(tool_cwd: str | None, session_cwd: str | None) -> str | None:
    """The working directory shown on a terminal card.

    An absolute tool cwd wins; a relative one is resolved against the session cwd
    (or passed through when the session has none); without a tool cwd, the session
    cwd (which may be None: the key is then left out).
    """
    if tool_cwd is None:
        return session_cwd
    if os.path.isabs(tool_cwd) or session_cwd is None:
        return tool_cwd
    return os.path.normpath(os.path.join(session_cwd, tool_cwd))


def _resolved(path: str, session_cwd: str | None) -> str:
    return path if os.path.isabs(path) or session_cwd is None else os.path.normpath(os.path.join(session_cwd, path))


@dataclass(frozen=True)
class TerminalContext:
    """Whether tool calls may render as terminal cards, and the session's cwd for them."""

    enabled: bool = False
    cwd: str | None = None


NO_TERMINAL = TerminalContext()
"""Terminal cards off (the default)."""


@dataclass
class ToolCallView:
    """How one call is shown: ``raw_input``/``content``/``terminal``/``locations`` None means absent."""

    title: str
    kind: str
    raw_input: Any = None
    content: Sequence[ContentBlock] | None = None
    terminal: ToolTerminal | None = None
    locations: Sequence[ToolLocation] | None = None


@dataclass
class ToolResultView:
    """How one result is shown: ``title``/``terminal``/``diffs`` None means absent."""

    content: Sequence[ContentBlock]
    title: str | None = None
    terminal: ToolTerminal | None = None
    diffs: Sequence[ToolDiff] | None = None


class Presenter(Protocol):
    """Turns logged tool calls and results into views; must never raise."""

    def call(self, call_id: str, name: str, arguments: str) -> ToolCallView: ...

    def result(self, call_id: str, content: Sequence[ContentBlock], is_error: bool) -> ToolResultView: ...


class ToolLookup(Protocol):
    """What the presenter needs of the tool registry."""

    def get(self, name: str) -> ToolDefinition | None: ...


def _generic_call(name: str, args: Any) -> ToolCallView:
    return ToolCallView(title=name, kind=tool_kind_for(name), raw_input=args)


class NullToolPresenter:
    """The generic presentation: title = tool name, guessed kind, raw result. Stateless."""

    def call(self, call_id: str, name: str, arguments: str) -> ToolCallView:
        return _generic_call(name, parse_arguments(arguments))

    def result(self, call_id: str, content: Sequence[ContentBlock], is_error: bool) -> ToolResultView:
        return ToolResultView(content=content)


NULL_PRESENTER = NullToolPresenter()
"""The shared stateless generic presenter."""


@dataclass
class _PendingCall:
    name: str
    args: Any
    is_terminal: bool


def _ignore(message: str) -> None:
    return None


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


class ToolPresenter:
    """Tool-owned presentation through the tool registry, for one session (or one replay).

    :meth:`call` remembers each call until :meth:`result` presents its outcome, so a
    result is presented with its call's arguments; only in-flight calls are held. A
    presenter hook that raises is contained: ``on_error`` gets a message naming the
    tool and the generic presentation (or the raw result) is used instead. A result
    keeps a terminal only when its call registered one (no orphan terminal output).
    """

    def __init__(self, tools: ToolLookup | None, on_error: Callable[[str], None] = _ignore) -> None:
        self._tools = tools
        self._on_error = on_error
        self._pending: dict[str, _PendingCall] = {}

    @property
    def in_flight(self) -> int:
        """How many presented calls still wait for their result."""
        return len(self._pending)

    def _tool(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name) if self._tools is not None else None

    def call(self, call_id: str, name: str, arguments: str) -> ToolCallView:
        args = parse_arguments(arguments)
        tool = self._tool(name)
        present = None
        if tool is not None and tool.present_call is not None:
            try:
                present = tool.present_call(args)
            except Exception as error:
                self._on_error(f'acp: tool "{name}" presentCall threw, using generic presentation: {_describe(error)}')
        if present is None:
            self._pending[call_id] = _PendingCall(name, args, is_terminal=False)
            return _generic_call(name, args)
        self._pending[call_id] = _PendingCall(name, args, is_terminal=present.terminal is not None)
        return ToolCallView(
            title=present.title,
            kind=present.kind if present.kind is not None else "other",
            raw_input=present.raw_input,
            content=present.content,
            terminal=present.terminal,
            locations=present.locations,
        )

    def result(self, call_id: str, content: Sequence[ContentBlock], is_error: bool) -> ToolResultView:
        pending = self._pending.pop(call_id, None)
        if pending is None:
            return ToolResultView(content=content)
        tool = self._tool(pending.name)
        present = None
        if tool is not None and tool.present_result is not None:
            try:
                present = tool.present_result(pending.args, ToolResult(content=tuple(content), is_error=is_error))
            except Exception as error:
                self._on_error(f'acp: tool "{pending.name}" presentResult threw, using raw result: {_describe(error)}')
        if present is None:
            return ToolResultView(content=content)
        return ToolResultView(
            content=present.content if present.content is not None else content,
            title=present.title,
            terminal=present.terminal if pending.is_terminal else None,
            diffs=present.diffs,
        )


def _tool_content(blocks: Sequence[ContentBlock] | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in blocks or ():
        content = harness_block_to_acp_content(block)
        if content is not None:
            items.append({"type": "content", "content": content})
    return items


def _location(place: ToolLocation, cwd: str | None) -> dict[str, Any]:
    location: dict[str, Any] = {"path": _resolved(place.path, cwd)}
    if place.line is not None:
        location["line"] = place.line
    return location


def _diff(change: ToolDiff, cwd: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "diff", "path": _resolved(change.path, cwd)}
    if change.old_text is not None:  # absent for a file created
        item["oldText"] = change.old_text
    item["newText"] = change.new_text
    return item


def _call_update(call_id: str, view: ToolCallView, terminal: TerminalContext) -> dict[str, Any]:
    card = view.terminal if terminal.enabled else None
    content = _tool_content(view.content)
    if card is not None:
        content.append({"type": "terminal", "terminalId": call_id})
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": view.title,
        "kind": view.kind,
        "status": "in_progress",
    }
    if view.raw_input is not None:
        update["rawInput"] = view.raw_input
    if content:
        update["content"] = content
    if view.locations:
        update["locations"] = [_location(place, terminal.cwd) for place in view.locations]
    if card is not None:
        info: dict[str, Any] = {"terminal_id": call_id}
        cwd = terminal_cwd(card.cwd, terminal.cwd)
        if cwd is not None:
            info["cwd"] = cwd
        update["_meta"] = {"terminal_info": info}
    return update


def _ended_badly(card: ToolTerminal | None) -> bool:
    """A process that exited non-zero or was killed by a signal: its call ``failed``."""
    return card is not None and (card.signal is not None or card.exit_code not in (None, 0))


def _result_update(call_id: str, is_error: bool, view: ToolResultView, terminal: TerminalContext) -> dict[str, Any]:
    card = view.terminal
    output = card.output if card is not None and terminal.enabled else None
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if is_error or _ended_badly(card) else "completed",
    }
    if view.diffs:
        update["content"] = [_diff(change, terminal.cwd) for change in view.diffs]
    elif output is None:  # in terminal mode the card's content must stay (an update's content replaces it)
        update["content"] = _tool_content(view.content)
    if view.title is not None:
        update["title"] = view.title
    if card is not None and output is not None:
        meta: dict[str, Any] = {"terminal_output": {"terminal_id": call_id, "data": output}}
        if card.signal is not None:
            meta["terminal_exit"] = {"terminal_id": call_id, "signal": card.signal}
        elif card.exit_code is not None:
            meta["terminal_exit"] = {"terminal_id": call_id, "exit_code": card.exit_code}
        update["_meta"] = meta
    return update


def stream_session_event_update(
    session_id: str,
    event: SessionEvent,
    notify: Notify,
    presenter: Presenter = NULL_PRESENTER,
    terminal: TerminalContext = NO_TERMINAL,
    include_user_messages: bool = True,
) -> None:
    """Translate one logged session event into ``session/update`` notifications.

    * ``assistant/chunk`` text / reasoning deltas → ``agent_message_chunk`` /
      ``agent_thought_chunk`` (other chunks: nothing);
    * ``user/message`` → one ``user_message_chunk`` per text block, only with
      ``include_user_messages`` (load replay; live turns already show the prompt);
    * ``tool/call`` → ``tool_call`` (``in_progress``); ``tool/result`` →
      ``tool_call_update`` (``completed`` / ``failed``), presented by ``presenter``;
    * anything else (other event classes, an :class:`~dsh.core.session.UntypedEvent`)
      → nothing.

    ``notify`` is called synchronously, in order.
    """
    if type(event) is AssistantChunkEvent:
        chunk = event.data.chunk
        if type(chunk) is TextDeltaChunk:
            _send(notify, session_id, {"sessionUpdate": "agent_message_chunk", "content": _text(chunk.text)})
        elif type(chunk) is ReasoningDeltaChunk:
            _send(notify, session_id, {"sessionUpdate": "agent_thought_chunk", "content": _text(chunk.text)})
    elif type(event) is UserMessageEvent:
        if include_user_messages:
            for block in event.data.content:
                content = harness_block_to_acp_content(block)
                if content is not None:
                    _send(notify, session_id, {"sessionUpdate": "user_message_chunk", "content": content})
    elif type(event) is ToolCallEvent:
        call = event.data
        view = presenter.call(call.call_id, call.name, call.arguments)
        _send(notify, session_id, _call_update(call.call_id, view, terminal))
    elif type(event) is ToolResultEvent:
        result = event.data
        shown = presenter.result(result.call_id, result.content, result.is_error)
        _send(notify, session_id, _result_update(result.call_id, result.is_error, shown, terminal))


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _send(notify: Notify, session_id: str, update: dict[str, Any]) -> None:
    notify({"sessionId": session_id, "update": update})
