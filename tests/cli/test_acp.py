"""`dsh acp` in-process over real pipes: the bridge serves, stdout stays clean, EOF or SIGTERM ends it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dsh import __version__
from dsh.cli import amain
from dsh.cli.profile import resolve_tree
from dsh.cli.serve_acp import serve
from dsh.cli.settings import Settings
from tests.cli.helpers import namespace, write_tree


@dataclass
class Pipes:
    """The three descriptors the server gets, and the test's ends of them."""

    stdin: int
    to_server: int
    stdout: int
    from_server: asyncio.StreamReader
    stderr: int
    errors: int

    def send(self, frame: dict[str, Any]) -> None:
        os.write(self.to_server, json.dumps(frame).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        line = await self.from_server.readline()
        assert line, "the server closed stdout"
        return json.loads(line)


@pytest.fixture
async def pipes() -> AsyncIterator[Pipes]:
    stdin, to_server = os.pipe()
    from_out, stdout = os.pipe()
    errors, stderr = os.pipe()
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_out, "rb", buffering=0)
    )
    yield Pipes(stdin, to_server, stdout, reader, stderr, errors)
    transport.close()
    for fd in (stdin, to_server, stdout, stderr, errors):
        try:
            os.close(fd)
        except OSError:
            pass


def demo_settings(sessions_root: Path, workspace: Path) -> Settings:
    return Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


async def test_acp_serves_until_stdin_closes_and_guards_stdout(
    pipes: Pipes, sessions_root: Path, workspace: Path
) -> None:
    settings = demo_settings(sessions_root, workspace)
    serving = asyncio.ensure_future(
        serve(resolve_tree(settings), settings, stdin=pipes.stdin, stdout=pipes.stdout, stderr=pipes.stderr)
    )
    pipes.send(INITIALIZE)
    answer = await pipes.receive()
    assert answer["result"]["agentInfo"] == {"name": "dsh", "version": __version__}
    os.write(pipes.stdout, b"stray print\n")  # the descriptor points at stderr while serving
    assert os.read(pipes.errors, 100) == b"stray print\n"
    pipes.send(
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
    )
    assert "sessionId" in (await pipes.receive())["result"]
    os.close(pipes.to_server)
    assert await serving == 0
    os.write(pipes.stdout, b"restored\n")
    line = await pipes.from_server.readline()
    while line.startswith(b"{"):  # the session's updates (its slash commands) came first
        assert json.loads(line)["method"] == "session/update"
        line = await pipes.from_server.readline()
    assert line == b"restored\n"


async def test_acp_stops_on_sigterm(pipes: Pipes, sessions_root: Path, workspace: Path) -> None:
    settings = demo_settings(sessions_root, workspace)
    serving = asyncio.ensure_future(
        serve(resolve_tree(settings), settings, stdin=pipes.stdin, stdout=pipes.stdout, stderr=pipes.stderr)
    )
    pipes.send(INITIALIZE)
    await pipes.receive()
    os.kill(os.getpid(), signal.SIGTERM)
    assert await serving == 0
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


async def test_the_command_serves_the_process_streams(
    pipes: Pipes, sessions_root: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`amain(["acp", ...])` reads sys.stdin's descriptor and writes sys.stdout's."""
    with (
        os.fdopen(os.dup(pipes.stdin), "r") as stdin,
        os.fdopen(os.dup(pipes.stdout), "w") as stdout,
        os.fdopen(os.dup(pipes.stderr), "w") as stderr,
        monkeypatch.context() as patch,
    ):
        patch.setattr("sys.stdin", stdin)
        patch.setattr("sys.stdout", stdout)
        patch.setattr("sys.stderr", stderr)
        serving = asyncio.ensure_future(
            amain(["acp", "--demo", "--sessions-root", str(sessions_root), "--cwd", str(workspace)])
        )
        pipes.send(INITIALIZE)
        assert (await pipes.receive())["id"] == 1
        os.close(pipes.to_server)
        assert await serving == 0


async def test_acp_needs_the_bridge_services(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(
        tmp_path / "tree.yml", [{"id": "sessions", "name": "sessions"}, {"id": "agents", "name": "agents"}]
    )
    assert await amain(["acp", "--config", str(tree)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"dsh: {tree} lacks the session_persistence, tools service(s) the ACP bridge needs: "
        "add the plugins that provide them\n"
    )


async def test_acp_with_bad_arguments_exits_before_serving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["acp", "--cwd", str(tmp_path / "absent")]) == 2
    assert "is not a directory" in capsys.readouterr().err


async def test_acp_without_a_key_answers_initialize_and_refuses_sessions_with_the_fix(
    pipes: Pipes, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(issue) no API key: initialize is answered, session methods fail with the configuration message, exit 2"""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with (
        os.fdopen(os.dup(pipes.stdin), "r") as stdin,
        os.fdopen(os.dup(pipes.stdout), "w") as stdout,
        os.fdopen(os.dup(pipes.stderr), "w") as stderr,
        monkeypatch.context() as patch,
    ):
        patch.setattr("sys.stdin", stdin)
        patch.setattr("sys.stdout", stdout)
        patch.setattr("sys.stderr", stderr)
        serving = asyncio.ensure_future(amain(["acp", "--cwd", str(workspace)]))
        pipes.send(INITIALIZE)
        answer = await pipes.receive()
        assert answer["result"]["protocolVersion"] == 1
        assert answer["result"]["agentInfo"] == {"name": "dsh", "version": __version__}
        new = {"cwd": str(workspace), "mcpServers": []}
        pipes.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new})
        pipes.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}})
        pipes.send({"jsonrpc": "2.0", "id": 4, "method": "authenticate", "params": {"methodId": "x"}})
        pipes.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})
        refused = [await pipes.receive() for _ in range(3)]
        by_id = {frame["id"]: frame for frame in refused}
        for request_id in (2, 3):
            error = by_id[request_id]["error"]
            assert error["code"] == -32603
            assert "DEEPSEEK_API_KEY" in error["message"]
        assert by_id[4]["result"] == {}
        os.close(pipes.to_server)
        assert await serving == 2
    assert "DEEPSEEK_API_KEY" in os.read(pipes.errors, 65536).decode()


async def test_acp_without_a_key_stops_on_sigterm(
    pipes: Pipes, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.cli.errors import CliError
    from dsh.cli.serve_acp import serve_unconfigured

    settings = Settings.from_args(namespace(cwd=str(workspace)), {})
    serving = asyncio.ensure_future(
        serve_unconfigured(CliError("set the key", 2), settings, stdin=pipes.stdin, stdout=pipes.stdout)
    )
    pipes.send(INITIALIZE)
    await pipes.receive()
    os.kill(os.getpid(), signal.SIGTERM)
    assert await serving == 2
