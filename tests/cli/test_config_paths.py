"""Portable trees: `dsh config` spells the sessions root by its origin, and tree paths expand where they boot.

Every run here is the real `dsh` executable in a subprocess, with its own
environment and working directory; the demo model stands in for a provider, and
the wire server counts model requests where one could be made.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from dsh.testing.wire import WireServer, text_reply
from tests.cli.helpers import child_env, dsh, session_files

pytestmark = pytest.mark.e2e


def _config(entries: list[dict[str, object]], entry_id: str) -> dict[str, object]:
    (entry,) = [entry for entry in entries if entry["id"] == entry_id]
    config = entry["config"]
    assert isinstance(config, dict)
    return config


async def test_a_printed_profile_follows_the_dsh_home_it_boots_under(tmp_path: Path) -> None:
    """`dsh config > tree.yml` under one DSH_HOME, run under another: the session lands in the second."""
    first, second = tmp_path / "first-home", tmp_path / "second-home"
    printed = await dsh("config", "--demo", env=child_env(key=None, home=first), cwd=tmp_path)
    assert printed.status == 0, printed.stderr
    assert str(tmp_path) not in printed.stdout  # no machine path: first home, cwd and workspace all live here
    entries = yaml.safe_load(printed.stdout)
    assert _config(entries, "persistence") == {"root": "${DSH_HOME}/sessions"}
    assert _config(entries, "bash") == {"sessionFiles": "${DSH_HOME}/sessions"}
    tree = tmp_path / "tree.yml"
    tree.write_text(printed.stdout)
    done = await dsh(
        "--config", str(tree), "run", "$ echo portable", env=child_env(key=None, home=second), cwd=tmp_path
    )
    assert done.status == 0, done.stderr
    assert "portable" in done.stdout
    assert len(session_files(second / "sessions")) == 1
    assert not first.exists()


async def test_the_printed_root_follows_xdg_data_home_then_the_home_directory(tmp_path: Path) -> None:
    """Without DSH_HOME the root is spelled `${XDG_DATA_HOME}/dsh/sessions`, else `~/.local/share/dsh/sessions`."""
    env = child_env(key=None)
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    printed = await dsh("config", "--demo", env=env, cwd=tmp_path)
    assert _config(yaml.safe_load(printed.stdout), "persistence") == {"root": "${XDG_DATA_HOME}/dsh/sessions"}
    del env["XDG_DATA_HOME"]
    env["HOME"] = str(tmp_path / "user")
    printed = await dsh("config", "--demo", env=env, cwd=tmp_path)
    assert _config(yaml.safe_load(printed.stdout), "persistence") == {"root": "~/.local/share/dsh/sessions"}
    tree = tmp_path / "tree.yml"
    tree.write_text(printed.stdout)
    done = await dsh("--config", str(tree), "run", "$ echo tilde", env=env, cwd=tmp_path)
    assert done.status == 0, done.stderr
    assert len(session_files(tmp_path / "user" / ".local" / "share" / "dsh" / "sessions")) == 1


async def test_a_sessions_root_the_user_named_is_printed_as_the_absolute_path(tmp_path: Path) -> None:
    """`--sessions-root rel` means relative to where it was typed, so the printed tree holds the absolute path."""
    printed = await dsh("config", "--demo", "--sessions-root", "mine", env=child_env(key=None), cwd=tmp_path)
    entries = yaml.safe_load(printed.stdout)
    assert _config(entries, "persistence") == {"root": str(tmp_path / "mine")}
    assert _config(entries, "bash") == {"sessionFiles": str(tmp_path / "mine")}
    printed = await dsh("config", "--store", "sqlite://db/s.db", env=child_env(key=None), cwd=tmp_path)
    assert _config(yaml.safe_load(printed.stdout), "persistence") == {"path": str(tmp_path / "db" / "s.db")}


async def test_a_relative_root_resolves_beside_the_tree_file_from_any_working_directory(tmp_path: Path) -> None:
    """A tree kept next to its data writes there, whichever directory dsh starts in."""
    project = tmp_path / "project"
    project.mkdir()
    printed = await dsh("config", "--demo", env=child_env(key=None), cwd=tmp_path)
    entries = yaml.safe_load(printed.stdout)
    _config(entries, "persistence")["root"] = "./data/sessions"
    _config(entries, "bash")["sessionFiles"] = "data/sessions"
    tree = project / "tree.yml"
    tree.write_text(yaml.safe_dump(entries, sort_keys=False))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = await dsh("--config", str(tree), "run", "$ echo beside", env=child_env(key=None), cwd=elsewhere)
    assert done.status == 0, done.stderr
    assert len(session_files(project / "data" / "sessions")) == 1
    assert list(elsewhere.iterdir()) == []


async def test_an_unset_variable_in_a_tree_path_stops_the_boot_before_any_model_request(
    server: WireServer, tmp_path: Path
) -> None:
    """One line on stderr names the variable and the fix; the model is never asked."""
    server.add(text_reply("never sent"))
    printed = await dsh("config", env=child_env(key=None, home=tmp_path / "home"), cwd=tmp_path)
    tree = tmp_path / "tree.yml"
    tree.write_text(printed.stdout)
    env = child_env(base_url=server.base_url)
    assert "DSH_HOME" not in env
    done = await dsh("--config", str(tree), "run", "hello", env=env, cwd=tmp_path)
    assert done.status != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "'${DSH_HOME}/sessions' uses $DSH_HOME, which is not set (or empty)" in lines[0]
    assert "set DSH_HOME or write the path out" in lines[0]
    assert str(tree) in lines[0]
    assert server.requests == []
    checked = await dsh("config", "--check", str(tree), env=env, cwd=tmp_path)
    assert checked.status == 1
    assert "set DSH_HOME or write the path out" in checked.stderr


async def test_a_tree_path_may_start_with_a_tilde(tmp_path: Path) -> None:
    """`~/...` in a tree names the home of whoever boots it."""
    printed = await dsh("config", "--demo", env=child_env(key=None), cwd=tmp_path)
    entries = yaml.safe_load(printed.stdout)
    _config(entries, "persistence")["root"] = "~/my-sessions"
    tree = tmp_path / "tree.yml"
    tree.write_text(yaml.safe_dump(entries, sort_keys=False))
    env = child_env(key=None)
    env["HOME"] = str(tmp_path / "someone")
    done = await dsh("--config", str(tree), "run", "$ echo home", env=env, cwd=tmp_path)
    assert done.status == 0, done.stderr
    assert len(session_files(tmp_path / "someone" / "my-sessions")) == 1
    assert os.path.expanduser("~") != str(tmp_path / "someone")
