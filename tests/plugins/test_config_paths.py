"""Every plugin field that names a place on disk is a config path: `~`, `$NAME`, relative to the tree file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.kernel import ConfigError, describe, resolve_plugin, validate_config

TREE_DIR = Path("/trees/project")


def _validated(plugin: str, raw: dict[str, object], base_dir: Path | None = TREE_DIR) -> Any:
    info = describe(resolve_plugin(plugin, TREE_DIR))
    return validate_config(info.name, info.config_model, raw, base_dir=base_dir)


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.setenv("DSH_TEST_DATA", "/data")


def test_bash_local_paths_expand_and_anchor_at_the_tree_file() -> None:
    config = _validated(
        "bash-local",
        {"cwd": "work", "sessionFiles": "${DSH_TEST_DATA}/s", "sandbox": {"writable": ["~/cache", "out"]}},
    )
    assert config.cwd == "/trees/project/work"
    assert config.session_files == "/data/s"
    assert config.sandbox.writable == ("/home/someone/cache", "/trees/project/out")


def test_a_relative_writable_directory_needs_a_tree_file() -> None:
    """Built in code (no base directory) a relative sandbox directory is still refused."""
    with pytest.raises(ConfigError, match=r"sandbox\.writable: 'out' is relative; write it as an absolute path"):
        _validated("bash-local", {"sandbox": {"writable": ["out"]}}, base_dir=None)
    assert _validated("bash-local", {"sandbox": {"writable": ["~/c"]}}, None).sandbox.writable == ("/home/someone/c",)


def test_fs_local_root_and_extra_dirs_are_config_paths() -> None:
    config = _validated("fs-local", {"root": ".", "extraDirs": ["$DSH_TEST_DATA/shared", "~/notes"]})
    assert config.root == "/trees/project"
    assert config.extra_dirs == ["/data/shared", "/home/someone/notes"]


def test_persistence_paths_are_config_paths_and_sqlite_keeps_memory() -> None:
    assert _validated("session-persistence-jsonl", {"root": "./sessions"}).root == "/trees/project/sessions"
    assert _validated("session-persistence-sqlite", {"path": "~/s.db"}).path == "/home/someone/s.db"
    assert _validated("session-persistence-sqlite", {"path": ":memory:"}).path == ":memory:"


def test_llm_replay_fixtures_are_config_paths_and_empty_stays_missing() -> None:
    config = _validated("dsh.plugins.llm_replay", {"file": "fixtures/log.jsonl", "overrideFile": ""})
    assert config.file == "/trees/project/fixtures/log.jsonl"
    assert config.override_file == ""


def test_an_unset_variable_names_the_field_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSH_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError) as caught:
        _validated("fs-local", {"extraDirs": ["/ok", "${DSH_TEST_UNSET}/x"]})
    assert caught.value.problems == [
        (
            "extraDirs.1",
            "'${DSH_TEST_UNSET}/x' uses $DSH_TEST_UNSET, which is not set (or empty): "
            "set DSH_TEST_UNSET or write the path out",
        )
    ]
