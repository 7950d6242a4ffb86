"""The workspace's AGENTS.md reaches each model request of agents working there, and only theirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.core.agent import AgentOptions, CreateAgentOptions
from dsh.core.llm import text
from dsh.core.session import SessionMeta
from dsh.plugins import workspace_instructions
from dsh.plugins.workspace_instructions import Config, InstructionReader, Instructions, project_chain, render
from dsh.testing.harness import MOCK_MODEL, Harness
from dsh.testing.scripted import text_response


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run make test before you stop.\n")
    (root / "pkg" / "CLAUDE.md").write_text("pkg uses tabs.\n")
    return root


def test_the_chain_runs_from_the_marked_root_down_to_the_workspace(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    top, chain = project_chain(str(root / "pkg" / "sub"), [".git"])
    assert top == str(root)
    assert chain == [str(root), str(root / "pkg"), str(root / "pkg" / "sub")]


def test_without_a_marker_the_workspace_is_its_own_root(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert project_chain(str(tmp_path / "a" / "b"), ["no-such-marker-anywhere.xyz"]) == (
        str(tmp_path / "a" / "b"),
        [str(tmp_path / "a" / "b")],
    )


def test_a_git_file_marks_a_root_too(tmp_path: Path) -> None:
    (tmp_path / "wt" / "x").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: elsewhere\n")
    assert project_chain(str(tmp_path / "wt" / "x"), [".git"])[0] == str(tmp_path / "wt")


def test_first_candidate_wins_per_directory_and_each_level_contributes(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "CLAUDE.md").write_text("ignored: AGENTS.md is here\n")
    reader = InstructionReader(["AGENTS.md", "CLAUDE.md", "", "../x", "."], [".git"], 1 << 20)
    found = reader.chain(str(root / "pkg" / "sub"))
    assert found == [
        Instructions("AGENTS.md", "Run make test before you stop.\n"),
        Instructions(os.path.join("pkg", "CLAUDE.md"), "pkg uses tabs.\n"),
    ]


def test_a_symlink_to_a_file_counts_and_a_directory_named_like_a_candidate_does_not(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "AGENTS.md").unlink()
    (root / "AGENTS.md").mkdir()
    (root / "pkg" / "CLAUDE.md").unlink()
    (tmp_path / "shared.md").write_text("shared rules\n")
    (root / "pkg" / "AGENTS.md").symlink_to(tmp_path / "shared.md")
    reader = InstructionReader(["AGENTS.md", "CLAUDE.md"], [".git"], 1 << 20)
    assert [item.text for item in reader.chain(str(root / "pkg"))] == ["shared rules\n"]


def test_an_oversized_or_unreadable_winner_is_skipped_without_falling_back(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "AGENTS.md").write_text("x" * 100)
    (root / "CLAUDE.md").write_text("fallback\n")
    reader = InstructionReader(["AGENTS.md", "CLAUDE.md"], [".git"], 50)
    assert [item.path for item in reader.chain(str(root))] == []
    if os.geteuid() != 0:  # root reads a 0000 file anyway
        (root / "AGENTS.md").write_text("small\n")
        (root / "AGENTS.md").chmod(0)
        assert InstructionReader(["AGENTS.md"], [".git"], 50).chain(str(root)) == []


def test_a_file_that_grows_past_the_limit_between_stat_and_read_is_skipped(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    reader = InstructionReader(["AGENTS.md"], [".git"], 40)
    info = os.stat(root / "AGENTS.md")
    (root / "AGENTS.md").write_text("y" * 80)
    assert reader._read(str(root / "AGENTS.md"), info) is None


def test_unreadable_between_stat_and_open_is_skipped(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    reader = InstructionReader(["AGENTS.md"], [".git"], 1 << 20)
    info = os.stat(root / "AGENTS.md")
    (root / "AGENTS.md").unlink()
    assert reader._read(str(root / "AGENTS.md"), info) is None


def test_a_changed_file_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    reader = InstructionReader(["AGENTS.md"], [".git"], 1 << 20)
    assert reader.chain(str(root))[0].text.startswith("Run make test")
    path = root / "AGENTS.md"
    before = os.stat(path)
    path.write_text("Run ruff too.\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert reader.chain(str(root))[0].text == "Run ruff too.\n"
    # Same size and mtime: the cached text stands (no read).
    os.chmod(path, 0o644)
    assert reader.chain(str(root))[0].text == "Run ruff too.\n"


def test_render_names_each_file_and_keeps_within_the_budget() -> None:
    found = [Instructions("AGENTS.md", "A" * 300), Instructions("pkg/AGENTS.md", "B" * 300)]
    full = render(found, 10_000)
    assert full.startswith("# Workspace instructions\n")
    assert "Instructions from: AGENTS.md\n" + "A" * 300 in full
    assert "Instructions from: pkg/AGENTS.md\n" + "B" * 300 in full
    tight = render(found, 500)
    assert len(tight.encode()) <= 500
    assert "(left out to stay within the budget: AGENTS.md)" in tight
    assert "Instructions from: pkg/AGENTS.md (cut)\n" in tight
    assert "A" * 10 not in tight
    assert render(found, 30) == ""
    assert render([], 1000) == ""
    assert render(found, 0) == ""


def test_render_cuts_multibyte_text_on_a_character_boundary() -> None:
    out = render([Instructions("AGENTS.md", "é" * 400)], 300)
    assert len(out.encode()) <= 300
    assert out.endswith("é")


async def _ask(h: Harness, agent_id: str, cwd: str | None, system_prompt: str | None = None) -> str | None:
    meta = SessionMeta(cwd=cwd) if cwd is not None else SessionMeta()
    agent = h.loop.create_agent(
        CreateAgentOptions(
            agent_id=agent_id,
            session_id=f"{agent_id}-session",
            meta=meta,
            agent_options=AgentOptions(model=MOCK_MODEL, system_prompt=system_prompt),
        )
    )
    h.model.push(text_response("ok"))
    agent.send([text("hi")])
    await agent.when_idle()
    return h.model.requests[-1].system


async def test_each_agent_sees_its_own_workspace_and_edits_apply_at_the_next_request(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "AGENTS.md").write_text("Other project rules.\n")
    async with Harness() as h:
        await h.ctx.plugin(workspace_instructions)
        system = await _ask(h, "a", str(root / "pkg"), system_prompt="You are dsh.")
        assert system is not None
        assert system.startswith("You are dsh.\n\n# Workspace instructions")
        assert "Run make test before you stop." in system
        assert "pkg uses tabs." in system
        assert "Other project rules." not in system
        system_b = await _ask(h, "b", str(other))
        assert system_b is not None
        assert "Other project rules." in system_b
        assert "make test" not in system_b
        (root / "AGENTS.md").write_text("Run the linters first, always.\n")
        system_c = await _ask(h, "c", str(root))
        assert system_c is not None
        assert "Run the linters first, always." in system_c


async def test_a_session_without_cwd_uses_the_process_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path)
    monkeypatch.chdir(root)
    async with Harness() as h:
        await h.ctx.plugin(workspace_instructions)
        system = await _ask(h, "a", None)
        assert system is not None
        assert system.startswith("# Workspace instructions")


async def test_no_file_leaves_the_request_alone_and_unloading_removes_the_section(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    async with Harness() as h:
        fiber = await h.ctx.plugin(workspace_instructions)
        assert await _ask(h, "a", str(empty)) is None
        await fiber.dispose()
        assert await _ask(h, "b", str(root)) is None


async def test_max_bytes_zero_turns_it_off(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    async with Harness() as h:
        await h.ctx.plugin(workspace_instructions, {"maxBytes": 0})
        assert await _ask(h, "a", str(root)) is None


def test_config_takes_camel_case_names_and_refuses_unknown_ones() -> None:
    config = Config.model_validate({"candidates": ["RULES.md"], "rootMarkers": [".hg"], "maxFileBytes": 10})
    assert (config.candidates, config.root_markers, config.max_file_bytes) == (["RULES.md"], [".hg"], 10)
    with pytest.raises(ValueError):
        Config.model_validate({"maxbytes": 1})
