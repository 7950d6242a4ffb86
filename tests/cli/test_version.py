"""The `dsh` console entry: --version and --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import dsh
from dsh.cli import build_parser, main

DSH = Path(sys.executable).with_name("dsh")


def test_version_prints_dsh_and_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`dsh --version` prints `dsh <version>` on stdout and exits 0."""
    assert main(["--version"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"dsh {dsh.__version__}\n"
    assert captured.err == ""


def test_help_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """`dsh --help` and a bare `dsh` print the usage and exit 0."""
    assert main(["--help"]) == 0
    helped = capsys.readouterr().out
    assert helped.startswith("usage: dsh")
    assert "--version" in helped
    assert main([]) == 0
    assert capsys.readouterr().out == helped
    assert build_parser().prog == "dsh"


def test_an_unknown_option_exits_2_with_the_usage_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's convention: status 2, nothing on stdout."""
    assert main(["--bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unrecognized arguments: --bogus" in captured.err


def test_the_installed_console_script_prints_the_version() -> None:
    """The `dsh` script declared in pyproject runs main()."""
    done = subprocess.run([str(DSH), "--version"], capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"dsh {dsh.__version__}\n", "")
