"""The built-in profiles as YAML plugin trees, and how a command picks its tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli.errors import CliError
from dsh.cli.profile import (
    DEFAULT_MODEL,
    NO_MODEL_HELP,
    profile_entries,
    profile_model,
    render_tree,
    resolve_tree,
)
from dsh.cli.settings import Settings, portable_sessions_root
from dsh.kernel import parse_tree
from tests.cli.helpers import namespace


def settings(tmp_path: Path, **values: object) -> Settings:
    env = {"DEEPSEEK_API_KEY": "k"} if values.pop("key", True) else {}
    return Settings.from_args(namespace(sessions_root=str(tmp_path / "s"), cwd=str(tmp_path), **values), env)


def test_the_default_profile_serves_deepseek_and_stores_jsonl(tmp_path: Path) -> None:
    entries = profile_entries(settings(tmp_path))
    by_id = {entry["id"]: entry for entry in entries}
    # no workspace baked in (calls run in their session's cwd); spill files under the sessions root
    assert by_id["bash"]["config"] == {"sessionFiles": str(tmp_path / "s")}
    assert by_id["persistence"] == {
        "id": "persistence",
        "name": "session-persistence-jsonl",
        "config": {"root": str(tmp_path / "s")},
    }
    assert by_id["model"] == {
        "id": "model",
        "name": "llm-deepseek",
        "config": {"models": ["deepseek-v4-flash", "deepseek-v4-pro"]},
    }
    assert by_id["agent-loop"]["config"] == {"agents": [], "maxSteps": 100}
    assert "invariants" not in by_id


def test_a_model_outside_the_defaults_is_added_and_invariants_are_optional(tmp_path: Path) -> None:
    chosen = settings(tmp_path, model="deepseek-chat", invariants=True)
    entries = profile_entries(chosen)
    assert entries[-1]["config"]["models"] == ["deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat"]
    assert any(entry["name"] == "invariants" for entry in entries)
    assert profile_model(chosen) == "deepseek-chat"
    assert profile_entries(settings(tmp_path, model="deepseek-v4-pro"))[-1]["config"]["models"] == [
        "deepseek-v4-flash",
        "deepseek-v4-pro",
    ]


def test_the_demo_profile_swaps_the_model_plugin(tmp_path: Path) -> None:
    demo = settings(tmp_path, demo=True, key=False)
    assert profile_entries(demo)[-1] == {"id": "model", "name": "dsh.plugins.demo", "config": {"models": ["demo"]}}
    assert profile_model(demo) == "demo"
    assert profile_model(settings(tmp_path)) == DEFAULT_MODEL


def test_the_storage_profile_holds_sessions_and_persistence_only(tmp_path: Path) -> None:
    entries = profile_entries(settings(tmp_path), "storage")
    assert [entry["id"] for entry in entries] == ["sessions", "persistence"]


def test_a_rendered_profile_parses_back_into_the_same_tree(tmp_path: Path) -> None:
    entries = profile_entries(settings(tmp_path, invariants=True))
    path = tmp_path / "profile.yml"
    path.write_text(render_tree(entries, "a label"))
    assert path.read_text().startswith("# a label of dsh, as `dsh config` prints it.\n")
    parsed = parse_tree(path)
    assert [(entry.id, entry.name, entry.config) for entry in parsed] == [
        (entry["id"], entry["name"], entry.get("config")) for entry in entries
    ]


def test_a_built_in_tree_carries_its_entries_and_renders_them_on_demand(tmp_path: Path) -> None:
    chosen = settings(tmp_path, invariants=True)
    tree = resolve_tree(chosen)
    assert (tree.source, tree.file) == (None, None)
    assert list(tree.entries) == profile_entries(chosen)
    assert tree.text == render_tree(profile_entries(chosen), "the built-in default profile")
    assert tree.text is tree.text


def test_resolve_tree_needs_a_key_for_the_default_agent_profile(tmp_path: Path) -> None:
    keyless = settings(tmp_path, key=False)
    with pytest.raises(CliError) as caught:
        resolve_tree(keyless)
    assert (caught.value.status, caught.value.message) == (2, NO_MODEL_HELP)
    shown = resolve_tree(keyless, need_key=False)
    assert (shown.label, shown.file, shown.model) == ("the built-in default profile", None, DEFAULT_MODEL)
    storage = resolve_tree(keyless, "storage")
    assert storage.label == "the built-in storage profile"
    assert resolve_tree(settings(tmp_path, demo=True, key=False)).label == "the built-in demo profile"


def test_resolve_tree_reads_a_config_file(tmp_path: Path) -> None:
    tree = tmp_path / "tree.yml"
    tree.write_text("- id: llm\n  name: llm\n")
    resolved = resolve_tree(settings(tmp_path, config=str(tree), key=False))
    assert (resolved.label, resolved.text, resolved.file, resolved.model) == (str(tree), tree.read_text(), tree, None)
    with pytest.raises(CliError, match=r"cannot read --config .*; give a readable YAML file"):
        resolve_tree(settings(tmp_path, config=str(tmp_path / "missing.yml")))


@pytest.mark.parametrize(
    ("environ", "spelled"),
    [
        ({"DSH_HOME": "/srv/dsh", "XDG_DATA_HOME": "/xdg"}, "${DSH_HOME}/sessions"),
        ({"DSH_HOME": "~/dsh"}, "${DSH_HOME}/sessions"),
        ({"DSH_HOME": "", "XDG_DATA_HOME": "/xdg"}, "${XDG_DATA_HOME}/dsh/sessions"),
        ({}, "~/.local/share/dsh/sessions"),
        ({"DSH_HOME": "relative/home"}, None),
        ({"XDG_DATA_HOME": "relative/data"}, None),
    ],
)
def test_the_default_sessions_root_is_spelled_by_its_origin(environ: dict[str, str], spelled: str | None) -> None:
    """A relative variable has no portable spelling: a tree would read it relative to its own folder."""
    assert portable_sessions_root(environ) == spelled
    assert Settings.from_args(namespace(), environ).portable_root == spelled


def test_only_the_printed_profile_spells_the_root_portably(tmp_path: Path) -> None:
    """The booted profile names the absolute root, literally; a root the user named has no portable spelling."""
    home = tmp_path / "h$me"
    chosen = Settings.from_args(namespace(), {"DSH_HOME": str(home), "DEEPSEEK_API_KEY": "k"})
    booted = {entry["id"]: entry for entry in profile_entries(chosen)}
    printed = {entry["id"]: entry for entry in profile_entries(chosen, portable=True)}
    assert booted["persistence"]["config"] == {"root": str(home / "sessions").replace("$", "$$")}
    assert booted["bash"]["config"] == {"sessionFiles": str(home / "sessions").replace("$", "$$")}
    assert printed["persistence"]["config"] == {"root": "${DSH_HOME}/sessions"}
    assert printed["bash"]["config"] == {"sessionFiles": "${DSH_HOME}/sessions"}
    assert resolve_tree(chosen, portable=True).entries == tuple(profile_entries(chosen, portable=True))
    named = settings(tmp_path)
    assert profile_entries(named, portable=True) == profile_entries(named)
    stored = Settings.from_args(namespace(store="sqlite:///tmp/a$b.db"), {})
    assert profile_entries(stored, "storage", portable=True)[-1]["config"] == {"path": "/tmp/a$$b.db"}
