"""A provider error that echoes the API key never reaches the session log (issue: secrets)."""

from __future__ import annotations

from pathlib import Path

from dsh.core.llm import text
from dsh.testing.wire import WireServer, api_error
from tests.examples.coding.harness import Model, coding_harness, of_type, wait_for_idle

KEY = "dsh-test-key-0123456789abcdef"


async def test_an_error_body_echoing_the_key_is_redacted_before_it_is_logged(tmp_path: Path, wire: WireServer) -> None:
    wire.add(api_error(401, f"Incorrect API key provided: {KEY} (also Bearer {KEY})", "authentication_error"))
    sessions = tmp_path / "sessions"
    async with coding_harness(tmp_path, Model(KEY, wire.base_url), sessions) as h:
        agent = h.create("redacted")
        agent.send([text("hi")])
        await wait_for_idle(agent)
        (end,) = of_type(agent.session.events, "turn/end")
        assert end["reason"]["kind"] == "error"
        assert "Incorrect API key provided: [REDACTED]" in end["reason"]["message"]
        (error,) = of_type(agent.session.events, "error")
        assert KEY not in error["message"]
    (log,) = sessions.rglob("*.jsonl")
    stored = log.read_text(encoding="utf-8")
    assert "Incorrect API key provided" in stored
    assert KEY not in stored
