"""The `dsh` parser: subcommands, their --help, global options before or after the subcommand."""

from __future__ import annotations

import runpy
import sys

import pytest

from dsh import __version__
from dsh.cli import amain, build_parser, main
from dsh.cli.main import COMMANDS


@pytest.mark.parametrize(
    ("argv", "first_line"),
    [
        (["run", "--help"], "usage: dsh run"),
        (["chat", "--help"], "usage: dsh chat"),
        (["acp", "--help"], "usage: dsh acp"),
        (["sessions", "--help"], "usage: dsh sessions"),
        (["sessions", "list", "--help"], "usage: dsh sessions list"),
        (["sessions", "show", "--help"], "usage: dsh sessions show"),
        (["sessions", "rm", "--help"], "usage: dsh sessions rm"),
        (["config", "--help"], "usage: dsh config"),
    ],
)
def test_every_subcommand_has_help(argv: list[str], first_line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith(first_line)
    assert "--sessions-root DIR" in out


def test_run_help_documents_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for line in ("0    the turn completed", "3    the model stopped", "130  interrupted"):
        assert line in out


def test_the_top_level_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"    {name}" in out


def test_global_options_are_accepted_on_either_side_of_the_subcommand() -> None:
    parser = build_parser()
    before = parser.parse_args(["--model", "m", "--demo", "-vv", "run", "hi"])
    after = parser.parse_args(["run", "--model", "m", "--demo", "-vv", "hi"])
    for args in (before, after):
        assert (args.model, args.demo, args.verbose, args.prompt) == ("m", True, 2, ["hi"])
    untouched = parser.parse_args(["--model", "m", "run", "hi"])
    assert untouched.model == "m"
    nested = parser.parse_args(["sessions", "show", "x", "--sessions-root", "/s", "--json"])
    assert (nested.action, nested.id, nested.sessions_root, nested.json) == ("show", "x", "/s", True)


def test_sessions_needs_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions"]) == 2
    assert "the following arguments are required: ACTION" in capsys.readouterr().err


def test_python_dash_m_dsh_cli_runs_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["dsh", "--version"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("dsh.cli", run_name="__main__")
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"dsh {__version__}\n"


async def test_amain_answers_help_and_version_without_running_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["--version"]) == 0
    assert capsys.readouterr().out == f"dsh {__version__}\n"
    assert await amain([]) == 0
    assert capsys.readouterr().out.startswith("usage: dsh")


def test_importing_the_main_module_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    import dsh.cli.__main__ as entry

    assert entry.main is main
    assert capsys.readouterr() == ("", "")
