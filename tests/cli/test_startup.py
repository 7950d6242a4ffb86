"""Start-up trimming: `import httpx` in the dsh process does not import httpx's command-line tool."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dsh.cli.startup import HTTPX_CLI, CollectorPolicy, defer_httpx_cli


def test_a_stand_in_is_registered_only_while_httpx_is_not_imported() -> None:
    """(extra) the stand-in goes in once, and never over an imported httpx or tool"""
    table: dict[str, ModuleType] = {}
    assert defer_httpx_cli(table) is True
    stand_in = table[HTTPX_CLI]
    assert callable(stand_in.main)
    assert defer_httpx_cli(table) is False
    assert table[HTTPX_CLI] is stand_in
    imported = {"httpx": ModuleType("httpx")}
    assert defer_httpx_cli(imported) is False
    assert list(imported) == ["httpx"]


def test_calling_the_stand_in_runs_the_real_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) whoever runs httpx's tool gets the real one, imported on that first call"""
    import httpx._main as real

    calls: list[tuple[Any, ...]] = []

    def fake_main(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "ran"

    monkeypatch.setattr(real, "main", fake_main)
    table: dict[str, ModuleType] = {}
    defer_httpx_cli(table)
    stand_in = table[HTTPX_CLI]
    assert stand_in.main("https://example.invalid", verbose=True) == "ran"
    assert HTTPX_CLI not in table
    assert stand_in.main() == "ran"
    assert calls == [(("https://example.invalid",), {"verbose": True}), ((), {})]


def test_the_dsh_process_imports_httpx_without_its_tool() -> None:
    """(extra) in a fresh interpreter, httpx works and click, rich and pygments stay unimported"""
    script = (
        "import sys\n"
        "from dsh.cli.startup import defer_httpx_cli\n"
        "assert defer_httpx_cli()\n"
        "import httpx\n"
        "assert httpx.URL('http://127.0.0.1:1/x').path == '/x'\n"
        "print(sorted(name for name in ('click', 'rich', 'pygments') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


class _RecordingCollector:
    """Records the calls a CollectorPolicy makes on the gc module."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def disable(self) -> None:
        self.calls.append("disable")

    def enable(self) -> None:
        self.calls.append("enable")

    def freeze(self) -> None:
        self.calls.append("freeze")


def test_the_collector_policy_pauses_settles_once_and_freezes_before_exit() -> None:
    """(extra) pause disables collection; settle freezes and re-enables once; finish freezes again"""
    collector = _RecordingCollector()
    policy = CollectorPolicy(collector)
    policy.pause()
    assert collector.calls == ["disable"]
    policy.settle()
    policy.settle()
    assert collector.calls == ["disable", "freeze", "enable"]
    policy.finish()
    assert collector.calls == ["disable", "freeze", "enable", "freeze"]


def test_finishing_without_a_boot_re_enables_collection() -> None:
    """(extra) a command that never boots (or fails first) still leaves the collector on"""
    collector = _RecordingCollector()
    policy = CollectorPolicy(collector)
    policy.pause()
    policy.finish()
    assert collector.calls == ["disable", "freeze", "enable", "freeze"]


def test_the_policy_leaves_an_unpaused_process_alone() -> None:
    """(extra) in-process boots (tests, embedders) never touch the collector"""
    collector = _RecordingCollector()
    policy = CollectorPolicy(collector)
    policy.settle()
    policy.finish()
    assert collector.calls == []


def test_the_dsh_process_collects_again_once_booted(tmp_path: Path) -> None:
    """(extra) a real `dsh run --demo`: the collector is back on after the boot, start-up objects are frozen"""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import gc, sys\n"
        "import dsh.cli.boot as boot\n"
        "original = boot.COLLECTOR.settle\n"
        "def settle():\n"
        "    print('before', gc.isenabled(), file=sys.stderr)\n"
        "    original()\n"
        "    print('after', gc.isenabled(), gc.get_freeze_count() > 10000, file=sys.stderr)\n"
        "boot.COLLECTOR.settle = settle\n"
        "from dsh.cli.main import console\n"
        "sys.exit(console())\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            str(probe),
            "--sessions-root",
            str(tmp_path / "s"),
            "run",
            "--demo",
            "--cwd",
            str(tmp_path),
            "hi",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "before False\n" in done.stderr
    assert "after True True\n" in done.stderr


def test_the_console_script_runs_main_under_the_collector_policy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """(extra) `dsh` pauses collection around main() and freezes before exit; main() alone never does"""
    from dsh.cli.startup import COLLECTOR

    entry = importlib.import_module("dsh.cli.main")

    collector = _RecordingCollector()
    monkeypatch.setattr(COLLECTOR, "_gc", collector)
    monkeypatch.setattr(COLLECTOR, "_owned", False)
    monkeypatch.setattr(COLLECTOR, "_paused", False)
    monkeypatch.setattr(sys, "argv", ["dsh", "--version"])
    assert entry.main() == 0
    assert collector.calls == []
    assert entry.console() == 0
    assert collector.calls == ["disable", "freeze", "enable", "freeze"]
    assert capsys.readouterr().out.startswith("dsh ")
