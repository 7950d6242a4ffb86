"""`dsh compact ID`: one manual compaction of a stored session, then `--resume` sees the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.agent import EXIT_FAILED
from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings
from dsh.plugins.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTION
from dsh.testing.wire import WireServer, text_reply
from tests.cli.helpers import log_of, namespace, session_id_of, write_tree

LONG = "a long answer with many words. " * 40


def common(root: Path, cwd: Path) -> list[str]:
    return ["--sessions-root", str(root), "--cwd", str(cwd)]


async def two_turns(server: WireServer, root: Path, cwd: Path, capsys: pytest.CaptureFixture[str]) -> str:
    server.add(text_reply(LONG), text_reply(LONG))
    assert await amain(["run", *common(root, cwd), "first"]) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(["run", *common(root, cwd), "--resume", session_id, "second"]) == 0
    capsys.readouterr()
    return session_id


async def test_compact_summarizes_a_stored_session_and_the_next_resume_sends_the_summary(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_id = await two_turns(server, sessions_root, workspace, capsys)
    server.add(text_reply("We answered twice."), text_reply("third answer"))
    status = await amain(["compact", *common(sessions_root, workspace), session_id, "--instructions", "keep it short"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.startswith("compacted the history (summarized): ~")
    assert "dsh: compacted" not in err  # said once, on stdout
    summary = server.requests[2].json["messages"]
    assert summary[-1] == {"role": "user", "content": f"{SUMMARY_INSTRUCTION}\n\nAlso: keep it short"}
    assert summary[:-1] == server.requests[1].json["messages"]  # the prefix the provider has cached
    _, events = log_of(sessions_root, session_id)
    assert events[-1]["type"] == "compaction"
    assert events[-1]["data"]["trigger"] == "manual"
    assert await amain(["run", *common(sessions_root, workspace), "--resume", session_id, "third"]) == 0
    resumed = server.requests[3].json["messages"]
    assert resumed[1:] == [
        {"role": "user", "content": SUMMARY_HEADER + "We answered twice."},
        {"role": "assistant", "content": LONG},
        {"role": "user", "content": "third"},
    ]


async def test_compact_says_when_there_is_nothing_to_compact_and_fails_when_the_summary_does_not_help(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(text_reply("short"))
    assert await amain(["run", *common(sessions_root, workspace), "first"]) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(["compact", *common(sessions_root, workspace), session_id]) == 0
    assert capsys.readouterr().out == "nothing to compact: the history is a single exchange\n"
    second = await two_turns(server, sessions_root, workspace, capsys)
    server.add(text_reply("padding " * 2000))
    assert await amain(["compact", *common(sessions_root, workspace), second]) == EXIT_FAILED
    assert "compaction failed: the summary did not shrink the history" in capsys.readouterr().out


async def test_compact_needs_the_compaction_plugin_and_a_stored_session(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    entries = [entry for entry in profile_entries(settings) if entry["name"] != "compaction"]
    tree = write_tree(tmp_path / "tree.yml", entries)
    assert await amain(["compact", "--config", str(tree), "some-id"]) == EXIT_FAILED
    assert "has no compaction plugin: add an entry with name compaction" in capsys.readouterr().err
    assert await amain(["compact", "--demo", *common(sessions_root, workspace), "nope"]) == EXIT_FAILED
    assert 'cannot resume session "nope"' in capsys.readouterr().err


async def test_an_automatic_compaction_is_said_on_stderr(
    tmp_path: Path, server: WireServer, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {})
    entries = [
        {**entry, "config": {"contextWindow": 2000, "models": {"deepseek-*": {"contextWindow": 2000}}}}
        if entry["name"] == "compaction"
        else entry
        for entry in profile_entries(settings)
    ]
    tree = write_tree(tmp_path / "tree.yml", entries)
    server.add(text_reply(LONG * 3), text_reply("summary"), text_reply("ok"))
    assert await amain(["run", "--config", str(tree), "first"]) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(["run", "--config", str(tree), "--resume", session_id, "second"]) == 0
    err = capsys.readouterr().err
    assert "dsh: compacted the history (summarized): ~" in err


async def test_compact_without_a_model_to_summarize_with_fails_naming_it(
    tmp_path: Path, sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(["run", "--demo", *common(sessions_root, workspace), "echo hi"]) == 0
    session_id = session_id_of(capsys.readouterr().err)
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    entries = [entry for entry in profile_entries(settings) if entry["id"] != "model"]
    tree = write_tree(tmp_path / "tree.yml", entries)
    assert await amain(["compact", "--config", str(tree), session_id]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f'cannot compact session "{session_id}"' in err
    assert "has no model to summarize with" in err
