"""`--max-steps` and `--max-turns` (issue 17): a looping model stops at the limit, the exit status is 4
and the message names the flag that raises it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.cli import amain, build_parser
from dsh.cli.agent import EXIT_LIMIT, MAX_STEPS_HINT, describe_reason, exit_status
from dsh.cli.limits import TurnBudget
from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings
from dsh.core.agent import AGENT_STEP_START, AGENT_TURN_END, AgentOptions
from dsh.core.session import MaxStepsReason
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptedModel, text_response, tool_call_response
from dsh.testing.wire import Reply, WireServer, text_reply, tool_call
from tests.agent_loop.helpers import of_type, text
from tests.cli.helpers import log_of, namespace, session_id_of, turn_ends, write_tree

BASH = json.dumps({"command": "echo again", "description": "the same again"})


def looping(server: WireServer, count: int) -> None:
    server.add(*[Reply([*tool_call(0, f"call-{i}", "bash", BASH)]) for i in range(count)])


def tree_with(tmp_path: Path, sessions_root: Path, workspace: Path, *extra: dict[str, Any]) -> Path:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {})
    return write_tree(tmp_path / "tree.yml", [*profile_entries(settings), *extra])


async def test_a_looping_model_stops_at_max_steps_and_exits_4(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    looping(server, 3)
    status = await amain(
        ["run", "--sessions-root", str(sessions_root), "--cwd", str(workspace), "--max-steps", "3", "go"]
    )
    assert status == EXIT_LIMIT
    err = capsys.readouterr().err
    assert f"turn 1 ended: max-steps ({MAX_STEPS_HINT})" in err
    assert "--max-steps" in err
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "max-steps"}}]
    assert len([event for event in events if event["type"] == "tool/result"]) == 3
    assert len(server.requests) == 3


async def test_the_repeat_guard_notes_the_loop_before_the_limit_ends_it(
    tmp_path: Path, server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    looping(server, 4)
    tree = tree_with(tmp_path, sessions_root, workspace, {"id": "guard", "name": "dsh.plugins.repeat_guard"})
    assert await amain(["run", "--config", str(tree), "--max-steps", "4", "go"]) == EXIT_LIMIT
    err = capsys.readouterr().err
    _, events = log_of(sessions_root, session_id_of(err))
    (note,) = [event["data"] for event in events if event["type"] == "steering/message"]
    assert note["source"] == {"kind": "plugin", "plugin": "repeat-guard"}
    assert "call number 3 in a row of bash" in note["content"][0]["text"]
    last = server.requests[3].json["messages"]
    assert any("call number 3 in a row of bash" in str(message.get("content")) for message in last)


async def test_max_turns_stops_a_plugin_that_keeps_the_agent_going(
    tmp_path: Path, server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(text_reply("one"), text_reply("two"), text_reply("three"))
    tree = tree_with(tmp_path, sessions_root, workspace, {"id": "more", "name": "tests.cli.plugins.follow_up"})
    assert await amain(["run", "--config", str(tree), "--max-turns", "2", "go"]) == EXIT_LIMIT
    captured = capsys.readouterr()
    assert captured.out == "one\ntwo\n"
    assert "stopped after 2 turns (--max-turns 2) with more work queued; raise --max-turns" in captured.err
    _, events = log_of(sessions_root, session_id_of(captured.err))
    assert [end["turn"] for end in turn_ends(events)] == [1, 2]
    assert len(server.requests) == 2


async def test_a_run_within_max_turns_exits_0(
    tmp_path: Path, server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(text_reply("one"), text_reply("two"))
    tree = tree_with(
        tmp_path,
        sessions_root,
        workspace,
        {"id": "more", "name": "tests.cli.plugins.follow_up", "config": {"times": 1}},
    )
    assert await amain(["run", "--config", str(tree), "--max-turns", "3", "go"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "one\ntwo\n"
    assert "--max-turns" not in captured.err


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_limits_must_be_whole_numbers_of_at_least_one(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--max-steps", value, "hi"])
    assert exited.value.code == 2
    assert f"expected a whole number of at least 1, got {value!r}" in capsys.readouterr().err


def test_the_flags_parse_on_run_and_chat() -> None:
    parsed = build_parser().parse_args(["run", "--max-steps", "5", "--max-turns", "2", "hi"])
    assert (parsed.max_steps, parsed.max_turns) == (5, 2)
    assert build_parser().parse_args(["chat", "--max-steps", "7"]).max_steps == 7
    assert build_parser().parse_args(["chat"]).max_steps is None


def test_max_steps_has_its_own_status_and_message() -> None:
    assert exit_status(MaxStepsReason()) == EXIT_LIMIT == 4
    assert describe_reason(MaxStepsReason()) == f"max-steps ({MAX_STEPS_HINT})"


# ------------------------------------------------------------------ TurnBudget
async def test_input_queued_after_the_last_turn_is_dropped() -> None:
    async with Harness([text_response("one"), text_response("two")]) as h:
        agent = h.agent()
        budget = TurnBudget(h.ctx, agent, 1)
        h.ctx.on(AGENT_TURN_END, lambda a, turn, _r: a.send(text("more")) if turn == 1 else None)
        agent.send(text("go"))
        await agent.when_idle()
        assert (budget.turns, budget.exhausted, budget.stopped) == (1, True, True)
        assert [end["turn"] for end in of_type(agent.session, "turn/end")] == [1]


async def test_steering_left_when_the_last_turn_ends_is_dropped() -> None:
    """Steering taken into a step is not pending; steering queued at the turn's end is dropped."""
    async with Harness([tool_call_response("c1", "nothing", {}), text_response("one")]) as h:
        h.llm.register_adapter(["other"], ScriptedModel([text_response("o1"), text_response("o2")]))
        agent = h.agent()
        other = h.loop.create("other", AgentOptions(model="other"))
        budget = TurnBudget(h.ctx, agent, 1)
        steered: set[Any] = set()

        def steer_once(a: Any, _turn: int, _step: int) -> None:
            if a not in steered:
                steered.add(a)
                a.steer(text("early"))

        h.ctx.on(AGENT_STEP_START, steer_once)
        h.ctx.on(AGENT_TURN_END, lambda a, _turn, _r: a.steer(text("late")) if a is agent else None, prepend=True)
        agent.send(text("go"))
        other.send(text("elsewhere"))
        await agent.when_idle()
        await other.when_idle()
        assert (budget.turns, budget.stopped) == (1, True)
        assert [end["turn"] for end in of_type(agent.session, "turn/end")] == [1]
        assert len(of_type(agent.session, "steering/message")) == 1
        assert len(of_type(other.session, "steering/message")) == 1


async def test_a_run_that_ends_within_its_budget_is_not_stopped() -> None:
    async with Harness([text_response("one")]) as h:
        agent = h.agent()
        budget = TurnBudget(h.ctx, agent, 1)
        agent.send(text("go"))
        await agent.when_idle()
        assert (budget.turns, budget.exhausted, budget.stopped) == (1, True, False)
