"""SPEC §6.1 vocabulary: results on the wire, failure texts, presentation, events, public names."""

from __future__ import annotations

import typing

import msgspec
import pytest

import dsh.core.session as session_package
import dsh.core.system_prompt as system_prompt_package
import dsh.core.tools as tools_package
from dsh.core.errors import HarnessError, ToolArgsError
from dsh.core.llm import UNSET, encode, text, to_json
from dsh.core.session import ToolErrorInfo
from dsh.core.system_prompt import SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE
from dsh.core.tools import (
    TOOLS_CHANGE,
    TOOLS_EXECUTE,
    ToolCallKind,
    ToolCallPresentation,
    ToolExecutionResult,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
    failure_message,
    tool_error_result,
)


def test_tool_execution_result_encodes_to_the_wire_shape_in_key_order() -> None:
    """(6.1) ToolExecutionResult = {callId, content, isError, error?} (key order)"""
    plain = ToolExecutionResult(call_id="c", content=(), is_error=False)
    failed = ToolExecutionResult(
        call_id="c", content=(text("x"),), is_error=True, error=ToolErrorInfo(name="E", code="C")
    )

    assert encode(plain) == b'{"callId":"c","content":[],"isError":false}'
    assert list(to_json(failed)) == ["callId", "content", "isError", "error"]
    assert to_json(failed)["error"] == {"name": "E", "code": "C"}
    assert plain.error is UNSET


def test_results_and_presentations_are_immutable_values() -> None:
    """(typed values) results and presentations are frozen: a change is a new value, never an edit"""
    result = ToolExecutionResult(call_id="c", content=(text("x"),), is_error=False)
    fields: list[tuple[object, str]] = [
        (result, "content"),
        (ToolResult(content=(), is_error=False), "is_error"),
        (ToolCallPresentation(title="t"), "title"),
        (ToolResultPresentation(), "content"),
        (ToolTerminal(), "output"),
    ]

    for value, field in fields:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(value, field, None)
    changed = msgspec.structs.replace(result, is_error=True)
    assert (changed.is_error, result.is_error) == (True, False)
    assert to_json(ToolResult(content=(text("x"),), is_error=True)) == {
        "content": [{"type": "text", "text": "x"}],
        "isError": True,
    }


def test_tool_error_info_has_one_definition() -> None:
    """(typed values) the tools package re-exports the session's ToolErrorInfo, it defines none"""
    assert tools_package.ToolErrorInfo is session_package.ToolErrorInfo


def test_failure_messages_follow_the_documented_mapping() -> None:
    """(6.2 / §17.38) str(error), else a string ``.message``, else the class name"""

    class SilentError(Exception):
        pass

    with_message = SilentError()
    with_message.message = "from attribute"  # type: ignore[attr-defined]
    empty_message = SilentError()
    empty_message.message = ""  # type: ignore[attr-defined]

    assert failure_message(RuntimeError("plain")) == "plain"
    assert failure_message(HarnessError("harness", "X")) == "harness"
    assert failure_message(with_message) == "from attribute"
    assert failure_message(empty_message) == "SilentError"
    assert failure_message(SilentError()) == "SilentError"
    assert failure_message(KeyError("k")) == "'k'"


def test_tool_error_result_attaches_structure_only_for_harness_errors() -> None:
    """(6.2) error = {name, code} for HarnessError subclasses only"""
    args_error = tool_error_result("a", ToolArgsError(["bad"]))
    plain = tool_error_result("b", ValueError("nope"))

    assert args_error == ToolExecutionResult(
        call_id="a",
        content=(text("Error: invalid arguments: bad"),),
        is_error=True,
        error=ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS"),
    )
    assert to_json(plain) == {
        "callId": "b",
        "content": [{"type": "text", "text": "Error: nope"}],
        "isError": True,
    }


def test_presentation_fields_default_to_absent() -> None:
    """(6.1) title is required; every other presentation field is optional (None = absent)"""
    call = ToolCallPresentation(title="Run ls")
    result = ToolResultPresentation()
    terminal = ToolTerminal()

    assert (call.kind, call.raw_input, call.content, call.terminal) == (None, None, None, None)
    assert (result.title, result.content, result.terminal) == (None, None, None)
    assert (terminal.cwd, terminal.output, terminal.exit_code, terminal.signal) == (None, None, None, None)
    assert typing.get_args(ToolCallKind) == (
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "fetch",
        "other",
    )


def test_a_terminal_reports_an_exit_code_or_a_signal_never_both() -> None:
    """(6.1) the result side carries exactly one of exitCode/signal when known"""
    assert ToolTerminal(output="x", exit_code=0).exit_code == 0
    assert ToolTerminal(output="x", signal="SIGTERM").signal == "SIGTERM"
    with pytest.raises(ValueError, match="not both: leave one of them None"):
        ToolTerminal(output="x", exit_code=1, signal="SIGKILL")


def test_events_are_declared_with_their_names_and_modes() -> None:
    """(5, 6.2) the event catalog: names and dispatch modes"""
    declared = [SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE, TOOLS_EXECUTE, TOOLS_CHANGE]

    assert [(event.name, event.mode) for event in declared] == [
        ("system-prompt/assemble", "waterfall"),
        ("system-prompt/change", "emit"),
        ("tools/execute", "waterfall"),
        ("tools/change", "emit"),
    ]
    assert all(event.doc for event in declared)


@pytest.mark.parametrize("package", [system_prompt_package, tools_package])
def test_packages_export_a_sorted_complete_all(package: object) -> None:
    """(style) each package re-exports its public names with a sorted ``__all__``"""
    names: list[str] = package.__all__  # type: ignore[attr-defined]

    def isort_key(name: str) -> tuple[int, str]:
        kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
        return (kind, name)

    assert names == sorted(names, key=isort_key)
    assert all(hasattr(package, name) for name in names)
