"""SPEC §16.3 ``full-loop.e2e``: full loop: real model + real bash tool.

``deepseek`` reaches the real API (skipped without ``DEEPSEEK_API_KEY``); ``wire`` plays
the same exchange from a local server, so the real adapter, loop and bash always run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.core.llm import text
from dsh.testing.wire import WireServer, text_reply
from tests.examples.coding.harness import coding_harness, final_text, of_type, pick_model, result_text, wait_for_idle
from tests.examples.coding.scripts import bash_reply

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("model", ["wire", pytest.param("deepseek", marks=pytest.mark.timeout(300))])
async def test_runs_a_bash_command_on_request_and_reports_its_output(
    model: str, tmp_path: Path, wire: WireServer
) -> None:
    """full loop: real model + real bash tool — runs a bash command on request and reports its output"""
    wire.add(bash_reply("call-1", "echo e2e-ok"), text_reply("The command printed e2e-ok."))
    async with coding_harness(tmp_path, pick_model(model, wire.base_url)) as h:
        agent = h.create("full-loop")
        agent.send([text("Run the shell command `echo e2e-ok` and tell me exactly what it printed.")])
        await wait_for_idle(agent)
        events = agent.session.events
        calls = of_type(events, "tool/call")
        assert [call["name"] for call in calls][:1] == ["bash"]
        results = [result_text(data) for data in of_type(events, "tool/result")]
        assert any("e2e-ok" in result for result in results), results
        assert "e2e-ok" in final_text(events)
        assert of_type(events, "turn/end")[-1]["reason"] == {"kind": "completed"}
