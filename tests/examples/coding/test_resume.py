"""SPEC §16.3 ``resume.e2e``: resume: continue a persisted session across processes.

Run 1 teaches the agent a secret on a known session id and is disposed (its log is
flushed to a JSONL root); run 2 boots a fresh stack over the same root, resumes that id,
and asks for the secret.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from dsh.core.llm import text
from dsh.testing.wire import WireServer, text_reply
from tests.examples.coding.harness import coding_harness, final_text, of_type, pick_model, wait_for_idle

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("model", ["wire", pytest.param("deepseek", marks=pytest.mark.timeout(300))])
async def test_recalls_a_fact_stored_in_a_prior_separately_disposed_session(
    model: str, tmp_path: Path, wire: WireServer
) -> None:
    """resume: continue a persisted session across processes — recalls a fact stored in a prior, separately-disposed session"""
    secret = f"ZEBRA-{secrets.token_hex(3).upper()}"
    session_id = f"resume-e2e-{secrets.token_hex(4)}"
    root = tmp_path / "sessions"
    backend = pick_model(model, wire.base_url)
    wire.add(text_reply("OK"), text_reply(f"The secret word is {secret}."))

    async with coding_harness(tmp_path, backend, root) as first:
        agent = first.create(session_id)
        agent.send([text(f"Remember this secret word: {secret}. Reply with just OK; do not run any tools.")])
        await wait_for_idle(agent)
        assert of_type(agent.session.events, "turn/end")[-1]["reason"] == {"kind": "completed"}

    async with coding_harness(tmp_path, backend, root) as second:
        agent = await second.resume(session_id)
        assert agent.session.id == session_id
        history = json.dumps(of_type(agent.session.events, "user/message"), ensure_ascii=False)
        assert secret in history  # the fact is in the resumed log before anything is asked
        agent.send([text("What was the secret word I asked you to remember? Reply with just the word.")])
        await wait_for_idle(agent)
        assert secret in final_text(agent.session.events)

    if model == "wire":  # the resumed history really reached the model
        assert secret in json.dumps(wire.requests[-1].json["messages"], ensure_ascii=False)
