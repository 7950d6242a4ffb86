"""The inline answerer of ``dsh chat`` (:mod:`dsh.cli.approve`), driven with real lines and the real approvals service."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dsh.cli import amain
from dsh.cli.approve import (
    AGAIN,
    AGAIN_ONCE,
    QUESTION,
    QUESTION_ONCE,
    REJECTED_AT_END,
    InlineApprover,
    describe,
    parse_answer,
    unattended_line,
)
from dsh.cli.chat import chat as run_chat
from dsh.cli.profile import Tree, profile_entries, resolve_tree
from dsh.cli.settings import Settings
from dsh.core.approval import APPROVAL_REQUEST, APPROVALS, ApprovalDecision, ApprovalRequest, ApprovalService
from dsh.kernel import AbortController, Context
from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, WireServer, text_reply, tool_call
from tests.cli.helpers import log_of, namespace, session_files, turn_ends, write_tree
from tests.cli.test_chat import Screen

AGENT = object()


class Keyboard:
    """Lines typed by the test, read by the approver's :meth:`route` (None ends the input)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()

    def type(self, *lines: str | None) -> None:
        for line in lines:
            self.queue.put_nowait(line)

    async def lines(self) -> AsyncIterator[str]:
        while (line := await self.queue.get()) is not None:
            yield line


class Chat:
    """The approver on a real context with the approvals service, its input routed like the chat's."""

    def __init__(self, ctx: Context, *, interactive: bool = True) -> None:
        self.ctx = ctx
        self.shown: list[str] = []
        self.errors = io.StringIO()
        self.keyboard = Keyboard()
        self.approver = InlineApprover(AGENT, self.shown.append, interactive=interactive, errors=self.errors)
        ctx.on(APPROVAL_REQUEST, self.approver.on_request)
        self.chat_lines: list[str] = []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for line in self.approver.route(self.keyboard.lines()):
            self.chat_lines.append(line)

    async def ask(self, *, agent: object = AGENT, grant: str = "bash(rm*)", **extra: Any) -> ApprovalDecision:
        request = ApprovalRequest(
            agent=agent,
            tool_name="bash",
            call_id="c1",
            arguments={"command": "rm -rf build"},
            reason="run a command the sandbox does not confine",
            grant=grant,
            **extra,
        )
        return await self.ctx[APPROVALS].request(request)

    async def question(self, count: int = 1) -> None:
        """Wait until ``count`` questions have been put."""
        while sum(1 for text in self.shown if text in (QUESTION, QUESTION_ONCE)) < count:
            await asyncio.sleep(0)


@pytest.fixture
async def ctx() -> AsyncIterator[Context]:
    root = Context()
    await root.plugin(ApprovalService)
    yield root
    await root.dispose()


@pytest.fixture
async def chat(ctx: Context) -> AsyncIterator[Chat]:
    chat = Chat(ctx)
    yield chat
    chat.keyboard.type(None)
    await chat.reader


@pytest.mark.parametrize(
    ("line", "always", "decision"),
    [
        ("y", True, ApprovalDecision(outcome="allowed-once")),
        (" YES ", False, ApprovalDecision(outcome="allowed-once")),
        ("a", True, ApprovalDecision(outcome="allowed-always")),
        ("always", False, None),
        ("n", True, ApprovalDecision(outcome="rejected")),
        ("no   use the test database ", True, ApprovalDecision(outcome="rejected", message="use the test database")),
        ("", True, None),
        ("maybe", True, None),
    ],
)
def test_answers(line: str, always: bool, decision: ApprovalDecision | None) -> None:
    assert parse_answer(line, always=always) == decision


def test_the_request_is_described_with_its_arguments_shortened() -> None:
    request = ApprovalRequest(
        agent=None, tool_name="write", call_id="c1", arguments={"text": "x" * 500}, reason="why", grant="write"
    )
    lines = describe(request).split("\n")
    assert lines[0] == "write needs your approval: why"
    assert lines[1].endswith("…")
    assert len(lines[1]) == 2 + 400 + 1
    assert lines[2] == "  (always allows write for the rest of this session)"
    odd = ApprovalRequest(agent=None, tool_name="t", call_id=None, arguments={1, 2}, reason="r", grant="")
    assert describe(odd) == "t needs your approval: r\n  {1, 2}"
    assert "--yes" in unattended_line(odd)


async def test_yes_allows_once_and_the_line_does_not_reach_the_chat(chat: Chat) -> None:
    answer = asyncio.ensure_future(chat.ask())
    await chat.question()
    assert chat.approver.asking
    chat.keyboard.type("y", "and this steers the agent")
    assert await answer == ApprovalDecision(outcome="allowed-once")
    assert not chat.approver.asking
    while not chat.chat_lines:
        await asyncio.sleep(0)
    assert chat.chat_lines == ["and this steers the agent"]
    assert chat.shown[0].startswith("\nbash needs your approval: run a command the sandbox does not confine\n")
    assert chat.shown[1] == QUESTION


async def test_a_wrong_answer_asks_again_then_no_with_a_message_rejects(chat: Chat) -> None:
    answer = asyncio.ensure_future(chat.ask())
    await chat.question()
    chat.keyboard.type("hmm")
    await chat.question(2)
    chat.keyboard.type("n try the dry run first")
    assert await answer == ApprovalDecision(outcome="rejected", message="try the dry run first")
    assert chat.shown[2:] == [f"{AGAIN}\n", QUESTION]


async def test_without_a_grant_always_is_not_offered(chat: Chat) -> None:
    answer = asyncio.ensure_future(chat.ask(grant=""))
    await chat.question()
    chat.keyboard.type("a")
    await chat.question(2)
    chat.keyboard.type("yes")
    assert await answer == ApprovalDecision(outcome="allowed-once")
    assert chat.shown[1:] == [QUESTION_ONCE, f"{AGAIN_ONCE}\n", QUESTION_ONCE]


async def test_always_allows_and_grants(chat: Chat) -> None:
    answer = asyncio.ensure_future(chat.ask())
    await chat.question()
    chat.keyboard.type("a")
    assert await answer == ApprovalDecision(outcome="allowed-always")


async def test_requests_are_asked_one_at_a_time(chat: Chat) -> None:
    first = asyncio.ensure_future(chat.ask())
    second = asyncio.ensure_future(chat.ask())
    await chat.question()
    for _ in range(5):
        await asyncio.sleep(0)
    assert chat.shown.count(QUESTION) == 1
    chat.keyboard.type("n")
    await chat.question(2)
    chat.keyboard.type("y")
    assert (await first).outcome == "rejected"
    assert (await second).outcome == "allowed-once"


async def test_a_cancelled_turn_cancels_the_question(chat: Chat) -> None:
    controller = AbortController()
    answer = asyncio.ensure_future(chat.ask(signal=controller.signal))
    await chat.question()
    controller.abort("interrupted")
    assert (await answer).outcome == "cancelled"
    assert not chat.approver.asking
    chat.keyboard.type("y")  # the chat gets it again
    while not chat.chat_lines:
        await asyncio.sleep(0)
    assert chat.chat_lines == ["y"]


async def test_end_of_input_rejects_the_open_question_and_every_later_one(chat: Chat) -> None:
    answer = asyncio.ensure_future(chat.ask())
    await chat.question()
    chat.keyboard.type(None)
    assert await answer == REJECTED_AT_END
    assert await chat.ask() == REJECTED_AT_END


async def test_other_agents_are_delegated(chat: Chat) -> None:
    assert (await chat.ask(agent=object())).outcome == "unavailable"
    assert chat.shown == []


async def test_without_a_terminal_nothing_is_asked_and_stderr_says_why(ctx: Context) -> None:
    chat = Chat(ctx, interactive=False)
    assert (await chat.ask()).outcome == "unavailable"
    assert chat.shown == []
    assert (
        chat.errors.getvalue()
        == unattended_line(
            ApprovalRequest(
                agent=AGENT,
                tool_name="bash",
                call_id="c1",
                arguments={},
                reason="run a command the sandbox does not confine",
                grant="",
            )
        )
        + "\n"
    )
    chat.keyboard.type(None)
    await chat.reader


async def test_the_unattended_line_goes_to_stderr_by_default(ctx: Context, capsys: pytest.CaptureFixture[str]) -> None:
    approver = InlineApprover(AGENT, print, interactive=False)
    ctx.on(APPROVAL_REQUEST, approver.on_request)
    request = ApprovalRequest(agent=AGENT, tool_name="write", call_id="c1", arguments={}, reason="r", grant="")
    assert (await ctx[APPROVALS].request(request)).outcome == "unavailable"
    assert "dsh: write needs approval (r)" in capsys.readouterr().err


# ------------------------------------------------------------- dsh chat in-process, stdin a pseudo-terminal
@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal: (master for the test's keystrokes, slave as dsh's stdin)."""
    master, slave = os.openpty()
    yield master, slave
    for fd in (master, slave):
        with contextlib.suppress(OSError):
            os.close(fd)


def read_only_tree(tmp_path: Path, sessions_root: Path, workspace: Path) -> tuple[Tree, Settings]:
    """The built-in profile with the permissions plugin in read-only mode: every write is asked."""
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {})
    entries = [entry for entry in profile_entries(settings) if entry["name"] != "permissions"]
    entries.append({"id": "permissions", "name": "permissions", "config": {"mode": "read-only"}})
    path = write_tree(tmp_path / "tree.yml", entries)
    settings = Settings.from_args(namespace(config=str(path), sessions_root=str(sessions_root), cwd=str(workspace)), {})
    return resolve_tree(settings), settings


def write_call(path: Path) -> Reply:
    arguments = json.dumps({"file_path": str(path), "content": "written\n"})
    return Reply([*tool_call(0, "call_w", "write", arguments), WireFinish("tool_calls")])


def decided(sessions_root: Path) -> list[str]:
    (path,) = session_files(sessions_root)
    events = log_of(sessions_root, path.stem)[1]
    return [event["data"]["outcome"] for event in events if event["type"] == "approval/decided"]


@pytest.mark.parametrize("plain", [True, False])
async def test_chat_asks_on_the_terminal_and_yes_runs_the_write(
    server: WireServer,
    terminal: tuple[int, int],
    tmp_path: Path,
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    plain: bool,
) -> None:
    master, slave = terminal
    target = workspace / "out.txt"
    server.add(write_call(target))
    server.add(text_reply("done"))
    tree, settings = read_only_tree(tmp_path, sessions_root, workspace)
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    console = Console(file=screen, force_terminal=True, width=160)
    chatting = asyncio.ensure_future(run_chat(tree, settings, stdin=slave, plain=plain, console=console))
    os.write(master, b"write the file\n")
    await screen.wait_for(QUESTION)
    assert "write needs your approval" in screen.getvalue()
    assert not target.exists()
    os.write(master, b"y\n")
    await screen.wait_for("done")
    os.write(master, b"\x04")  # Ctrl-D: end of input
    assert await chatting == 0
    assert target.read_text() == "written\n"
    assert decided(sessions_root) == ["allowed-once"]


async def test_ctrl_c_at_the_question_cancels_the_turn_and_the_write(
    server: WireServer,
    terminal: tuple[int, int],
    tmp_path: Path,
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    master, slave = terminal
    target = workspace / "out.txt"
    server.add(write_call(target))
    tree, settings = read_only_tree(tmp_path, sessions_root, workspace)
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    chatting = asyncio.ensure_future(run_chat(tree, settings, stdin=slave))
    os.write(master, b"write the file\n")
    await screen.wait_for(QUESTION)
    os.kill(os.getpid(), signal.SIGINT)
    await screen.wait_for("> ")
    os.write(master, b"\x04")
    assert await chatting == 0
    assert not target.exists()
    assert decided(sessions_root) == ["cancelled"]
    (path,) = session_files(sessions_root)
    assert turn_ends(log_of(sessions_root, path.stem)[1]) == [
        {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}
    ]


async def test_chat_on_a_pipe_asks_nothing_and_says_which_flag_allows_the_call(
    server: WireServer,
    tmp_path: Path,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = workspace / "out.txt"
    server.add(write_call(target))
    server.add(text_reply("could not"))
    tree, settings = read_only_tree(tmp_path, sessions_root, workspace)
    read, write = os.pipe()
    os.write(write, b"write the file\n")
    os.close(write)
    try:
        assert await run_chat(tree, settings, stdin=read) == 0
    finally:
        os.close(read)
    assert not target.exists()
    assert decided(sessions_root) == ["unavailable"]
    captured = capsys.readouterr()
    assert QUESTION not in captured.out
    assert "dsh: write needs approval (" in captured.err
    assert "run with --yes" in captured.err


async def test_chat_with_yes_allows_without_asking(
    server: WireServer,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = workspace / "out.txt"
    server.add(write_call(target))
    server.add(text_reply("written"))
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)))
    flags = argparse.Namespace(permission_mode="read-only", approval_policy=None, yes=True)
    read, write = os.pipe()
    os.write(write, b"write the file\n")
    os.close(write)
    try:
        assert await run_chat(resolve_tree(settings), settings, stdin=read, flags=flags) == 0
    finally:
        os.close(read)
    assert target.read_text() == "written\n"
    assert decided(sessions_root) == ["allowed-once"]
    assert "needs approval" not in capsys.readouterr().err


async def test_a_permission_flag_needs_the_permissions_plugin(
    tmp_path: Path,
    sessions_root: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    entries = [entry for entry in profile_entries(settings) if entry["name"] not in ("permissions", "plan-mode")]
    tree = write_tree(tmp_path / "tree.yml", entries)
    read, write = os.pipe()
    os.close(write)
    with os.fdopen(read, "r") as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        assert await amain(["chat", "--config", str(tree), "--permission-mode", "read-only"]) == 2
    assert "need the permissions plugin" in capsys.readouterr().err
