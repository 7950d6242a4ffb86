"""The error tree of dsh.core.errors."""

from __future__ import annotations

import pytest
from msgspec import Raw

from dsh.core.errors import (
    HarnessError,
    InvariantError,
    LlmError,
    ToolArgsError,
    ToolNotFoundError,
    assert_never,
    error_code,
    error_message,
    is_harness_error,
    to_error,
)
from dsh.core.llm import TextDeltaChunk


def test_every_class_names_itself_and_keeps_a_stable_code() -> None:
    cause = OSError("disk")
    error = HarnessError("boom", "BOOM", cause)
    assert (error.name, error.code, str(error), error.cause, error.__cause__) == (
        "HarnessError",
        "BOOM",
        "boom",
        cause,
        cause,
    )
    assert HarnessError("plain").code == "UNKNOWN"
    assert LlmError("no", "AUTH", 401).status == 401
    assert ToolArgsError(["a", "b"]).message == "invalid arguments: a; b"
    assert ToolNotFoundError("x").tool_name == "x"
    assert InvariantError("bad").message == "invariant violated: bad"
    assert is_harness_error(LlmError("x", "Y"))
    assert not is_harness_error(ValueError("x"))


def test_a_non_exception_cause_is_kept_but_not_chained() -> None:
    error = HarnessError("wrapped", cause={"code": 500})
    assert error.cause == {"code": 500}
    assert error.__cause__ is None


def test_assert_never_shows_json_or_falls_back_to_str() -> None:
    with pytest.raises(HarnessError, match=r'unreachable variant in ctx: \{"type":"rogue"\}'):
        assert_never({"type": "rogue"}, "ctx")
    with pytest.raises(HarnessError, match="unreachable variant: undefined"):
        assert_never(None)
    with pytest.raises(HarnessError, match=r"unreachable variant: \{1, 2\}"):
        assert_never({1, 2})


def test_assert_never_shows_typed_values_as_their_wire_json() -> None:
    with pytest.raises(HarnessError, match=r'in push: \{"type":"text-delta","index":0,"text":"x"\}$'):
        assert_never(TextDeltaChunk(index=0, text="x"), "push")
    with pytest.raises(HarnessError, match=r'unreachable variant: \[\{"type":"rogue","n":1\}\]$'):
        assert_never([Raw(b'{"type":"rogue","n":1}')])
    with pytest.raises(HarnessError, match=r"unreachable variant: <object object at"):
        assert_never(object())


def test_to_error_passes_exceptions_and_wraps_anything_else() -> None:
    original = KeyError("k")
    assert to_error(original) is original
    wrapped = to_error("naked string error")
    assert isinstance(wrapped, HarnessError)
    assert (str(wrapped), wrapped.code, wrapped.cause) == ("naked string error", "UNKNOWN", "naked string error")


def test_error_message_and_code_read_what_an_error_carries() -> None:
    class CodedError(Exception):
        code = 42

    assert error_message(ValueError("")) == "ValueError"
    assert error_message(ValueError("why")) == "why"
    assert error_code(LlmError("x", "RATE_LIMIT")) == "RATE_LIMIT"
    assert error_code(CodedError()) is None
    assert error_code(ValueError()) is None


def test_context_window_wording_of_providers_is_recognized_and_other_refusals_are_not() -> None:
    from dsh.core.errors import is_context_window_exceeded

    assert is_context_window_exceeded(
        "This model's maximum context length is 131072 tokens. However, you requested 140322 tokens."
    )
    assert is_context_window_exceeded("context_length_exceeded")
    assert is_context_window_exceeded("Prompt is too long for the model's context window")
    assert not is_context_window_exceeded("Invalid request: messages[0].role is unknown")
    assert not is_context_window_exceeded("the context of this request is fine")
