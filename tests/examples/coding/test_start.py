"""coding-agent's ``start.py`` in-process: reading ``.env`` and reporting a tree that cannot load."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.examples.coding.harness import START

KEYS = ("DSH_TEST_PLAIN", "DSH_TEST_EXPORTED", "DSH_TEST_QUOTED", "DSH_TEST_SINGLE", "DSH_TEST_KEPT", "DSH_TEST_EMPTY")


def load_start() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coding_agent_start", START)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


start = load_start()


@pytest.fixture
def clean_env() -> Iterator[None]:
    saved = {key: os.environ.pop(key) for key in KEYS if key in os.environ}
    yield
    for key in KEYS:
        os.environ.pop(key, None)
    os.environ.update(saved)


@pytest.mark.usefixtures("clean_env")
def test_dotenv_sets_what_the_environment_leaves_unset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["DSH_TEST_KEPT"] = "from the environment"
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# a comment\n"
        "\n"
        "DSH_TEST_PLAIN=plain value\n"
        "export DSH_TEST_EXPORTED = exported\n"
        'DSH_TEST_QUOTED="quoted # not a comment"\n'
        "DSH_TEST_SINGLE='single'\n"
        "DSH_TEST_KEPT=from the file\n"
        "DSH_TEST_EMPTY=\n"
        "not a pair\n"
        "1BAD=starts with a digit\n",
        encoding="utf-8",
    )
    start.load_dotenv(dotenv)
    assert os.environ["DSH_TEST_PLAIN"] == "plain value"
    assert os.environ["DSH_TEST_EXPORTED"] == "exported"
    assert os.environ["DSH_TEST_QUOTED"] == "quoted # not a comment"
    assert os.environ["DSH_TEST_SINGLE"] == "single"
    assert os.environ["DSH_TEST_KEPT"] == "from the environment"
    assert os.environ["DSH_TEST_EMPTY"] == ""
    assert capsys.readouterr().err.splitlines() == [
        f"coding-agent: {dotenv}:9: not a KEY=VALUE line, skipped",
        f"coding-agent: {dotenv}:10: not a KEY=VALUE line, skipped",
    ]


def test_a_missing_dotenv_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start.load_dotenv(tmp_path / ".env")
    assert capsys.readouterr().err == ""


def test_an_unreadable_dotenv_is_reported_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dir.env").mkdir()
    start.load_dotenv(tmp_path / "dir.env")
    binary = tmp_path / "binary.env"
    binary.write_bytes(b"KEY=\xff\n")
    start.load_dotenv(binary)
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"coding-agent: cannot read {tmp_path / 'dir.env'}: ")
    assert errors[1].startswith(f"coding-agent: cannot read {binary}: ")


async def test_a_tree_that_fails_to_load_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "tree.yml"
    tree.write_text("- id: nope\n  name: no-such-plugin\n", encoding="utf-8")
    assert await start.run(tree) == 1
    err = capsys.readouterr().err
    assert err.startswith("coding-agent: ")
    assert 'unknown plugin "no-such-plugin"' in err
