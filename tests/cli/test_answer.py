"""What `dsh run` prints: the streamed text, tool lines on stderr, JSON lines; a closed stdout stops it quietly."""

from __future__ import annotations

import io
import json

import pytest

import dsh.plugins.tool_bash as tool_bash
from dsh.cli.answer import RESULT_PREVIEW, EventLines, TextAnswer
from dsh.core.llm import text, to_json
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response


class ClosedStream(io.StringIO):
    def write(self, _text: str, /) -> int:
        raise BrokenPipeError("closed")


async def test_text_answer_prints_only_its_agents_text(capsys: pytest.CaptureFixture[str]) -> None:
    script = [
        tool_call_response(
            "c1", "bash", {"command": "printf 'a%.0s' $(seq 300); echo", "description": "long"}, text="One."
        ),
        tool_call_response("c2", "bash", {"command": "exit 3", "description": "fail"}),
        tool_call_response("c3", "nope", {}),
        text_response("Two."),
        text_response("other agent"),
    ]
    async with Harness(script) as h:
        await h.ctx.plugin(LocalBashExecutor)
        await h.ctx.plugin(tool_bash)
        agent = h.agent()
        answer = TextAnswer(h.ctx, agent)
        agent.send([text("go")])
        await agent.when_idle()
        other = h.agent("other")
        other.send([text("hi")])
        await other.when_idle()
        answer.end_line()
        answer.end_line()
    out, err = capsys.readouterr()
    assert out == "One.\nTwo.\n"
    lines = err.splitlines()
    assert lines[0].startswith('[tool call] bash({"command":"printf')
    assert lines[1] == f"[tool result] {'a' * RESULT_PREVIEW}…"
    assert lines[3] == "[tool result] (no output) (+1 more line)"
    assert lines[5].startswith("[tool result (error)] ")
    assert answer.wrote


async def test_a_closed_stdout_stops_the_printing_without_failing_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    async with Harness([text_response("lost"), text_response("lost too")]) as h:
        agent = h.agent()
        answer = TextAnswer(h.ctx, agent)
        lines = EventLines(h.ctx, agent.session)
        monkeypatch.setattr("sys.stdout", ClosedStream())
        agent.send([text("go")])
        await agent.when_idle()
        assert (answer.broken, lines.broken, answer.wrote) == (True, True, False)
        agent.send([text("again")])
        await agent.when_idle()
        assert to_json(agent.session.events[-1])["data"]["reason"] == {"kind": "completed"}


async def test_event_lines_print_their_session_only(capsys: pytest.CaptureFixture[str]) -> None:
    async with Harness([text_response("a"), text_response("b")]) as h:
        mine, other = h.agent("main"), h.agent("other")
        EventLines(h.ctx, mine.session)
        mine.send([text("x")])
        await mine.when_idle()
        other.send([text("y")])
        await other.when_idle()
        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert printed == to_json(list(mine.session.events))
