"""A 300-step session with big tool outputs stays under a small context window, and resumes identically."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dsh.core.llm import encode, text
from dsh.core.session import AssistantChunkEvent, CompactionEvent, derive_messages
from dsh.plugins.compaction import AGENT_COMPACTION, Compaction, CompactionNotice, estimate_request
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from tests.plugins.compaction.helpers import GrowingModel, register_probe

WINDOW = 20_000
STEPS = 300


def request_positions(events: list) -> list[int]:  # type: ignore[type-arg]
    """The log position of each model request: the first chunk of each attempt."""
    positions = []
    previous = None
    for event in events:
        if type(event) is AssistantChunkEvent:
            key = (event.data.turn, event.data.step)
            if key != previous:
                positions.append(event.seq)
            previous = key
        else:
            previous = None if type(event) is not AssistantChunkEvent else previous
    return positions


async def test_a_300_step_session_stays_under_the_window_and_derives_the_same_requests(tmp_path: Path) -> None:
    model = GrowingModel(STEPS)
    notices: list[CompactionNotice] = []
    async with Harness(loop_config={"agents": [], "maxSteps": STEPS + 5}) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        await h.ctx.plugin(Compaction, {"contextWindow": WINDOW, "pruneChars": 2000, "keepChars": 300})
        h.ctx.on(AGENT_COMPACTION, lambda _agent, notice: notices.append(notice))
        register_probe(h)
        model.load(h, STEPS + 60)
        agent = h.agent(system_prompt="You probe.")
        agent.send((text("probe 300 times"),))
        await agent.when_idle()
        session = agent.session
        live = [encode(request.messages) for request in model.requests]
        sizes = [estimate_request(r.system, r.tools, r.messages) for r in model.requests]
        events = list(session.events)
        session_id = session.id
    assert model.calls == STEPS
    assert len(model.requests) == STEPS + 1
    assert max(sizes) < WINDOW
    compactions = [event for event in events if type(event) is CompactionEvent]
    assert any(event.data.summary for event in compactions)
    assert any(event.data.pruned for event in compactions)
    assert all(notice.kind == "compacted" for notice in notices)
    assert len(notices) == len(compactions)
    assert len(model.summaries) <= len(compactions)
    # every live request is the derivation of the log up to it
    positions = request_positions(events)
    assert len(positions) == len(live)
    assert [encode(derive_messages(events[:p])) for p in positions] == live
    # a fresh process, reading the persisted log, derives the same bytes
    script = (
        "import asyncio, sys\n"
        "from dsh.core.llm import encode\n"
        "from dsh.core.session import derive_messages, SessionStore, parse_session_event_line\n"
        "from pathlib import Path\n"
        "lines = [l for l in Path(sys.argv[1]).read_text().splitlines()[1:]]\n"
        "events = [parse_session_event_line(l) for l in lines]\n"
        "positions = [int(p) for p in sys.argv[2].split(',')]\n"
        "for p in positions:\n"
        "    sys.stdout.buffer.write(encode(derive_messages(events[:p])) + b'\\n')\n"
    )
    [log] = list(tmp_path.rglob(f"{session_id}.jsonl"))
    out = subprocess.run(
        [sys.executable, "-c", script, str(log), ",".join(map(str, positions))], capture_output=True, check=True
    ).stdout
    assert out.split(b"\n")[:-1] == live
