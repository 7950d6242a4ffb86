"""Booting a tree through the real loader, and dsh's logs on stderr."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest

from dsh.cli.boot import booted, logging_to_stderr
from dsh.cli.errors import CliError
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.core.agent import AGENTS
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.kernel import FiberState
from tests.cli.helpers import namespace


async def test_a_profile_boots_from_its_entries_without_yaml_and_is_disposed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(tmp_path / "s"), cwd=str(tmp_path), demo=True), {})
    tree = resolve_tree(settings)

    def no_temporary_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("a built-in profile boots without writing its YAML")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_temporary_file)
    async with booted(tree) as root:
        assert root.get(AGENTS) is not None
        assert root.get(SESSION_PERSISTENCE) is not None
        fiber = root.fiber
    assert fiber.state is FiberState.DISPOSED
    assert root.get(AGENTS) is None
    assert "text" not in vars(tree)  # nothing rendered it


async def test_a_failing_built_in_entry_is_named_in_profile_yml() -> None:
    tree = Tree("the profile", None, None, None, ({"id": "agents", "name": "agents"}, {"id": "bad", "name": "nowhere"}))
    with pytest.raises(CliError) as caught:
        async with booted(tree):
            raise AssertionError("never reached")
    assert caught.value.message.startswith(
        'cannot start the profile: profile.yml: entry "bad" (nowhere): unknown plugin "nowhere"'
    )


async def test_a_tree_that_fails_names_the_tree_and_the_entry(tmp_path: Path) -> None:
    tree = Tree("my tree", "- id: agents\n  name: agents\n- id: bad\n  name: nowhere-plugin\n", None, None)
    with pytest.raises(CliError) as caught:
        async with booted(tree):
            raise AssertionError("never reached")
    assert caught.value.message.startswith(
        'cannot start my tree: profile.yml: entry "bad" (nowhere-plugin): unknown plugin "nowhere-plugin"'
    )


def test_logs_go_to_stderr_at_the_chosen_level_only_inside_the_block(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("dsh.test")
    before = logging.getLogger("dsh").level
    with logging_to_stderr(0):
        logger.info("hidden")
        logger.warning("shown %s", 1)
    with logging_to_stderr(1):
        logger.info("info shown")
        logger.debug("hidden")
    with logging_to_stderr(2):
        logger.debug("debug shown")
    logger.warning("after the block")
    err = capsys.readouterr().err
    assert err == "dsh.test: WARNING: shown 1\ndsh.test: INFO: info shown\ndsh.test: DEBUG: debug shown\n"
    assert logging.getLogger("dsh").level == before


def test_a_broken_stderr_does_not_break_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def write(self, _text: str) -> int:
            raise OSError("gone")

        def flush(self) -> None:
            raise OSError("gone")

    monkeypatch.setattr(logging, "raiseExceptions", False)
    with logging_to_stderr(0):
        monkeypatch.setattr("sys.stderr", Broken())
        logging.getLogger("dsh.test").warning("lost")


async def test_the_built_in_profile_lists_the_compact_and_plan_commands(tmp_path: Path) -> None:
    """(slash commands: the plugins loaded after the commands service register theirs, and unload them)"""
    from dsh.core.commands import COMMANDS

    settings = Settings.from_args(namespace(sessions_root=str(tmp_path / "s"), cwd=str(tmp_path), demo=True), {})
    async with booted(resolve_tree(settings)) as root:
        commands = root[COMMANDS]
        listed = {command.name: command for command in commands.list()}
        assert {"compact", "plan"} <= set(listed)
        assert listed["compact"].hint == "[what the summary must keep]"
        assert listed["plan"].description.startswith("plan mode")
