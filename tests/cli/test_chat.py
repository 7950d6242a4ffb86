"""`dsh chat` in-process: ui-stdio on a pipe (plain) or the rich terminal view, Ctrl-C, resume."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dsh.cli import amain
from dsh.cli.chat import CLEARED_NOTICE, chat, echoed, welcome_text
from dsh.cli.profile import Tree, profile_entries, resolve_tree
from dsh.cli.settings import Settings
from dsh.testing.wire import Reply, TextDelta, WireServer
from tests.cli.helpers import log_of, namespace, session_files, turn_ends, write_tree
from tests.cli.plugins import stall_step


class Screen(io.StringIO):
    """A text sink that lets a test wait until some text has been written to it."""

    def __init__(self, *, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty
        self.changed = asyncio.Event()

    def write(self, text: str, /) -> int:
        written = super().write(text)
        self.changed.set()
        return written

    def isatty(self) -> bool:
        return self.tty

    async def wait_for(self, marker: str) -> None:
        while marker not in self.getvalue():
            self.changed.clear()
            await self.changed.wait()


@pytest.fixture
def keyboard() -> Iterator[tuple[int, int]]:
    """A pipe standing in for the terminal's input: (read end for dsh, write end for the test)."""
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


def demo(sessions_root: Path, workspace: Path) -> tuple[Tree, Settings]:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    return resolve_tree(settings), settings


async def test_plain_chat_on_a_pipe_runs_the_ui_stdio_chat(
    keyboard: tuple[int, int], sessions_root: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read, write = keyboard
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    os.write(write, b"echo plain\n")
    os.close(write)
    tree, settings = demo(sessions_root, workspace)
    assert await chat(tree, settings, stdin=read) == 0
    out = screen.getvalue()
    assert out.startswith("dsh chat · session ")
    assert "(the keyless demo: a scripted model that runs real bash commands)" in out
    assert "[tool call] bash(" in out
    assert "[tool result] plain" in out
    assert out.endswith("\n> \n")
    (path,) = session_files(sessions_root)
    assert turn_ends(log_of(sessions_root, path.stem)[1]) == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_rich_chat_draws_cards_and_markdown(
    keyboard: tuple[int, int], sessions_root: Path, workspace: Path
) -> None:
    read, write = keyboard
    os.write(write, b"echo rich\n")
    os.close(write)
    console = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    tree, settings = demo(sessions_root, workspace)
    assert await chat(tree, settings, plain=False, stdin=read, console=console) == 0
    text = console.export_text()
    assert "dsh chat · session " in text
    assert "$ echo rich" in text
    assert "Print the given text" in text
    assert "╭─ result" in text
    assert "[tool call]" not in text


async def test_ctrl_c_while_idle_ends_the_chat_with_130(
    keyboard: tuple[int, int], sessions_root: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read, _write = keyboard
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    tree, settings = demo(sessions_root, workspace)
    chatting = asyncio.ensure_future(chat(tree, settings, stdin=read))
    await screen.wait_for("Ctrl-D quits.\n> ")
    os.kill(os.getpid(), signal.SIGINT)
    await screen.wait_for(f"\n{CLEARED_NOTICE}\n> ")
    assert not chatting.done()  # the first Ctrl-C only clears the line
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)  # one more, before the chat ends: no second ending
    assert await chatting == 130
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


async def test_a_line_typed_after_the_first_ctrl_c_disarms_it(
    keyboard: tuple[int, int], sessions_root: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C, then a line: the next Ctrl-C at the idle prompt clears again instead of quitting; rich view too."""
    read, write = keyboard
    screen = Screen(tty=True)
    console = Console(file=screen, force_terminal=True, width=80)
    tree, settings = demo(sessions_root, workspace)
    chatting = asyncio.ensure_future(chat(tree, settings, stdin=read, plain=False, console=console))
    await screen.wait_for("Ctrl-D quits.")
    os.kill(os.getpid(), signal.SIGINT)
    await screen.wait_for(CLEARED_NOTICE)
    os.write(write, b"echo again\n")
    await screen.wait_for("again")
    while not session_files(sessions_root) or not turn_ends(
        log_of(sessions_root, session_files(sessions_root)[0].stem)[1]
    ):
        await asyncio.sleep(0.01)  # polling the log until the turn has ended (its flush)
    # The log is flushed just before the agent reports idle: a Ctrl-C landing in between
    # cancels the ending turn instead, so send it again until the idle prompt answers.
    while screen.getvalue().count(CLEARED_NOTICE) < 2:
        os.kill(os.getpid(), signal.SIGINT)
        screen.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(screen.changed.wait(), timeout=0.5)
    assert not chatting.done()
    os.close(write)
    assert await chatting == 0


async def test_ctrl_c_while_running_aborts_the_turn_only(
    server: WireServer,
    keyboard: tuple[int, int],
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C mid-turn aborts it (logged `aborted`); the chat goes on until end of input."""
    read, write = keyboard
    server.add(Reply([TextDelta("partial")], ending="stall"))
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)))
    chatting = asyncio.ensure_future(chat(resolve_tree(settings), settings, stdin=read))
    os.write(write, b"hang on\n")
    await screen.wait_for("partial")
    os.kill(os.getpid(), signal.SIGINT)
    await screen.wait_for("partial\n> ")
    os.close(write)
    assert await chatting == 0
    (path,) = session_files(sessions_root)
    assert turn_ends(log_of(sessions_root, path.stem)[1]) == [
        {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}
    ]


@pytest.mark.parametrize(
    ("number", "status", "reason"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hangup")]
)
async def test_sigterm_or_sighup_mid_turn_aborts_it_and_ends_the_chat(
    server: WireServer,
    keyboard: tuple[int, int],
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    number: signal.Signals,
    status: int,
    reason: str,
) -> None:
    read, write = keyboard
    server.add(Reply([TextDelta("partial")], ending="stall"))
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)))
    chatting = asyncio.ensure_future(chat(resolve_tree(settings), settings, stdin=read))
    os.write(write, b"hang on\n")
    await screen.wait_for("partial")
    os.kill(os.getpid(), number)
    assert await chatting == status
    (path,) = session_files(sessions_root)
    assert turn_ends(log_of(sessions_root, path.stem)[1]) == [
        {"turn": 1, "reason": {"kind": "aborted", "reason": reason}}
    ]
    assert signal.getsignal(number) == signal.SIG_DFL


async def test_a_second_sigterm_ends_the_chat_without_waiting(
    tmp_path: Path, keyboard: tuple[int, int], sessions_root: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the turn cannot end (a stuck step), the second SIGTERM ends the chat at once."""
    read, write = keyboard
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    entries = [
        *profile_entries(settings),
        {"id": "stall", "name": "tests.cli.plugins.stall_step", "config": {"key": "c"}},
    ]
    tree = resolve_tree(Settings.from_args(namespace(config=str(write_tree(tmp_path / "tree.yml", entries))), {}))
    stall_step.REACHED["c"] = asyncio.Event()
    chatting = asyncio.ensure_future(chat(tree, settings, stdin=read))
    os.write(write, b"echo hi\n")
    await stall_step.REACHED["c"].wait()
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await chatting == 143


async def test_the_command_resumes_a_session_and_picks_plain_or_rich(
    keyboard: tuple[int, int],
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await amain(["run", "--demo", "--sessions-root", str(sessions_root), "--cwd", str(workspace), "echo 1"]) == 0
    capsys.readouterr()
    (path,) = session_files(sessions_root)
    read, write = keyboard
    os.close(write)
    args = ["chat", "--demo", "--sessions-root", str(sessions_root), "--resume", path.stem]
    with os.fdopen(os.dup(read), "r") as stdin, monkeypatch.context() as patch:
        patch.setattr("sys.stdin", stdin)
        plain = Screen()
        patch.setattr("sys.stdout", plain)
        assert await amain(args) == 0
        assert plain.getvalue().startswith(f"dsh chat · resumed session {path.stem} · model demo")
        drawn = Screen(tty=True)
        patch.setattr("sys.stdout", drawn)
        assert await amain(args) == 0
        assert "╭" in drawn.getvalue()
        assert "resumed session" in drawn.getvalue()


async def test_the_command_boots_a_config_tree(
    tmp_path: Path,
    keyboard: tuple[int, int],
    sessions_root: Path,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace), demo=True), {})
    tree = write_tree(tmp_path / "tree.yml", profile_entries(settings))
    read, write = keyboard
    os.close(write)
    with os.fdopen(os.dup(read), "r") as stdin, monkeypatch.context() as patch:
        patch.setattr("sys.stdin", stdin)
        screen = Screen()
        patch.setattr("sys.stdout", screen)
        assert await amain(["chat", "--config", str(tree)]) == 0
    assert screen.getvalue().startswith("dsh chat · session ")


async def test_chat_without_a_key_explains_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["chat"]) == 2
    assert "DEEPSEEK_API_KEY" in capsys.readouterr().err


def test_the_welcome_names_the_session_and_model() -> None:
    assert welcome_text("s1", None, resumed=False) == (
        "dsh chat · session s1 · model (none)\nType a message and press Enter. Ctrl-C aborts a turn; Ctrl-D quits."
    )
    assert welcome_text("s1", "m", resumed=True).startswith("dsh chat · resumed session s1 · model m\n")


async def test_lines_typed_while_the_agent_runs_are_shown_first() -> None:
    class Working:
        status = "idle"

    agent = Working()
    shown: list[str] = []

    async def typed() -> Any:
        yield "hello"
        agent.status = "running"
        yield "  steer this  "
        yield "   "

    got = [line async for line in echoed(typed(), agent, shown.append)]  # type: ignore[arg-type]
    assert got == ["hello", "  steer this  ", "   "]  # every line still goes to the chat
    assert shown == ["steer this"]
