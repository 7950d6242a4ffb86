"""`dsh config [FILE]`: check the tree that would boot and print it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dsh.cli import amain
from dsh.cli.profile import profile_entries, render_tree
from dsh.cli.settings import Settings
from dsh.cli.tree_check import check_tree
from dsh.kernel import parse_tree
from tests.cli.helpers import namespace, write_tree

PROJECT = Path(__file__).resolve().parents[2]


async def test_config_prints_the_default_profile_without_a_key(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The printed YAML is exactly the tree `run` boots, and the loader parses it."""
    root = tmp_path / "store"
    assert await amain(["config", "--sessions-root", str(root), "--cwd", str(workspace)]) == 0
    out = capsys.readouterr().out
    settings = Settings.from_args(namespace(sessions_root=str(root), cwd=str(workspace)), {})
    assert out == render_tree(profile_entries(settings), "the built-in default profile")
    saved = tmp_path / "profile.yml"
    saved.write_text(out)
    entries = parse_tree(saved)
    assert [entry.name for entry in entries] == [
        "llm",
        "sessions",
        "system-prompt",
        "tools",
        "commands",
        "agents",
        "bash-local",
        "tool-bash",
        "fs-local",
        "tool-fs",
        "permissions",
        "plan-mode",
        "workspace-instructions",
        "subagent",
        "agent-loop",
        "llm-retry",
        "llm-admission",
        "compaction",
        "session-persistence-jsonl",
        "llm-deepseek",
    ]
    assert entries[-1].config == {"models": ["deepseek-v4-flash", "deepseek-v4-pro"]}
    assert entries[-2].config == {"root": str(root)}
    assert "DEEPSEEK_API_KEY" not in out


async def test_config_reflects_the_demo_invariants_and_model_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["config", "--demo", "--invariants", "--model", "demo-2"]) == 0
    entries = yaml.safe_load(capsys.readouterr().out)
    names = [entry["name"] for entry in entries]
    assert "invariants" in names
    assert entries[-1] == {"id": "model", "name": "dsh.plugins.demo", "config": {"models": ["demo-2"]}}


async def test_config_check_prints_a_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["config", "--check"]) == 0
    assert capsys.readouterr().out == "the built-in default profile: ok (20 plugins)\n"
    assert await amain(["config", "--check", str(PROJECT / "examples" / "base.yml")]) == 0
    assert capsys.readouterr().out == f"{PROJECT / 'examples' / 'base.yml'}: ok (9 plugins)\n"


async def test_config_prints_a_valid_file_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "tree.yml"
    tree.write_text("# mine\n- id: llm\n  name: llm")
    assert await amain(["config", str(tree)]) == 0
    assert capsys.readouterr().out == "# mine\n- id: llm\n  name: llm\n"
    assert await amain(["--config", str(tree), "config"]) == 0
    assert capsys.readouterr().out == "# mine\n- id: llm\n  name: llm\n"


async def test_config_lists_every_problem_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(
        tmp_path / "tree.yml",
        [
            {"id": "llm", "name": "llm"},
            {"id": "ghost", "name": "no-such-plugin"},
            {"id": "bash", "name": "bash-local", "config": {"timeoutMs": -1}},
            {"id": "thing", "name": "dsh.core.errors"},
        ],
    )
    assert await amain(["config", str(tree)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f'dsh: {tree}: entry "ghost" (no-such-plugin): unknown plugin "no-such-plugin"')
    assert lines[1].startswith(f'dsh: {tree}: entry "bash" (bash-local): plugin "bash-local": invalid config: ')
    assert "timeoutMs must be a positive finite number" in lines[1]
    assert lines[2].startswith(f'dsh: {tree}: entry "thing" (dsh.core.errors): plugin "dsh.core.errors" has no')
    assert lines[3] == f"dsh: {tree} has 3 problem(s)"


async def test_config_of_unreadable_or_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["config", str(tmp_path / "missing.yml")]) == 1
    assert capsys.readouterr().err.startswith(f"dsh: cannot read --config {tmp_path / 'missing.yml'}: ")
    broken = tmp_path / "broken.yml"
    broken.write_text("- id: [unclosed\n")
    assert await amain(["config", str(broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dsh: plugin tree {broken} is not valid YAML")
    assert err.endswith(f"dsh: {broken} has 1 problem(s)\n")
    assert await amain(["config", "--demo", str(broken)]) == 2
    assert "cannot be combined with --config" in capsys.readouterr().err


def test_check_tree_counts_the_plugins_of_includes(tmp_path: Path) -> None:
    write_tree(tmp_path / "inner.yml", [{"id": "llm", "name": "llm"}, {"id": "tools", "name": "tools"}])
    outer = write_tree(
        tmp_path / "outer.yml",
        [{"id": "inner", "name": "include", "config": {"path": "./inner.yml"}}, {"id": "agents", "name": "agents"}],
    )
    report = check_tree(outer)
    assert (report.ok, report.plugins, report.problems) == (True, 3, [])
