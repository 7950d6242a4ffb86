"""The rich terminal view of `dsh chat`, driven by a real agent loop with a scripted model."""

from __future__ import annotations

import asyncio
import io
import os
import termios
from typing import Any

from rich.console import Console

import dsh.plugins.tool_bash as tool_bash
from dsh.cli.terminal import RESULT_LINES, Echo, OutputTail, TerminalView
from dsh.core.agent import AGENT_STREAM_CHUNK
from dsh.core.bash import BASH_OUTPUT
from dsh.core.errors import LlmError
from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    TokenUsage,
    UsageChunk,
    text,
)
from dsh.core.session import SteeringMessageEvent
from dsh.core.tools import ToolCallPresentation, define_tool
from dsh.kernel import Context
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, Fail, max_tokens_response, text_response, tool_call_response


def screen() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=100, record=True)


def reasoning_then_text(thought: str, answer: str) -> list[StreamChunk]:
    return [
        BlockStartChunk(index=0, block_type="reasoning"),
        ReasoningDeltaChunk(index=0, text=thought),
        BlockEndChunk(index=0, block=ReasoningBlock(text=thought)),
        BlockStartChunk(index=1, block_type="text"),
        TextDeltaChunk(index=1, text=answer),
        BlockEndChunk(index=1, block=text(answer)),
        UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=1)),
        FinishChunk(reason=StopFinish()),
    ]


async def test_a_turn_with_reasoning_markdown_and_a_bash_card() -> None:
    script = [
        tool_call_response("c1", "bash", {"command": "printf 'x\\n'", "description": "print x"}, text="Let me look."),
        reasoning_then_text("pondering", "# Title\n\n**done**"),
    ]
    console = screen()
    async with Harness(script) as h:
        await h.ctx.plugin(LocalBashExecutor)
        await h.ctx.plugin(tool_bash)
        agent = h.agent()
        view = TerminalView(h.ctx, agent, console)
        view.welcome("hello there")
        agent.send([text("go")])
        await agent.when_idle()
        view.close()
        view.close()
    drawn = console.export_text()
    assert "hello there" in drawn
    assert "Let me look." in drawn
    assert "╭─ bash" in drawn
    assert "$ printf 'x\\n'" in drawn
    assert "print x" in drawn
    assert "╭─ result" in drawn
    assert "pondering" in drawn
    assert "Title" in drawn
    assert "**done**" not in drawn  # rendered as markdown
    assert drawn.rstrip().endswith("›")


async def test_turns_that_do_not_complete_are_called_out() -> None:
    console = screen()
    async with Harness([Fail(LlmError("model down", "SERVER")), HANG, max_tokens_response("cut")]) as h:
        agent = h.agent()
        TerminalView(h.ctx, agent, console)
        streaming = asyncio.Event()
        h.ctx.on(AGENT_STREAM_CHUNK, lambda *_args: streaming.set())
        agent.send([text("one")])
        await agent.when_idle()
        agent.send([text("two")])
        await streaming.wait()
        agent.abort("stop")
        await agent.when_idle()
        agent.send([text("three")])
        await agent.when_idle()
    drawn = console.export_text()
    assert "turn 1 ended: error: model down [SERVER]" in drawn
    assert "turn 2 ended: aborted (stop)" in drawn
    assert "partial" in drawn
    assert "turn 3 ended: max-tokens" in drawn


async def test_other_agents_and_chunk_types_are_ignored() -> None:
    console = screen()
    async with Harness([text_response("theirs"), text_response("mine")]) as h:
        mine, theirs = h.agent("main"), h.agent("other")
        TerminalView(h.ctx, mine, console)
        theirs.send([text("x")])
        await theirs.when_idle()
        mine.send([text("y")])
        await mine.when_idle()
    drawn = console.export_text()
    assert "mine" in drawn
    assert "theirs" not in drawn


async def test_call_cards_fall_back_to_the_raw_arguments() -> None:
    async def run(_args: Any, _execution: Any) -> tuple[Any, ...]:
        return ()

    def present(args: Any) -> ToolCallPresentation:
        return ToolCallPresentation(title=f"open {args['path']}", kind="read")

    root = Context()
    view = TerminalView(root, object(), screen())  # type: ignore[arg-type]
    assert _plain(view.call_card("any", '{"a":1}')) == 'any {"a":1}'  # no tools service at all
    async with Harness() as h:
        await h.ctx.plugin(LocalBashExecutor)
        await h.ctx.plugin(tool_bash)
        h.tools.register(define_tool("open", "open a file", {"path": {"type": "string"}}, run, present_call=present))
        h.tools.register(define_tool("plain", "no presenter", {}, run))
        view = TerminalView(h.ctx, object(), screen())  # type: ignore[arg-type]
        assert _plain(view.call_card("open", '{"path":"a.txt"}')) == "open a.txt"
        assert _plain(view.call_card("plain", "{}")) == "plain {}"
        assert _plain(view.call_card("missing", "{}")) == "missing {}"
        assert _plain(view.call_card("bash", "not json")) == "bash not json"
        assert _plain(view.call_card("bash", '{"description":"ls"}')) == 'bash {"description":"ls"}'
        assert _plain(view.call_card("bash", '{"command":"ls"}')) == "$ ls"  # description is optional
    await root.dispose()


def test_result_cards_show_the_tail_and_flag_errors() -> None:
    view = TerminalView(Context(), object(), screen())  # type: ignore[arg-type]
    long = "".join(f"line {n}\n" for n in range(RESULT_LINES + 5))
    card = view.result_card((text(long),), is_error=False)
    shown = _plain(card)
    assert shown.startswith("… 5 more lines\nline 5")
    assert card.border_style == "green"
    failed = view.result_card((), is_error=True)
    assert (_plain(failed), failed.title, failed.border_style) == ("(no output)", "error", "red")


def _plain(panel: Any) -> str:
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(panel.renderable)
    return "\n".join(line.rstrip() for line in console.export_text().rstrip("\n").split("\n"))


async def test_a_steering_line_is_shown_on_a_line_of_its_own() -> None:
    script = [tool_call_response("c1", "nudge", {}, text="Working."), text_response("Steered.")]
    console = screen()
    async with Harness(script) as h:

        async def nudge(_args: Any, execution: Any) -> tuple[Any, ...]:
            execution.agent.steer([text("use the other file")])
            return (text("ok"),)

        h.tools.register(define_tool("nudge", "steer", {}, nudge))
        agent = h.agent()
        view = TerminalView(h.ctx, agent, console)
        agent.send([text("go")])
        await agent.when_idle()
        view.close()
    drawn = console.export_text()
    assert "› use the other file" in drawn, drawn


async def test_a_typed_line_shows_once_and_the_stream_goes_on_below_it() -> None:
    script = [tool_call_response("c1", "nudge", {}, text="Working."), text_response("Steered.")]
    console = screen()
    async with Harness(script) as h:
        views: list[TerminalView] = []

        async def nudge(_args: Any, execution: Any) -> tuple[Any, ...]:
            views[0].typed("use the other file")  # typed while the tool runs: its spinner comes back
            execution.agent.steer([text("use the other file")])
            return (text("ok"),)

        h.tools.register(define_tool("nudge", "steer", {}, nudge))
        agent = h.agent()
        view = TerminalView(h.ctx, agent, console)
        views.append(view)
        view.typed("before anything")  # nothing runs: just the line
        agent.send([text("go")])
        await agent.when_idle()
        view.close()
        steering = next(event for event in agent.session.events if type(event) is SteeringMessageEvent)
        later = screen()
        again = TerminalView(h.ctx, agent, later)
        again.on_step_start(agent, 2, 1)  # a spinner runs: it starts again below the line
        again.on_event(agent.session, steering)
        assert again._status is not None
        again.close()
    drawn = console.export_text()
    assert drawn.count("› use the other file") == 1, drawn  # the logged steering is not shown again
    assert "› before anything" in drawn
    assert drawn.index("› use the other file") < drawn.index("Steered.")
    assert "› use the other file" in later.export_text()


def test_the_output_tail_keeps_the_last_lines_and_counts_the_others() -> None:
    tail = OutputTail(3)
    assert tail.render() == ""
    tail.feed("one\ntw")
    assert tail.render() == "one\ntw"
    tail.feed("o\nthree\nfour")
    assert tail.render() == "… 1 more lines\ntwo\nthree\nfour"  # the unfinished line counts
    tail.feed("\nfive\n")
    assert (tail.render(), tail.dropped) == ("… 2 more lines\nthree\nfour\nfive", 2)


def test_echo_goes_off_and_on_again_on_a_terminal_only() -> None:
    master, slave = os.openpty()
    read_end, write_end = os.pipe()
    try:
        echo = Echo(slave)
        echo.hide()
        echo.hide()
        assert not termios.tcgetattr(slave)[3] & termios.ECHO
        echo.show()
        assert termios.tcgetattr(slave)[3] & termios.ECHO
        echo.hide()
        echo.restore()
        assert termios.tcgetattr(slave)[3] & termios.ECHO
        assert not echo.hidden
        for nothing in (Echo(None), Echo(read_end)):  # no terminal: nothing to switch
            nothing.hide()
            nothing.restore()
            assert nothing.fd is None
            assert not nothing.hidden
    finally:
        for fd in (master, slave, read_end, write_end):
            os.close(fd)


async def test_live_bash_output_shows_under_the_spinner_of_its_agent_only() -> None:
    script = [
        tool_call_response("c1", "bash", {"command": "printf 'a\\nb\\n'; sleep 0.3; echo c"}),
        text_response("ok"),
    ]
    console = screen()
    async with Harness(script) as h:
        await h.ctx.plugin(LocalBashExecutor)
        await h.ctx.plugin(tool_bash)
        agent = h.agent()
        view = TerminalView(h.ctx, agent, console)
        seen: list[str] = []

        def record(_who: object | None, _stream: str, _piece: str) -> None:  # after the view's own listener
            if view._output is not None:
                seen.append(view._output.render())

        h.ctx.emit(BASH_OUTPUT, object(), "stdout", "someone else's\n")  # not this agent: ignored
        view.on_output(agent, "stdout", "no spinner yet\n")  # nothing runs: ignored
        h.ctx.on(BASH_OUTPUT, record)
        agent.send([text("go")])
        await agent.when_idle()
        view.close()
    assert seen
    assert seen[-1] == "a\nb\nc"
    assert "someone else" not in "".join(seen)
    assert "no spinner" not in "".join(seen)
