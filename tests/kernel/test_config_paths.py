"""Config paths: `$NAME`, `${NAME}` and `~` expanded at validation, relative paths anchored at the tree file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from dsh.kernel import (
    ConfigError,
    ConfigPath,
    Context,
    LoaderError,
    PluginEntry,
    PluginSpec,
    escape_path,
    expand_path,
    load_entries,
    load_tree,
    validate_config,
)
from tests.kernel.helpers import leftovers

ENV = {"HOME_DIR": "/srv/dsh", "EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$HOME_DIR/sessions", "/srv/dsh/sessions"),
        ("${HOME_DIR}/sessions", "/srv/dsh/sessions"),
        ("${HOME_DIR}sessions", "/srv/dshsessions"),
        ("/a/$$HOME_DIR/b", "/a/$HOME_DIR/b"),
        ("/price/$5/$", "/price/$5/$"),
        ("/plain/path", "/plain/path"),
        ("relative/path", "relative/path"),
        ("", ""),
    ],
)
def test_variables_expand_and_a_doubled_dollar_is_a_dollar(text: str, expanded: str) -> None:
    assert expand_path(text, environ=ENV) == expanded


def test_a_leading_tilde_is_the_home_directory_after_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable holding `~/x` expands like the settings' `$DSH_HOME` does."""
    monkeypatch.setenv("HOME", "/home/someone")
    assert expand_path("~/data") == "/home/someone/data"
    assert expand_path("~") == "/home/someone"
    assert expand_path("$WHERE/s", environ={"WHERE": "~/w"}) == "/home/someone/w/s"
    assert expand_path("a/~/b", "/base") == "/base/a/~/b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "${MISSING}/s",
            "'${MISSING}/s' uses $MISSING, which is not set (or empty): set MISSING or write the path out",
        ),
        ("$MISSING", "uses $MISSING, which is not set (or empty): set MISSING or write the path out"),
        ("$EMPTY/s", "uses $EMPTY, which is not set (or empty): set EMPTY or write the path out"),
        ("${HOME_DIR", "'${HOME_DIR' has an unclosed ${: write ${NAME}, or $$ for a literal $"),
        ("${1X}/a", "${1X} is not a variable name: write ${NAME}, or $$ for a literal $"),
        ("${}/a", "${} is not a variable name"),
        ("~no-such-user-dsh/x", "there is no user 'no-such-user-dsh' whose home ~no-such-user-dsh names"),
    ],
)
def test_a_path_that_cannot_expand_says_what_to_fix(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        expand_path(text, environ=ENV)
    assert message in str(caught.value)


def test_a_relative_path_joins_the_base_directory_and_an_absolute_one_does_not() -> None:
    assert expand_path("data/../sessions", "/trees/mine") == "/trees/mine/sessions"
    assert expand_path("./s", Path("/trees")) == "/trees/s"
    assert expand_path("/abs/./s", "/trees") == "/abs/./s"
    assert expand_path("$HOME_DIR", "/trees", ENV) == "/srv/dsh"
    assert expand_path("", "/trees") == ""


@pytest.mark.parametrize("path", ["/a/b", "/a/$b/$$c", "/", "/~x"])
def test_an_escaped_absolute_path_expands_back_to_itself(path: str) -> None:
    assert expand_path(escape_path(path), "/base", {"b": "no", "c": "no"}) == path


@pytest.mark.parametrize(("path", "spelled"), [("~user/x", "./~user/x"), ("~", "./~"), ("rel/$X", "rel/$$X")])
def test_an_escaped_relative_path_names_the_same_place(path: str, spelled: str) -> None:
    assert escape_path(path) == spelled
    assert expand_path(spelled, "/base", {"X": "no"}) == f"/base/{path}"


class Paths(BaseModel):
    root: ConfigPath = Field(min_length=1)
    extra: list[ConfigPath] = Field(default_factory=list)
    maybe: ConfigPath | None = None


def test_config_path_fields_expand_against_the_base_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_TEST_DATA", "/data")
    raw = {"root": "${DSH_TEST_DATA}/s", "extra": ["rel", "/abs"], "maybe": "x"}
    assert validate_config("p", Paths, raw, base_dir="/trees") == Paths(
        root="/data/s", extra=["/trees/rel", "/abs"], maybe="/trees/x"
    )
    assert validate_config("p", Paths, raw) == Paths(root="/data/s", extra=["rel", "/abs"], maybe="x")


def test_an_unset_variable_is_a_config_error_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSH_TEST_UNSET", raising=False)
    with pytest.raises(ConfigError) as caught:
        validate_config("p", Paths, {"root": "/ok", "extra": ["/ok", "$DSH_TEST_UNSET/x"]})
    assert caught.value.problems == [
        (
            "extra.1",
            "'$DSH_TEST_UNSET/x' uses $DSH_TEST_UNSET, which is not set (or empty): "
            "set DSH_TEST_UNSET or write the path out",
        )
    ]


SEEN: list[Paths] = []


def _record(ctx: Context, config: Paths) -> None:
    SEEN.append(config)


RECORDER = PluginSpec(name="recorder", apply=_record, Config=Paths)


async def test_a_tree_entry_resolves_its_relative_paths_against_its_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outer file's entry anchors at the outer folder, the included file's at its own."""
    SEEN.clear()
    monkeypatch.setenv("DSH_TEST_TREES", str(tmp_path / "nested"))
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "inner.yml").write_text(
        "- {id: inner, name: tests.kernel.test_config_paths:RECORDER, config: {root: ./inner-data}}\n"
    )
    outer = tmp_path / "outer.yml"
    outer.write_text(
        "- {id: outer, name: tests.kernel.test_config_paths:RECORDER, config: {root: data}}\n"
        "- {id: more, name: include, config: {path: '${DSH_TEST_TREES}/inner.yml'}}\n"
    )
    root = Context()
    await load_tree(root, outer)
    assert [config.root for config in SEEN] == [str(tmp_path / "data"), str(tmp_path / "nested" / "inner-data")]
    await root.dispose()


async def test_an_unset_variable_fails_the_boot_before_the_entry_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    SEEN.clear()
    monkeypatch.delenv("DSH_TEST_UNSET", raising=False)
    tree = tmp_path / "tree.yml"
    tree.write_text(
        "- {id: first, name: tests.kernel.test_config_paths:RECORDER, config: {root: /fine}}\n"
        "- {id: second, name: tests.kernel.test_config_paths:RECORDER, config: {root: '${DSH_TEST_UNSET}/x'}}\n"
    )
    root = Context()
    with pytest.raises(LoaderError) as caught:
        await load_tree(root, tree)
    assert str(caught.value) == (
        f'{tree}: entry "second" (tests.kernel.test_config_paths:RECORDER): plugin "recorder": invalid config: '
        "root: '${DSH_TEST_UNSET}/x' uses $DSH_TEST_UNSET, which is not set (or empty): "
        "set DSH_TEST_UNSET or write the path out (fix these fields in its config)"
    )
    assert [config.root for config in SEEN] == ["/fine"]
    assert leftovers(root) == []


async def test_an_include_path_that_cannot_expand_names_the_include(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DSH_TEST_UNSET", raising=False)
    tree = tmp_path / "tree.yml"
    tree.write_text("- {id: more, name: include, config: {path: '$DSH_TEST_UNSET/inner.yml'}}\n")
    with pytest.raises(LoaderError) as caught:
        await load_tree(Context(), tree)
    assert str(caught.value) == (
        f'{tree}: entry "more" (include): config.path '
        "'$DSH_TEST_UNSET/inner.yml' uses $DSH_TEST_UNSET, which is not set (or empty): "
        "set DSH_TEST_UNSET or write the path out"
    )


async def test_entries_built_in_code_anchor_at_their_file_and_keep_a_model_as_given(tmp_path: Path) -> None:
    SEEN.clear()
    ready = Paths(root="kept-as-is")
    entries = [
        PluginEntry("a", "tests.kernel.test_config_paths:RECORDER", {"root": "rel"}, tmp_path / "x" / "tree.yml"),
        PluginEntry("b", "tests.kernel.test_config_paths:RECORDER", ready.model_dump(), tmp_path / "tree.yml"),
    ]
    root = Context()
    await load_entries(root, entries)
    assert [config.root for config in SEEN] == [str(tmp_path / "x" / "rel"), str(tmp_path / "kept-as-is")]
    await root.dispose()
    SEEN.clear()
    root = Context()
    await root.plugin(RECORDER, ready)
    await root.plugin(RECORDER, {"root": "rel"})
    assert [config.root for config in SEEN] == ["kept-as-is", "rel"]
    await root.dispose()


def test_the_literal_escape_survives_the_loader(tmp_path: Path) -> None:
    """A path with `$` in it, escaped, validates back to itself (how the built-in profile names its root)."""
    odd = str(tmp_path / "a$b" / "${c}")
    config: Any = validate_config("p", Paths, {"root": escape_path(odd)}, base_dir="/elsewhere")
    assert config.root == odd
    assert os.path.isabs(config.root)
