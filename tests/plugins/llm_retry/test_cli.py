"""`dsh run` loads llm-retry by default: a 429 is retried and said on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.testing.wire import WireServer, api_error, text_reply


async def test_dsh_run_retries_a_429_and_says_so_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("DEEPSEEK_BASE_URL", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    limited = api_error(429, "slow down", "rate_limit_error", headers=[("retry-after", "0")])
    async with WireServer([limited, text_reply("after all")]) as server:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        status = await amain(["run", "--sessions-root", str(tmp_path / "s"), "--cwd", str(tmp_path), "hi"])
        out, err = capsys.readouterr()
        assert (status, out) == (0, "after all\n")
        assert "dsh: retrying in 0 s (429 RATE_LIMIT), attempt 2 of 4\n" in err
        assert len(server.requests) == 2
