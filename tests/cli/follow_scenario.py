"""The live-tail scenario shared by every backend: `dsh sessions show --follow` beside a running `dsh run`.

The writer is a real `dsh run` against the wire test server whose scripted model calls
`bash` with a command that waits for a file the test creates: the turn stays open until
the test lets it go, so the follower provably prints the events while the session is
being written, then the rest as they are stored, and stops (`--until-idle`) after the
turn's end. Its lines must equal the stored log line for line (no gap, no duplicate, seq
order).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dsh.testing.wire import Finish, Reply, TextDelta, WireServer, text_reply, tool_call
from tests.cli.helpers import child_env, dsh, finish, spawn

WAIT_S = 30.0


async def _line(stream: asyncio.StreamReader) -> str:
    line = await asyncio.wait_for(stream.readline(), WAIT_S)
    assert line, "the process closed its output early"
    return line.decode()


async def _until_exists(path: Path) -> None:
    async def poll() -> None:
        while not path.exists():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT_S)


async def follow_a_live_run(tmp_path: Path, store: list[str]) -> None:
    """Run the scenario with the global options ``store`` (``--store URL`` or ``--sessions-root DIR``)."""
    running, go = tmp_path / "running", tmp_path / "go"
    command = f"touch {running}; while [ ! -e {go} ]; do sleep 0.02; done; echo let go"
    arguments = json.dumps({"command": command, "description": "wait"})
    script = [
        Reply([TextDelta("Waiting."), *tool_call(0, "call-1", "bash", arguments), Finish("tool_calls")]),
        text_reply("finished"),
    ]
    async with WireServer(script) as server:
        env = child_env(base_url=server.base_url, home=tmp_path / "home")
        writer = await spawn(*store, "run", "--cwd", str(tmp_path), "wait for it", env=env, cwd=tmp_path)
        assert writer.stderr is not None
        while not (line := await _line(writer.stderr)).startswith("dsh: session "):
            pass
        session_id = line.removeprefix("dsh: session ").strip()
        await _until_exists(running)
        follower = await spawn(
            *store, "sessions", "show", "--follow", "--until-idle", "--json", session_id, env=env, cwd=tmp_path
        )
        assert follower.stdout is not None
        seen = [await _line(follower.stdout)]
        assert json.loads(seen[0])["id"] == session_id
        while json.loads(seen[-1]).get("type") != "user/message":
            seen.append(await _line(follower.stdout))
        assert writer.returncode is None, "the writer finished before the follower printed its first events"
        go.touch()
        wrote, followed = await asyncio.wait_for(asyncio.gather(finish(writer), finish(follower)), WAIT_S)
        assert wrote.status == 0, wrote.stderr
        assert wrote.stdout.endswith("finished\n")
        assert followed.status == 0, followed.stderr
        lines = [*seen, *followed.stdout.splitlines(keepends=True)]
        stored = await dsh(*store, "sessions", "show", "--json", session_id, env=env, cwd=tmp_path)
    assert stored.status == 0, stored.stderr
    assert lines == stored.stdout.splitlines(keepends=True)
    events = [json.loads(line) for line in lines[1:]]
    assert [event["seq"] for event in events] == list(range(len(events)))
    assert events[-1]["type"] == "turn/end"
