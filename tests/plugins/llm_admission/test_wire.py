"""llm-admission in front of the real DeepSeek adapter, over real HTTP to a local wire server."""

from __future__ import annotations

import asyncio
from typing import Any

import dsh.adapters.deepseek as deepseek
from dsh.core.llm import text, text_of
from dsh.core.session import AssistantMessageEvent
from dsh.plugins.llm_admission import Admission, Config, admission_plugin, install_admission
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.wire import Entry, RecordedRequest, WireServer, text_reply
from tests.plugins.llm_admission.helpers import FakeTimer, ask, collect, texts

MODEL = "wire"


def prompt_of(request: RecordedRequest) -> str:
    content: str = next(message["content"] for message in request.json["messages"] if message["role"] == "user")
    return content


def adapter_config(server: WireServer) -> dict[str, Any]:
    return {"apiKey": "sk-test", "baseURL": server.base_url, "models": [MODEL]}


async def test_deepseek_streams_behind_max_opening_one_open_one_at_a_time_in_order_and_all_complete() -> None:
    prompts = [f"question {index}" for index in range(5)]
    admissions: list[Admission] = []
    seen: list[tuple[str, int, int]] = []  # at each request: its prompt, the slots held, the streams waiting

    def respond(request: RecordedRequest) -> Entry:
        opening = admissions[0].opening
        seen.append((prompt_of(request), opening.held, opening.waiting))
        return text_reply("reply ", "to ", prompt_of(request))

    async with WireServer(respond=respond) as server, Harness(with_loop=False) as harness:
        await harness.ctx.plugin(deepseek, adapter_config(server))
        admissions.append(install_admission(harness.ctx, Config(max_opening=1), FakeTimer()))
        tasks = [asyncio.create_task(collect(harness.llm.stream(ask(prompt, model=MODEL)))) for prompt in prompts]
        async with asyncio.timeout(10):
            results = await asyncio.gather(*tasks)
        assert [texts(chunks) for chunks in results] == [f"reply to {prompt}" for prompt in prompts]
        assert seen == [(prompt, 1, len(prompts) - 1 - index) for index, prompt in enumerate(prompts)]
        assert (admissions[0].opening.held, admissions[0].opening.waiting) == (0, 0)


async def test_deepseek_agents_behind_max_opening_one_all_end_their_turns_with_their_answers() -> None:
    def respond(request: RecordedRequest) -> Entry:
        return text_reply("answer: ", prompt_of(request))

    timer = FakeTimer()
    async with WireServer(respond=respond) as server, Harness() as harness:
        await harness.ctx.plugin(deepseek, adapter_config(server))
        await harness.ctx.plugin(admission_plugin(timer), {"maxOpening": 1})
        agents = [harness.agent(f"agent-{index}", model=MODEL) for index in range(4)]
        for index, agent in enumerate(agents):
            agent.send([text(f"job {index}")])
        async with asyncio.timeout(10):
            await asyncio.gather(*(agent.when_idle() for agent in agents))
        for index, agent in enumerate(agents):
            assert data_json(agent.session, "turn/end") == [{"turn": 1, "reason": {"kind": "completed"}}]
            answers = [text_of(e.data.content) for e in agent.session.events if type(e) is AssistantMessageEvent]
            assert answers == [f"answer: job {index}"]
        assert len(server.requests) == 4
        assert len(timer.alarms) == 4
        assert timer.pending == []
