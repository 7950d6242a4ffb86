"""SPEC §14.14 — ``packages/acp/tests/stream-update.spec.ts``: the pure update stream."""

from __future__ import annotations

from typing import Any

import pytest
from msgspec import Raw

from dsh.acp import (
    NULL_PRESENTER,
    Config,
    TerminalContext,
    ToolPresenter,
    agent_options,
    stream_session_event_update,
    terminal_cwd,
)
from dsh.core.agent import AgentOptions
from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    ImageBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    TokenUsage,
    ToolCallDeltaChunk,
    UsageChunk,
)
from dsh.core.session import SessionEvent
from dsh.core.tools import (
    ToolCallPresentation,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
)
from tests.acp.events import (
    chunk,
    event,
    plain_tool,
    shell_tool,
    text,
    tool_call,
    tool_result,
    user_message,
)

SID = "s-1"


def collect(
    events: list[SessionEvent],
    presenter: Any = NULL_PRESENTER,
    terminal: TerminalContext | None = None,
    include_user_messages: bool = True,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in events:
        if terminal is None:
            stream_session_event_update(SID, item, out.append, presenter, include_user_messages=include_user_messages)
        else:
            stream_session_event_update(SID, item, out.append, presenter, terminal, include_user_messages)
    assert all(n["sessionId"] == SID for n in out)
    return [n["update"] for n in out]


# ------------------------------------------------------------ streamSessionEventUpdate
def test_maps_assistant_chunk_text_delta_to_agent_message_chunk() -> None:
    """maps assistant/chunk text-delta to agent_message_chunk"""
    notifications: list[dict[str, Any]] = []
    stream_session_event_update(SID, chunk(TextDeltaChunk(index=0, text="hi")), notifications.append)
    assert notifications == [
        {
            "sessionId": SID,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
        }
    ]


def test_maps_assistant_chunk_reasoning_delta_to_agent_thought_chunk() -> None:
    """maps assistant/chunk reasoning-delta to agent_thought_chunk"""
    updates = collect([chunk(ReasoningDeltaChunk(index=0, text="hmm"))])
    assert updates == [{"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}]


@pytest.mark.parametrize(
    "value",
    [
        BlockStartChunk(index=0, block_type="text"),
        BlockEndChunk(index=0, block=text("x")),
        BlockEndChunk(index=0, block=Raw(b'{"type":"hologram"}')),
        ToolCallDeltaChunk(index=0, id="c", name="bash", arguments_delta="{"),
        UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=1)),
        FinishChunk(reason=StopFinish()),
        {"type": "finish", "reason": {"kind": "teleported"}},
    ],
)
def test_produces_no_update_for_a_non_text_reasoning_chunk_e_g_block_start(value: StreamChunk | dict[str, Any]) -> None:
    """produces no update for a non-text/reasoning chunk (e.g. block-start)"""
    assert collect([chunk(value)]) == []


def test_maps_tool_call_to_an_in_progress_tool_call_with_inferred_kind_and_parsed_raw_input() -> None:
    """maps tool/call to an in_progress tool_call with inferred kind and parsed rawInput (generic fallback, no presenter)"""
    updates = collect([tool_call("c1", "bash", {"command": "ls"})])
    assert updates == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "bash",
            "kind": "execute",
            "status": "in_progress",
            "rawInput": {"command": "ls"},
        }
    ]
    assert list(updates[0]) == ["sessionUpdate", "toolCallId", "title", "kind", "status", "rawInput"]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("bash", "execute"),
        ("bash_output", "execute"),
        ("bash_kill", "execute"),
        ("read", "read"),
        ("read_file", "read"),
        ("write", "edit"),
        ("edit", "edit"),
        ("edit_file", "edit"),
        ("write_file", "other"),
        ("grep", "other"),
        ("bashful", "other"),
    ],
)
def test_infers_tool_kinds_read_write_edit_other(name: str, kind: str) -> None:
    """infers tool kinds: read*/write*/edit*/other"""
    assert collect([tool_call("c", name, {})])[0]["kind"] == kind


def test_falls_back_to_the_raw_argument_string_when_tool_arguments_are_not_json() -> None:
    """falls back to the raw argument string when tool arguments are not JSON"""
    assert collect([tool_call("c", "bash", "{not json")])[0]["rawInput"] == "{not json"
    assert collect([tool_call("c", "bash", "")])[0]["rawInput"] == {}


def test_a_json_null_argument_omits_raw_input() -> None:
    """(extra) rawInput is written only when present: JSON null arguments leave it out"""
    assert "rawInput" not in collect([tool_call("c", "bash", "null")])[0]


def test_maps_tool_result_to_completed_failed_tool_call_update_with_text_content() -> None:
    """maps tool/result to completed/failed tool_call_update with text content"""
    ok, failed = collect([tool_result("c1", [text("out")]), tool_result("c2", [text("bad")], is_error=True)])
    assert ok == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "out"}}],
    }
    assert failed["status"] == "failed"
    assert failed["content"] == [{"type": "content", "content": {"type": "text", "text": "bad"}}]


def test_drops_non_text_tool_result_content_text_only() -> None:
    """drops non-text tool-result content (text-only)"""
    updates = collect([tool_result("c1", [ImageBlock(url="data:,"), Raw(b'{"type":"hologram"}')])])
    assert updates[0]["content"] == []


def test_maps_user_message_text_blocks_to_user_message_chunk_load_replays_the_user_side() -> None:
    """maps user/message text blocks to user_message_chunk (load replays the user side)"""
    message = user_message([text("a"), ImageBlock(url="data:,"), Raw(b'{"type":"hologram"}'), text("b")])
    assert collect([message]) == [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "a"}},
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "b"}},
    ]


def test_can_suppress_user_message_chunks_for_live_prompt_turns() -> None:
    """can suppress user/message chunks for live prompt turns"""
    message = user_message([text("a")])
    assert collect([message], include_user_messages=False) == []


@pytest.mark.parametrize(
    "item",
    [
        event("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}),
        event("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        event("step/start", {"turn": 1, "step": 1}),
        event("step/end", {"turn": 1, "step": 1}),
        event("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 1}}),
        event("error", {"turn": 1, "step": 1, "message": "x"}),
        event("context/message", {"content": [{"type": "text", "text": "ctx"}], "source": {"kind": "user"}}),
        event(
            "steering/message", {"turn": 1, "content": [{"type": "text", "text": "steer"}], "source": {"kind": "user"}}
        ),
        event("assistant/message", {"turn": 1, "step": 1, "content": [{"type": "text", "text": "done"}]}),
        event("plugin/custom", ["any", "json"]),
        event("turn/start", {"turn": 2, "trigger": {"kind": "telepathy"}}),
    ],
)
def test_produces_no_update_for_boundary_other_event_types(item: SessionEvent) -> None:
    """produces no update for boundary/other event types"""
    assert collect([item]) == []


# ----------------------------------------------------------------- ToolPresenter
def test_tool_call_uses_the_tool_description_title_command_raw_input_tool_kind(tool_registry: ToolRegistry) -> None:
    """tool/call uses the tool: description→title, command→rawInput, tool kind"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    [update] = collect([tool_call("c1", "shell", {"command": "echo hi", "description": "Say hi"})], presenter)
    assert update == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "echo hi",
        "kind": "execute",
        "status": "in_progress",
        "rawInput": "echo hi",
        "content": [{"type": "content", "content": {"type": "text", "text": "Say hi"}}],
    }


def test_tool_result_uses_the_tool_to_reformat_content_resolved_by_the_remembered_tool_call(
    tool_registry: ToolRegistry,
) -> None:
    """tool/result uses the tool to reformat content (resolved by the remembered tool/call)"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    updates = collect(
        [tool_call("c1", "shell", {"command": "echo hi", "description": "d"}), tool_result("c1", [text("hi\n")])],
        presenter,
    )
    assert updates[1]["content"] == [{"type": "content", "content": {"type": "text", "text": "```console\nhi\n```"}}]


def test_a_result_with_no_preceding_call_unknown_call_id_falls_back_to_the_raw_content(
    tool_registry: ToolRegistry,
) -> None:
    """a result with NO preceding call (unknown callId) falls back to the raw content"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    [update] = collect([tool_result("ghost", [text("raw\n")])], presenter)
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": "raw\n"}}]


def test_a_tool_with_no_present_call_present_result_gets_the_generic_fallback_title_name(
    tool_registry: ToolRegistry,
) -> None:
    """a tool with no presentCall/presentResult gets the generic fallback (title = name)"""
    tool_registry.register(plain_tool("read_notes"))
    presenter = ToolPresenter(tool_registry)
    call, result = collect([tool_call("c1", "read_notes", {"x": 1}), tool_result("c1", [text("notes")])], presenter)
    assert (call["title"], call["kind"], call["rawInput"]) == ("read_notes", "read", {"x": 1})
    assert result["content"] == [{"type": "content", "content": {"type": "text", "text": "notes"}}]
    unregistered = collect([tool_call("c2", "nope", {})], presenter)[0]
    assert (unregistered["title"], unregistered["kind"]) == ("nope", "other")


def test_a_presentation_that_omits_kind_content_raw_input_uses_the_defaults(tool_registry: ToolRegistry) -> None:
    """a presentation that omits kind/content/rawInput uses the defaults (kind other, raw result content kept)"""
    tool_registry.register(
        ToolDefinition(
            name="terse",
            description="d",
            parameters={"type": "object", "properties": {}},
            execute=plain_tool("x").execute,
            present_call=lambda args: ToolCallPresentation(title="Terse call"),
            present_result=lambda args, result: ToolResultPresentation(title="Terse done"),
        )
    )
    presenter = ToolPresenter(tool_registry)
    call, result = collect([tool_call("c1", "terse", {"a": 1}), tool_result("c1", [text("kept")])], presenter)
    assert call == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "Terse call",
        "kind": "other",
        "status": "in_progress",
    }
    assert result == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "kept"}}],
        "title": "Terse done",
    }
    assert list(result) == ["sessionUpdate", "toolCallId", "status", "content", "title"]


def test_an_empty_presented_content_list_is_kept(tool_registry: ToolRegistry) -> None:
    """(extra) present.content is None-coalesced: an empty tuple replaces the raw content"""
    tool_registry.register(
        ToolDefinition(
            name="quiet",
            description="d",
            parameters={"type": "object", "properties": {}},
            execute=plain_tool("x").execute,
            present_result=lambda args, result: ToolResultPresentation(content=()),
        )
    )
    presenter = ToolPresenter(tool_registry)
    _, result = collect([tool_call("c1", "quiet", {}), tool_result("c1", [text("hidden")])], presenter)
    assert result["content"] == []


def test_holds_only_in_flight_calls_the_call_id_entry_is_removed_once_its_result_is_presented(
    tool_registry: ToolRegistry,
) -> None:
    """holds ONLY in-flight calls: the callId entry is removed once its result is presented"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    collect([tool_call("c1", "shell", {"command": "a"}), tool_call("c2", "shell", {"command": "b"})], presenter)
    assert presenter.in_flight == 2
    collect([tool_result("c1", [text("x")])], presenter)
    assert presenter.in_flight == 1
    collect([tool_result("c2", [text("y")])], presenter)
    assert presenter.in_flight == 0
    # a second result for the same id is now unknown: raw content
    [again] = collect([tool_result("c1", [text("late")])], presenter)
    assert again["content"] == [{"type": "content", "content": {"type": "text", "text": "late"}}]


def _raising_tool() -> ToolDefinition:
    def present_call(args: Any) -> ToolCallPresentation:
        raise RuntimeError("call presenter broke")

    def present_result(args: Any, result: ToolResult) -> ToolResultPresentation:
        raise ValueError("result presenter broke")

    return ToolDefinition(
        name="kaboom",
        description="d",
        parameters={"type": "object", "properties": {}},
        execute=plain_tool("x").execute,
        present_call=present_call,
        present_result=present_result,
    )


def test_a_throwing_present_call_present_result_is_contained_generic_fallback_on_error_never_propagates(
    tool_registry: ToolRegistry,
) -> None:
    """a THROWING presentCall/presentResult is contained: generic fallback + onError, never propagates"""
    tool_registry.register(_raising_tool())
    errors: list[str] = []
    presenter = ToolPresenter(tool_registry, errors.append)
    call, result = collect([tool_call("c1", "kaboom", {"x": 1}), tool_result("c1", [text("raw")])], presenter)
    assert (call["title"], call["kind"], call["rawInput"]) == ("kaboom", "other", {"x": 1})
    assert result["content"] == [{"type": "content", "content": {"type": "text", "text": "raw"}}]
    assert errors == [
        'acp: tool "kaboom" presentCall threw, using generic presentation: RuntimeError: call presenter broke',
        'acp: tool "kaboom" presentResult threw, using raw result: ValueError: result presenter broke',
    ]


def test_contains_a_throwing_presenter_even_with_the_default_no_op_on_error_sink(tool_registry: ToolRegistry) -> None:
    """contains a throwing presenter even with the DEFAULT (no-op) onError sink"""
    tool_registry.register(_raising_tool())
    presenter = ToolPresenter(tool_registry)
    call, result = collect([tool_call("c1", "kaboom", {}), tool_result("c1", [text("raw")], is_error=True)], presenter)
    assert call["title"] == "kaboom"
    assert result["status"] == "failed"


def test_a_presenter_without_a_registry_presents_generically() -> None:
    """(extra) ToolPresenter(None) behaves like the null presenter but tracks calls"""
    presenter = ToolPresenter(None)
    call, result = collect([tool_call("c1", "bash", {"command": "ls"}), tool_result("c1", [text("x")])], presenter)
    assert call["title"] == "bash"
    assert result["content"][0]["content"]["text"] == "x"
    assert presenter.in_flight == 0


# ------------------------------------------------------- terminal-card mapping
ON = TerminalContext(enabled=True, cwd="/work/space")
OFF = TerminalContext(enabled=False, cwd="/work/space")


def test_capability_on_description_content_then_terminal_block_cwd_from_the_session_header(
    tool_registry: ToolRegistry,
) -> None:
    """capability ON: description content THEN terminal block; cwd from the session header when the tool gives none"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    call, result = collect(
        [tool_call("c1", "shell", {"command": "echo hi", "description": "Say hi"}), tool_result("c1", [text("hi\n")])],
        presenter,
        ON,
    )
    assert call == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c1",
        "title": "echo hi",
        "kind": "execute",
        "status": "in_progress",
        "rawInput": "echo hi",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "Say hi"}},
            {"type": "terminal", "terminalId": "c1"},
        ],
        "_meta": {"terminal_info": {"terminal_id": "c1", "cwd": "/work/space"}},
    }
    assert result == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "_meta": {
            "terminal_output": {"terminal_id": "c1", "data": "hi\n"},
            "terminal_exit": {"terminal_id": "c1", "exit_code": 0},
        },
    }


def test_capability_on_an_absolute_tool_cwd_wins_a_relative_one_resolves_against_the_session_cwd(
    tool_registry: ToolRegistry,
) -> None:
    """capability ON: an ABSOLUTE tool cwd wins; a RELATIVE one resolves against the session cwd"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)

    def cwd_of(workdir: str, terminal: TerminalContext) -> Any:
        [update] = collect([tool_call("c", "shell", {"command": "x", "workdir": workdir})], presenter, terminal)
        return update["_meta"]["terminal_info"].get("cwd")

    assert cwd_of("/abs/dir", ON) == "/abs/dir"
    assert cwd_of("sub/dir", ON) == "/work/space/sub/dir"
    assert cwd_of("../up", ON) == "/work/up"
    assert cwd_of("sub", TerminalContext(enabled=True, cwd=None)) == "sub"
    no_cwd = collect([tool_call("c", "shell", {"command": "x"})], presenter, TerminalContext(enabled=True))
    assert no_cwd[0]["_meta"] == {"terminal_info": {"terminal_id": "c"}}
    assert terminal_cwd(None, None) is None
    assert terminal_cwd(None, "/s") == "/s"


def test_capability_on_a_signal_kill_maps_to_terminal_exit_signal(tool_registry: ToolRegistry) -> None:
    """capability ON: a signal kill maps to terminal_exit.signal"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    output = "partial\n[killed by signal: SIGTERM]"
    _, result = collect(
        [tool_call("c1", "shell", {"command": "sleep 9"}), tool_result("c1", [text(output)])], presenter, ON
    )
    assert result["_meta"] == {
        "terminal_output": {"terminal_id": "c1", "data": output},
        "terminal_exit": {"terminal_id": "c1", "signal": "SIGTERM"},
    }
    _, failed = collect(
        [tool_call("c2", "shell", {"command": "false"}), tool_result("c2", [text("x\n[exit code: 3]")])], presenter, ON
    )
    assert failed["_meta"]["terminal_exit"] == {"terminal_id": "c2", "exit_code": 3}
    assert (result["status"], failed["status"]) == ("failed", "failed")  # (issue) a non-zero exit or a kill failed


def test_a_command_that_exits_non_zero_is_failed_with_or_without_terminal_cards(tool_registry: ToolRegistry) -> None:
    """(issue) exit code 0 completes; a non-zero exit code is reported failed, terminal capability on or off"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    for terminal in (ON, OFF):
        _, ok = collect(
            [tool_call("a", "shell", {"command": "true"}), tool_result("a", [text("fine")])], presenter, terminal
        )
        _, bad = collect(
            [tool_call("b", "shell", {"command": "false"}), tool_result("b", [text("x\n[exit code: 1]")])],
            presenter,
            terminal,
        )
        assert (ok["status"], bad["status"]) == ("completed", "failed")


def test_capability_on_a_terminal_result_with_output_but_no_exit_signal_emits_terminal_output_and_no_exit_pill(
    tool_registry: ToolRegistry,
) -> None:
    """capability ON: a terminal result with output but NO exit/signal emits terminal_output and NO exit pill"""
    tool_registry.register(
        ToolDefinition(
            name="stream",
            description="d",
            parameters={"type": "object", "properties": {}},
            execute=plain_tool("x").execute,
            present_call=lambda args: ToolCallPresentation(title="t", terminal=ToolTerminal()),
            present_result=lambda args, result: ToolResultPresentation(terminal=ToolTerminal(output="so far")),
        )
    )
    presenter = ToolPresenter(tool_registry)
    _, result = collect([tool_call("c1", "stream", {}), tool_result("c1", [text("so far")])], presenter, ON)
    assert result == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "_meta": {"terminal_output": {"terminal_id": "c1", "data": "so far"}},
    }


def test_capability_off_no_terminal_block_or_meta_the_description_content_and_fenced_result_still_render(
    tool_registry: ToolRegistry,
) -> None:
    """capability OFF: no terminal block or _meta; the description content and fenced result still render"""
    tool_registry.register(shell_tool())
    presenter = ToolPresenter(tool_registry)
    call, result = collect(
        [tool_call("c1", "shell", {"command": "echo hi", "description": "Say hi"}), tool_result("c1", [text("hi\n")])],
        presenter,
        TerminalContext(enabled=False, cwd="/work/space"),
    )
    assert call["content"] == [{"type": "content", "content": {"type": "text", "text": "Say hi"}}]
    assert "_meta" not in call
    assert result == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "```console\nhi\n```"}}],
    }


def test_orphan_guard_a_result_side_terminal_with_no_call_side_terminal_is_dropped(
    tool_registry: ToolRegistry,
) -> None:
    """orphan guard: a result-side terminal with NO call-side terminal is dropped (no orphan terminal_output)"""
    tool_registry.register(
        ToolDefinition(
            name="half",
            description="d",
            parameters={"type": "object", "properties": {}},
            execute=plain_tool("x").execute,
            present_call=lambda args: ToolCallPresentation(title="no terminal"),
            present_result=lambda args, result: ToolResultPresentation(
                content=(text("shown"),), terminal=ToolTerminal(output="orphan", exit_code=0)
            ),
        )
    )
    presenter = ToolPresenter(tool_registry)
    call, result = collect([tool_call("c1", "half", {}), tool_result("c1", [text("raw")])], presenter, ON)
    assert "_meta" not in call
    assert "content" not in call
    assert result == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "shown"}}],
    }


# ----------------------------------------------------------------- agentOptions
def test_includes_only_the_fields_present_in_config() -> None:
    """includes only the fields present in config"""
    assert agent_options(Config()) == AgentOptions()
    only_model = agent_options(Config.model_validate({"model": "m"}))
    assert (only_model.model, only_model.system_prompt, only_model.extra) == ("m", None, {})
    both = agent_options(Config.model_validate({"model": "m", "systemPrompt": "be terse"}))
    assert (both.model, both.system_prompt) == ("m", "be terse")
    first, second = agent_options(Config()), agent_options(Config())
    assert first is not second  # each agent owns its options
