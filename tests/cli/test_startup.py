"""Start-up trimming: `import httpx` in the dsh process does not import httpx's command-line tool."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

from dsh.cli.startup import HTTPX_CLI, defer_httpx_cli


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
