"""`dsh run` in-process (`amain` / `main`), through the real loader, loop, bash and JSONL persistence,
against the local wire server standing in for the DeepSeek API."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
from pathlib import Path

import pytest

from dsh.cli import amain, main
from dsh.cli.agent import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MAX_TOKENS, EXIT_USAGE
from dsh.cli.profile import NO_MODEL_HELP, profile_entries
from dsh.cli.settings import Settings
from dsh.plugins.demo import LABEL
from dsh.testing.wire import Reply, TextDelta, WireServer, api_error, text_reply, tool_call
from tests.cli.helpers import log_of, namespace, session_files, session_id_of, turn_ends, write_tree
from tests.cli.plugins import stall_step
from tests.sealing import unsealed, unsealed_text


def run_args(root: Path, cwd: Path, *rest: str) -> list[str]:
    return ["run", "--sessions-root", str(root), "--cwd", str(cwd), *rest]


async def test_run_streams_the_answer_and_exits_0(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dsh run PROMPT` prints the answer on stdout, the session id on stderr, and exits 0."""
    server.add(text_reply("Hello", ", world"))
    assert await amain(run_args(sessions_root, workspace, "say", "hello")) == 0
    out, err = capsys.readouterr()
    assert out == "Hello, world\n"
    session_id = session_id_of(err)
    header, events = log_of(sessions_root, session_id)
    assert header["cwd"] == str(workspace)
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
    user = next(event for event in events if event["type"] == "user/message")
    assert user["data"]["content"] == [{"type": "text", "text": "say hello"}]
    request = server.requests[0].json
    assert request["model"] == "deepseek-v4-flash"
    assert request["messages"][0]["role"] == "system"
    assert "dsh" in request["messages"][0]["content"]


async def test_run_json_prints_every_session_event_as_a_line(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--json` prints each new session event as its JSONL line, identical to the log."""
    server.add(text_reply("ok"))
    assert await amain(run_args(sessions_root, workspace, "--json", "hi")) == 0
    out, err = capsys.readouterr()
    *lines, summary = out.splitlines()
    events = [json.loads(line) for line in lines]
    assert json.loads(summary)["type"] == "run/summary"
    assert [event["seq"] for event in events] == list(range(len(events)))
    assert events[0]["type"] == "turn/start"
    assert events[-1] == {**events[-1], "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}
    assert "assistant/chunk" in {event["type"] for event in events}
    (path,) = session_files(sessions_root)
    assert unsealed_text(path.read_text(encoding="utf-8")).splitlines()[1:] == lines
    assert session_id_of(err) == path.stem


async def test_run_shows_tool_activity_on_stderr_and_separates_steps(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool call runs the real bash in the workspace; stdout keeps only the model's text."""
    arguments = json.dumps({"command": "cat notes.txt; printf 'two\\nthree\\n'", "description": "read"})
    server.add(
        Reply([TextDelta("Reading."), *tool_call(0, "call-1", "bash", arguments)]),
        text_reply("Done."),
    )
    assert await amain(run_args(sessions_root, workspace, "read it")) == 0
    out, err = capsys.readouterr()
    assert out == "Reading.\nDone.\n"
    assert '[tool call] bash({"command":' in err or "[tool call] bash(" in err
    assert "[tool result] hello (+2 more lines)\n" in err


async def test_a_failing_model_exits_1_with_the_error_on_stderr(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provider refuses the key: the turn ends in error, stderr names it, status 1."""
    server.add(api_error(401, "Authentication Fails (no such user)", "authentication_error"))
    assert await amain(run_args(sessions_root, workspace, "hi")) == EXIT_FAILED
    out, err = capsys.readouterr()
    assert out == ""
    assert "dsh: turn 1 ended: error: " in err
    assert err.count("Authentication Fails") == 1
    assert err.rstrip().endswith("; check $DEEPSEEK_API_KEY (the API key the provider refused)")
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events)[0]["reason"]["kind"] == "error"


async def test_a_max_tokens_stop_exits_3(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(text_reply("cut", finish="length"))
    assert await amain(run_args(sessions_root, workspace, "hi")) == EXIT_MAX_TOKENS
    assert "turn 1 ended: max-tokens" in capsys.readouterr().err


async def test_resume_continues_the_session_and_its_turn_numbers(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--resume ID` seeds the agent with the stored log: the next turn is 2 and the model sees turn 1."""
    server.add(text_reply("first answer"), text_reply("second answer"))
    assert await amain(run_args(sessions_root, workspace, "first")) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(run_args(sessions_root, workspace, "--resume", session_id, "second")) == 0
    out, err = capsys.readouterr()
    assert out == "second answer\n"
    assert session_id_of(err) == session_id
    _, events = log_of(sessions_root, session_id)
    assert [end["turn"] for end in turn_ends(events)] == [1, 2]
    assert [event["seq"] for event in events] == list(range(len(events)))
    history = server.requests[1].json["messages"]
    assert [message["content"] for message in history[1:]] == ["first", "first answer", "second"]


def _select_model_in_last_turn(root: Path, session_id: str, model: str) -> None:
    """Log ``model/select`` inside the session's last turn, as an editor's switch does (lines written unsealed)."""
    (path,) = [path for path in session_files(root) if path.stem == session_id]
    header, *events = (json.loads(line) for line in unsealed(path.read_bytes()).decode().splitlines())
    end = events.pop()
    events.append({"type": "model/select", "seq": end["seq"], "time": end["time"], "data": {"model": model}})
    events.append({**end, "seq": end["seq"] + 1})
    path.write_text("".join(json.dumps(item, separators=(",", ":")) + "\n" for item in [header, *events]))


@pytest.mark.parametrize(
    ("flag", "asked"), [((), "deepseek-v4-pro"), (("--model", "deepseek-v4-flash"), "deepseek-v4-flash")]
)
async def test_resume_asks_the_model_the_session_last_selected_unless_model_says_otherwise(
    server: WireServer,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    flag: tuple[str, ...],
    asked: str,
) -> None:
    """(a `model/select` an editor logged over ACP holds for `dsh run --resume` too)"""
    server.add(text_reply("first answer"), text_reply("second answer"))
    assert await amain(run_args(sessions_root, workspace, "first")) == 0
    session_id = session_id_of(capsys.readouterr().err)
    _select_model_in_last_turn(sessions_root, session_id, "deepseek-v4-pro")
    assert await amain(run_args(sessions_root, workspace, *flag, "--resume", session_id, "second")) == 0
    assert [request.json["model"] for request in server.requests] == ["deepseek-v4-flash", asked]


async def test_resuming_an_unknown_session_exits_1(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(run_args(sessions_root, workspace, "--resume", "nope", "hi")) == EXIT_FAILED
    assert (
        'dsh: cannot resume session "nope": no stored session has an id starting with "nope": see `dsh sessions list`'
        in capsys.readouterr().err
    )
    assert server.requests == []


async def test_sigint_mid_stream_aborts_the_turn_and_exits_130(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the model streams: the log's last turn ends `aborted` (reason `interrupted`)."""
    server.add(Reply([TextDelta("partial")], ending="stall"))
    running = asyncio.ensure_future(amain(run_args(sessions_root, workspace, "hang")))
    await server.wait_for_requests(1)
    out = err = ""
    while "partial" not in out:  # the streamed text is on screen before the Ctrl-C
        await asyncio.sleep(0)
        captured = capsys.readouterr()
        out, err = out + captured.out, err + captured.err
    os.kill(os.getpid(), signal.SIGINT)
    assert await running == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    out, err = out + captured.out, err + captured.err
    assert out == "partial\n"
    assert "interrupting the turn" in err
    assert "dsh: turn 1 ended: aborted (interrupted)" in err
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


async def test_a_second_sigint_exits_without_waiting_for_the_turn(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the turn cannot end (a stuck step), a second Ctrl-C exits at once with 130."""
    settings = Settings.from_args(
        namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), environ={}
    )
    entries = [
        *profile_entries(settings),
        {"id": "stall", "name": "tests.cli.plugins.stall_step", "config": {"key": "t"}},
    ]
    tree = write_tree(tmp_path / "tree.yml", entries)
    stall_step.REACHED["t"] = asyncio.Event()
    running = asyncio.ensure_future(amain(["run", "--config", str(tree), "hi"]))
    await stall_step.REACHED["t"].wait()
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    assert await running == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "interrupting the turn" in err
    assert "dsh: exiting without waiting for the turn to end" in err


async def test_a_turn_that_never_starts_exits_1(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    entries = [*profile_entries(settings), {"id": "cancel", "name": "tests.cli.plugins.cancel_on_running"}]
    tree = write_tree(tmp_path / "tree.yml", entries)
    assert await amain(["run", "--config", str(tree), "hi"]) == EXIT_FAILED
    assert "dsh: the prompt did not start a turn" in capsys.readouterr().err


async def test_the_prompt_can_come_from_stdin(
    server: WireServer,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.add(text_reply("read"), text_reply("read again"))
    monkeypatch.setattr("sys.stdin", io.StringIO("from stdin\n"))
    assert await amain(run_args(sessions_root, workspace, "-")) == 0
    assert server.requests[0].json["messages"][-1]["content"] == "from stdin\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("no words"))
    assert await amain(run_args(sessions_root, workspace)) == 0
    assert server.requests[1].json["messages"][-1]["content"] == "no words"
    capsys.readouterr()


async def test_an_empty_prompt_is_a_usage_error(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("  \n"))
    assert await amain(run_args(sessions_root, workspace, "--demo")) == EXIT_USAGE
    assert "dsh: the prompt is empty" in capsys.readouterr().err


async def test_without_a_key_or_config_run_explains_and_exits_2(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No key, no config: one paragraph on setting a key or using --demo; status 2; nothing booted."""
    assert await amain(run_args(sessions_root, workspace, "hi")) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"dsh: {NO_MODEL_HELP}\n"
    assert "DEEPSEEK_API_KEY" in err
    assert "--demo" in err
    assert not sessions_root.exists()


def test_run_demo_works_without_a_key(sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`dsh run --demo` (through the sync `main`): the demo model calls the real bash tool."""
    assert main(run_args(sessions_root, workspace, "--demo", "echo", "hi", "there")) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{LABEL} I will run `echo 'hi there'` with the bash tool.\n{LABEL} `echo 'hi there'`")
    assert "[tool result] hi there\n" in err
    _, events = log_of(sessions_root, session_id_of(err))
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]


def test_a_ctrl_c_outside_any_handler_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("dsh.cli.run.command", interrupted)
    assert main(["run", "x"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "dsh: interrupted\n"


async def test_a_session_that_cannot_be_saved_fails_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The turn completes but its log cannot be flushed: the agent error is reported and the status is 1."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    settings = Settings.from_args(namespace(sessions_root=str(blocker), cwd=str(workspace), demo=True), {})
    tree = write_tree(tmp_path / "tree.yml", profile_entries(settings))  # --config: no check of the root first
    assert await amain(["run", "--config", str(tree), "echo x"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert err.count("Not a directory") == 1, err  # said once, however many layers report it
    assert "Traceback" not in err


async def test_a_config_tree_serves_its_first_model_by_default(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    tree = write_tree(tmp_path / "tree.yml", profile_entries(settings))
    assert await amain(["run", "--config", str(tree), "echo from config"]) == 0
    assert "`echo 'from config'`" in capsys.readouterr().out


async def test_a_config_tree_without_a_model_fails_the_turn(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    tree = write_tree(tmp_path / "tree.yml", profile_entries(settings)[:-1])
    assert await amain(["run", "--config", str(tree), "hi"]) == EXIT_FAILED
    assert "has no model" in capsys.readouterr().err


async def test_a_config_tree_without_agents_or_a_loop_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = write_tree(tmp_path / "bare.yml", [{"id": "llm", "name": "llm"}])
    assert await amain(["run", "--config", str(bare), "hi"]) == EXIT_FAILED
    assert f"dsh: {bare} provides no agents service" in capsys.readouterr().err
    loopless = write_tree(tmp_path / "loopless.yml", [{"id": "agents", "name": "agents"}])
    assert await amain(["run", "--config", str(loopless), "hi"]) == EXIT_FAILED
    assert "dsh: cannot start the agent: no agent factory registered" in capsys.readouterr().err


async def test_a_tree_that_fails_to_load_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = write_tree(tmp_path / "broken.yml", [{"id": "x", "name": "no-such-plugin"}])
    assert await amain(["run", "--config", str(broken), "hi"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert err.startswith(f"dsh: cannot start {broken}: ")
    assert 'unknown plugin "no-such-plugin"' in err
