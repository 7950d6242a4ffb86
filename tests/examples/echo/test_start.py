"""echo-agent's ``start.py`` in-process: where its sessions go and how a broken tree is reported."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from dsh.kernel import parse_tree
from tests.examples.echo.helpers import EXAMPLE, START


def load_start() -> ModuleType:
    spec = importlib.util.spec_from_file_location("echo_agent_start", START)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


start = load_start()


async def test_a_tree_that_fails_to_load_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "tree.yml"
    tree.write_text("- id: broken\n  name: ./missing_plugin.py\n", encoding="utf-8")
    assert await start.run(tree) == 1
    err = capsys.readouterr().err
    assert err.startswith("echo-agent: ")
    assert "missing_plugin.py does not exist" in err


def test_the_tree_is_the_spec_tree_without_the_console_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    """SPEC §16.2's plugins in order (no logger, timer or hmr), with the example's own plugins by path."""
    monkeypatch.delenv("DSH_SESSIONS_ROOT", raising=False)
    monkeypatch.delenv("ECHO_AGENT_DELAY_MS", raising=False)
    entries = parse_tree(EXAMPLE / "tree.yml")
    assert [entry.name for entry in entries] == [
        "llm",
        "sessions",
        "system-prompt",
        "tools",
        "agents",
        "invariants",
        "agent-loop",
        "./plugins/mock_llm.py",
        "./plugins/echo_tool.py",
        "session-persistence-jsonl",
        "ui-stdio",
    ]
    config = {entry.id: entry.config for entry in entries}
    assert config["agent-loop"] == {
        "agents": [{"id": "main", "model": "mock-echo", "systemPrompt": "You are echo-agent, a demo agent."}]
    }
    assert config["persistence"] == {"root": "./.sessions"}
    assert config["mock-llm"] == {"delayMs": 2}
    assert config["ui"] == {"welcome": 'echo-agent ready. Type a message ("echo <text>" triggers the tool).'}
    assert start.TREE == EXAMPLE / "tree.yml"
