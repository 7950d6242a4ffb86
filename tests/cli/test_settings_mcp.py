"""``mcpServers`` in the settings file: the built-in profile gains the ``mcp`` plugin with those servers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.errors import CliError
from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings, read_settings_file
from tests.cli.helpers import namespace
from tests.plugins.mcp_client.helpers import alive, starts


def test_mcp_servers_in_the_settings_add_the_mcp_plugin(tmp_path: Path) -> None:
    (tmp_path / "settings.yml").write_text("mcpServers:\n  files:\n    command: srv\n    args: [-x]\n")
    settings = Settings.from_args(namespace(demo=True), {"DSH_HOME": str(tmp_path)})
    assert settings.mcp_servers == {"files": {"command": "srv", "args": ["-x"]}}
    (entry,) = [entry for entry in profile_entries(settings) if entry["name"] == "mcp"]
    assert entry == {"id": "mcp", "name": "mcp", "config": {"servers": {"files": {"command": "srv", "args": ["-x"]}}}}
    plain = Settings.from_args(namespace(demo=True), {"DSH_HOME": str(tmp_path / "none")})
    assert plain.mcp_servers is None
    assert "mcp" not in [entry["name"] for entry in profile_entries(plain)]


def test_mcp_servers_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "settings.yml"
    path.write_text("mcpServers: [a]\n")
    with pytest.raises(CliError, match="mcpServers must be a mapping"):
        read_settings_file(path)


async def test_a_demo_run_starts_and_stops_the_settings_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = Path(__file__).parents[1] / "plugins" / "mcp_client" / "servers" / "tools_server.py"
    state = tmp_path / "state"
    (tmp_path / "settings.yml").write_text(
        f"mcpServers:\n  t:\n    command: {sys.executable}\n    args: [{server}]\n    env: {{MCP_TEST_STATE: {state}}}\n"
    )
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    assert await amain(["config", "--demo", "--check"]) == 0
    assert "ok" in capsys.readouterr().out
    workspace = tmp_path / "work"
    workspace.mkdir()
    run = ["run", "--sessions-root", str(tmp_path / "sessions"), "--cwd", str(workspace), "--demo", "echo hi"]
    assert await amain(run) == 0
    (pid,) = starts(state)
    assert not alive(pid)
