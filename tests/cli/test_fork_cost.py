"""`dsh sessions fork`, `dsh run --fork`, usage in `sessions show`, the `run --json` summary and `--max-cost`,
in-process through the real loader, loop and JSONL persistence, against the local wire server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.profile import DEFAULT_MODEL
from dsh.cli.sessions import pricing_model
from dsh.cli.settings import Settings
from dsh.cli.usage import format_cost, price_of
from dsh.testing.wire import Finish, Reply, TextDelta, Usage, WireServer, text_reply, tool_call
from tests.cli.helpers import log_of, namespace, session_id_of, turn_ends, write_tree


def run_args(root: Path, cwd: Path, *rest: str) -> list[str]:
    return ["run", "--sessions-root", str(root), "--cwd", str(cwd), *rest]


def sessions_args(root: Path, *rest: str) -> list[str]:
    return ["sessions", *rest, "--sessions-root", str(root)]


async def _two_turns(server: WireServer, root: Path, cwd: Path, capsys: pytest.CaptureFixture[str]) -> str:
    server.add(text_reply("one", usage=Usage(100, 10, cached_tokens=40)), text_reply("two", usage=Usage(200, 20)))
    assert await amain(run_args(root, cwd, "first")) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(run_args(root, cwd, "--resume", session_id, "second")) == 0
    capsys.readouterr()
    return session_id


async def test_sessions_fork_prints_the_new_id_and_the_fork_resumes_with_the_source_history(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = await _two_turns(server, sessions_root, workspace, capsys)
    assert await amain(sessions_args(sessions_root, "fork", source[:8], "--turn", "1")) == 0
    forked = capsys.readouterr().out.strip()
    header, events = log_of(sessions_root, forked)
    _, source_events = log_of(sessions_root, source)
    cut = next(index for index, event in enumerate(source_events) if event["type"] == "turn/end") + 1
    assert header["parentSession"] == source
    assert header["seedLength"] == cut
    assert header["cwd"] == str(workspace)
    assert list(header)[-2:] == ["parentSession", "seedLength"]
    assert events == source_events[:cut]
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
    server.add(text_reply("two again"))
    assert await amain(run_args(sessions_root, workspace, "--resume", forked, "second")) == 0
    assert server.requests[2].json["messages"] == server.requests[1].json["messages"]
    assert await amain(sessions_args(sessions_root, "show", forked)) == 0
    assert f"forked from {source} (its first {cut} events)\n" in capsys.readouterr().out


async def test_sessions_fork_refuses_a_turn_that_is_not_there(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = await _two_turns(server, sessions_root, workspace, capsys)
    assert await amain(sessions_args(sessions_root, "fork", source, "--turn", "5")) == 1
    err = capsys.readouterr().err
    assert "sessions fork: the session has no turn 5 to fork at (completed turns: 1, 2)" in err


async def test_run_fork_continues_after_the_last_completed_turn(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = await _two_turns(server, sessions_root, workspace, capsys)
    server.add(text_reply("three"))
    assert await amain(run_args(sessions_root, workspace, "--fork", source, "third")) == 0
    out, err = capsys.readouterr()
    forked = session_id_of(err)
    assert out == "three\n"
    assert forked != source
    header, events = log_of(sessions_root, forked)
    _, source_events = log_of(sessions_root, source)
    assert header["parentSession"] == source
    assert header["seedLength"] == len(source_events)
    assert [end["turn"] for end in turn_ends(events)] == [1, 2, 3]
    messages = server.requests[2].json["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user", "assistant", "user"]


async def test_run_fork_of_an_unknown_session_says_so(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(run_args(sessions_root, workspace, "--fork", "nope", "hi")) == 1
    assert 'cannot fork session "nope": no stored session has an id starting with "nope"' in capsys.readouterr().err


async def test_run_fork_needs_persistence(tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(
        tmp_path / "tree.yml",
        [
            {"id": "llm", "name": "llm"},
            {"id": "sessions", "name": "sessions"},
            {"id": "system-prompt", "name": "system-prompt"},
            {"id": "tools", "name": "tools"},
            {"id": "agents", "name": "agents"},
            {"id": "agent-loop", "name": "agent-loop", "config": {"agents": []}},
            {"id": "model", "name": "llm-demo", "config": {"models": ["demo"]}},
        ],
    )
    assert await amain(["run", "--config", str(tree), "--cwd", str(workspace), "--fork", "x", "hi"]) == 1
    assert 'cannot fork session "x": the tree provides no session persistence' in capsys.readouterr().err


async def test_sessions_show_ends_with_the_usage_per_turn_and_for_the_session(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = await _two_turns(server, sessions_root, workspace, capsys)
    assert await amain(sessions_args(sessions_root, "show", source)) == 0
    lines = capsys.readouterr().out.splitlines()
    price = price_of("deepseek-v4-flash")
    assert price is not None
    first = (60 * price.input + 40 * price.cache_read + 10 * price.output) / 1e6
    second = (200 * price.input + 20 * price.output) / 1e6
    assert lines[-4:] == [
        "── usage (at deepseek-v4-flash prices) ──",
        f"turn 1: 1 step(s); in 60, out 10, cache read 40, cache write 0, reasoning 0; cost {format_cost(first)}",
        f"turn 2: 1 step(s); in 200, out 20, cache read 0, cache write 0, reasoning 0; cost {format_cost(second)}",
        "session: 2 turn(s), 2 step(s); in 260, out 30, cache read 40, cache write 0, reasoning 0; "
        f"cost {format_cost(first + second)}",
    ]
    assert await amain([*sessions_args(sessions_root, "show", source), "--model", "unpriced"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[-4] == "── usage (no price known for the model) ──"
    assert shown[-1].endswith("cost -")


async def test_run_json_ends_with_a_summary_line(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(text_reply("ok", usage=Usage(1000, 100, reasoning_tokens=30)))
    assert await amain(run_args(sessions_root, workspace, "--json", "hi")) == 0
    out, err = capsys.readouterr()
    *events, last = (json.loads(line) for line in out.splitlines())
    summary = dict(last)
    duration = summary.pop("durationMs")
    price = price_of("deepseek-v4-flash")
    assert price is not None
    assert summary == {
        "type": "run/summary",
        "sessionId": session_id_of(err),
        "turns": 1,
        "steps": 1,
        "usage": {
            "inputTokens": 1000,
            "outputTokens": 100,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "reasoningTokens": 30,
        },
        "cost": pytest.approx((1000 * price.input + 100 * price.output) / 1e6),
        "endReason": {"kind": "completed"},
    }
    assert isinstance(duration, int)
    assert duration >= 0
    assert events[-1]["type"] == "turn/end"


async def test_max_cost_ends_the_turn_before_the_next_model_call(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = json.dumps({"command": "echo hi", "description": "say hi"})
    server.add(
        Reply([TextDelta("Checking."), *tool_call(0, "call-1", "bash", arguments), Finish("tool_calls", Usage(50, 10))])
    )
    assert await amain(run_args(sessions_root, workspace, "--json", "--max-cost", "0.000001", "go")) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert summary["endReason"]["kind"] == "max-cost"
    assert summary["endReason"]["limit"] == 0.000001
    assert summary["steps"] == 2
    assert len(server.requests) == 1
    assert "turn 1 ended: max-cost" in err
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events)[0]["reason"]["kind"] == "max-cost"


async def test_a_budget_that_is_not_above_zero_is_a_usage_error(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(run_args(sessions_root, workspace, "--max-cost", "0", "go")) == 2
    assert "--max-cost must be above 0 (US dollars), got 0.0" in capsys.readouterr().err
    assert server.requests == []


def test_show_prices_at_the_model_asked_for_else_the_default_profiles(tmp_path: Path) -> None:
    assert pricing_model(Settings.from_args(namespace())) == DEFAULT_MODEL
    assert pricing_model(Settings.from_args(namespace(model="deepseek-v4-pro"))) == "deepseek-v4-pro"
    assert pricing_model(Settings.from_args(namespace(provider="openai"))) is None
    tree = write_tree(tmp_path / "tree.yml", [])
    assert pricing_model(Settings.from_args(namespace(config=str(tree)))) is None
