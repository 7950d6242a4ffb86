"""The permissions gate over the real file and bash tools: modes, policies, rules, grants, plan mode."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.core.approval import PERMISSIONS, ApprovalDecision, ApprovalRequest
from dsh.core.tools import TOOLS
from dsh.kernel import AbortController, ConfigError
from tests.plugins.permissions.conftest import CONFINED, Stack, always, reply, text_of

Make = Callable[..., Awaitable[Stack]]


async def test_read_only_tools_run_in_every_mode_and_writes_need_workspace_write(make: Make) -> None:
    s = await make({"mode": "read-only"})
    assert all(s.root[TOOLS].get(name).read_only for name in ("read", "glob", "grep"))  # type: ignore[union-attr]
    (s.ws / "a.txt").write_text("hello\n")
    assert not (await s.call("read", {"file_path": "a.txt"})).is_error
    assert not (await s.call("grep", {"pattern": "hello"})).is_error
    assert not (await s.call("look", {})).is_error
    result = await s.call("write", {"file_path": "b.txt", "content": "x"})
    assert result.is_error
    assert result.error.code == "PERMISSION_DENIED"  # type: ignore[union-attr]
    assert "Nobody was there to approve this call (write b.txt: changing files needs workspace-write mode" in (
        text_of(result)
    )
    assert not (s.ws / "b.txt").exists()
    assert s.decided() == ["unavailable"]
    assert s.asked[0].needs == "workspace-write"
    assert s.asked[0].grant == "write"
    await s.set_mode(mode="workspace-write")
    assert not (await s.call("write", {"file_path": "b.txt", "content": "x"})).is_error
    assert (s.ws / "b.txt").read_text() == "x"
    assert len(s.asked) == 1


async def test_outside_paths_are_asked_and_always_grants_the_directory(make: Make, tmp_path: Path) -> None:
    s = await make()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("secret\n")
    s.answer = always()
    assert "secret" in text_of(await s.call("read", {"file_path": str(outside / "x.txt")}))
    assert s.asked[0].reason == f"read: read a path outside the workspace: {outside / 'x.txt'}"
    assert s.asked[0].grant == f"read({outside}/*)"
    assert s.asked[0].needs == "full-access"
    s.answer = None
    (outside / "y.txt").write_text("more\n")
    assert "more" in text_of(await s.call("read", {"file_path": str(outside / "y.txt")}))
    assert len(s.asked) == 1  # granted for the session
    assert s.root[PERMISSIONS].state(s.agent).grants == (f"read({outside}/*)",)
    result = await s.call("write", {"file_path": str(outside / "z.txt"), "content": "no"})
    assert result.is_error
    assert "use a path outside the workspace" in text_of(result)
    assert not (outside / "z.txt").exists()


async def test_full_access_reaches_outside_without_asking(make: Make, tmp_path: Path) -> None:
    s = await make({"mode": "full-access"})
    target = tmp_path / "out.txt"
    assert not (await s.call("write", {"file_path": str(target), "content": "ok"})).is_error
    assert target.read_text() == "ok"
    assert not (await s.call("probe", {})).is_error
    assert s.asked == []


async def test_unknown_tools_need_full_access(make: Make) -> None:
    s = await make()
    s.answer = reply("rejected", "not now")
    result = await s.call("probe", {"x": 1})
    assert s.probe_runs == []
    assert text_of(result) == (
        "Error: The user rejected this call (probe: a tool that may change anything needs full-access mode "
        "(the session is workspace-write)). The user says: not now. It did not run."
    )
    s.answer = reply("allowed-once")
    assert not (await s.call("probe", {"x": 2})).is_error
    assert s.probe_runs == [{"x": 2}]
    assert s.decided() == ["rejected", "allowed-once"]
    assert (await s.call("nope", {})).error.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]


@pytest.mark.parametrize(("policy", "mode", "runs"), [("auto", "workspace-write", True), ("auto", "read-only", False)])
async def test_auto_policy_decides_by_mode(make: Make, policy: str, mode: str, runs: bool) -> None:
    s = await make({"mode": mode, "policy": policy})
    result = await s.call("bash", {"command": "echo hi > f.txt"})
    assert result.is_error is not runs
    assert (s.ws / "f.txt").exists() is runs
    probe = await s.call("probe", {})
    assert text_of(probe).startswith(f"Error: not allowed in {mode} mode: probe:")
    assert s.asked == []


async def test_never_ask_refuses_without_asking(make: Make) -> None:
    s = await make({"mode": "read-only", "policy": "never-ask"})
    result = await s.call("edit", {"file_path": "a.txt", "old_string": "a", "new_string": "b"})
    assert text_of(result).startswith("Error: not allowed in read-only mode: edit a.txt")
    assert s.asked == []
    assert s.agent.session.events == []


async def test_unsandboxed_bash_is_asked_and_says_so_once(make: Make, caplog: pytest.LogCaptureFixture) -> None:
    s = await make({"mode": "read-only"})
    with caplog.at_level("WARNING"):
        first = await s.call("bash", {"command": "echo one > one.txt"})
        await s.call("bash", {"command": "echo two > two.txt"})
    assert "Nobody was there to approve this call (run a command bash cannot be sandboxed for" in text_of(first)
    assert not (s.ws / "one.txt").exists()
    assert not (s.ws / "two.txt").exists()
    assert [r.message for r in caplog.records].count(
        "bash is not sandboxed here (no sandbox on this test host): bash calls outside full-access mode are asked"
    ) == 1
    assert [r.grant for r in s.asked] == ["bash(echo one*)", "bash(echo two*)"]


async def test_confined_bash_runs_without_asking(make: Make) -> None:
    s = await make({"mode": "read-only"}, support=CONFINED)
    result = await s.call("bash", {"command": "echo confined"})
    assert "confined" in text_of(result)
    assert s.asked == []
    await s.set_mode(mode="workspace-write", plan=True)
    assert "in plan" in text_of(await s.call("bash", {"command": "echo in plan"}))


async def test_rules_allow_and_deny_wins(make: Make) -> None:
    s = await make(
        {"mode": "read-only", "allow": ["bash(echo *)", "probe", "write(notes/*)"], "deny": ["bash(*rm *)", "look"]}
    )
    assert "hi" in text_of(await s.call("bash", {"command": "echo hi"}))
    assert not (await s.call("probe", {})).is_error
    assert not (await s.call("write", {"file_path": "notes/n.md", "content": "n"})).is_error
    denied = await s.call("bash", {"command": "echo x; rm -rf y"})
    assert text_of(denied) == "Error: bash is denied by the permission rule 'bash(*rm *)'. It did not run."
    assert text_of(await s.call("look", {})).startswith("Error: look is denied")
    compound = await s.call("bash", {"command": "echo x > y.txt"})  # an operator: the allow rule does not apply
    assert compound.is_error
    assert not (s.ws / "y.txt").exists()
    assert len(s.asked) == 1


async def test_plan_mode_allows_reading_only(make: Make) -> None:
    s = await make()
    await s.set_mode(plan=True)
    (s.ws / "a.txt").write_text("a\n")
    assert not (await s.call("read", {"file_path": "a.txt"})).is_error
    result = await s.call("write", {"file_path": "a.txt", "content": "b"})
    assert "cannot run in plan mode" in text_of(result)
    assert "exit_plan_mode" in text_of(result)
    assert "cannot run in plan mode" in text_of(await s.call("bash", {"command": "ls"}))  # no sandbox here
    assert (s.ws / "a.txt").read_text() == "a\n"
    assert s.asked == []


async def test_cancelling_the_call_cancels_its_pending_approval(make: Make) -> None:
    s = await make({"mode": "read-only"})
    started = asyncio.Event()

    async def hang(request: ApprovalRequest) -> ApprovalDecision:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover - the wait above never ends

    s.answer = hang
    controller = AbortController()
    pending = asyncio.ensure_future(s.call("write", {"file_path": "c.txt", "content": "x"}, controller.signal))
    await started.wait()
    controller.abort("cancelled")
    result = await pending
    assert "The approval of this call was cancelled" in text_of(result)
    assert s.decided() == ["cancelled"]
    assert not (s.ws / "c.txt").exists()


async def test_read_only_calls_cannot_write_and_outside_calls_stay_fenced(make: Make, tmp_path: Path) -> None:
    s = await make()
    fs_write: list[str] = []

    async def sneaky(args: Any, execution: Any) -> Any:
        from dsh.core.fs import FS

        fs = s.root[FS]
        fs_write.append("tried")
        await fs.write_text(fs.workspace(str(s.ws)), "sneak.txt", "x")
        return ()

    from dsh.core.tools import ToolDefinition

    s.root[TOOLS].register(
        ToolDefinition(name="sneak", description="s", parameters={"type": "object"}, execute=sneaky, read_only=True)
    )
    result = await s.call("sneak", {})
    assert "was not written: this call was allowed to read only" in text_of(result)
    assert not (s.ws / "sneak.txt").exists()
    other = tmp_path / "other.txt"
    other.write_text("o")
    # a grep whose path is inside, reaching nothing outside: fine; outside without a grant: asked, refused
    assert (await s.call("grep", {"pattern": "o", "path": str(tmp_path)})).is_error


async def test_bad_rules_fail_at_load(make: Make) -> None:
    with pytest.raises(ConfigError, match=r"is not TOOL or TOOL\(PATTERN\)"):
        await make({"allow": ["bash()"]})


async def test_without_a_bash_executor_a_bash_tool_is_never_confined(make: Make) -> None:
    s = await make({"mode": "read-only"}, bash=False)
    runs: list[str] = []

    async def fake_bash(args: Any, execution: Any) -> Any:
        runs.append(args["command"])
        return ()

    from dsh.core.tools import ToolDefinition

    s.root[TOOLS].register(
        ToolDefinition(name="bash", description="b", parameters={"type": "object"}, execute=fake_bash)
    )
    assert (await s.call("bash", {"command": "ls"})).is_error
    await s.set_mode(plan=True)
    assert "plan mode" in text_of(await s.call("bash", {"command": "ls"}))
    assert runs == []
    assert [r.grant for r in s.asked] == ["bash(ls*)"]


async def test_an_unreadable_grant_grants_nothing(make: Make) -> None:
    from dsh.core.approval import ApprovalDecidedData, ApprovalDecidedEvent

    s = await make()
    s.agent.session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="allowed-always", grant="(("))
    s.agent.session.append(ApprovalDecidedEvent, ApprovalDecidedData(outcome="allowed-always", grant="probe"))
    assert not (await s.call("probe", {})).is_error
    assert not (await s.call("probe", {})).is_error  # the parsed grant is reused
    assert s.asked == []


async def test_a_bad_path_is_the_tools_own_error(make: Make) -> None:
    s = await make()
    result = await s.call("read", {"file_path": ""})
    assert result.error.code == "INVALID_PATH"  # type: ignore[union-attr]
    assert s.asked == []


async def test_outside_a_tool_call_fs_access_is_left_to_the_fs(make: Make, tmp_path: Path) -> None:
    from dsh.core.fs import FS, FsError

    s = await make({"mode": "full-access"})
    fs = s.root[FS]
    with pytest.raises(FsError, match="outside the workspace"):
        fs.resolve(fs.workspace(str(s.ws)), str(tmp_path / "x"))


async def test_a_call_cleared_for_one_outside_path_reaches_no_other(make: Make, tmp_path: Path) -> None:
    from dsh.core.fs import FS
    from dsh.core.tools import ToolDefinition

    s = await make()
    (tmp_path / "a").mkdir()
    seen: list[str] = []

    async def reach(args: Any, execution: Any) -> Any:
        fs = s.root[FS]
        workspace = fs.workspace(str(s.ws))
        seen.append(fs.resolve(workspace, args["path"]))
        fs.resolve(workspace, str(tmp_path / "b"))  # not the cleared path: refused
        return ()

    s.root[TOOLS].register(
        ToolDefinition(name="reach", description="r", parameters={"type": "object"}, execute=reach, read_only=True)
    )
    s.answer = reply("allowed-once")
    result = await s.call("reach", {"path": str(tmp_path / "a")})
    assert seen == [str(tmp_path / "a")]
    assert "outside the workspace" in text_of(result)
    assert s.decided() == ["allowed-once"]


async def test_the_background_task_tools_are_read_only(make: Make) -> None:
    s = await make({"mode": "read-only"})
    for name in ("bash_output", "bash_kill"):
        assert s.root[TOOLS].get(name).read_only  # type: ignore[union-attr]
        result = await s.call(name, {"task_id": "nope"})
        assert "PERMISSION_DENIED" not in repr(result.error)
    assert s.asked == []


async def test_only_declared_file_writers_get_workspace_write(make: Make) -> None:
    from dsh.core.tools import ToolDefinition

    s = await make()
    assert s.root[TOOLS].get("write").fs_writes  # type: ignore[union-attr]
    assert s.root[TOOLS].get("edit").fs_writes  # type: ignore[union-attr]
    runs: list[Any] = []

    async def body(args: Any, execution: Any) -> Any:
        runs.append(args)
        return ()

    for name, fs_writes in (("mcp__files__delete", False), ("scribble", True)):
        s.root[TOOLS].register(
            ToolDefinition(name=name, description="d", parameters={"type": "object"}, execute=body, fs_writes=fs_writes)
        )
    refused = await s.call("mcp__files__delete", {"path": "notes.txt"})
    assert "a tool that may change anything needs full-access mode" in text_of(refused)
    assert not (await s.call("scribble", {})).is_error
    assert runs == [{}]
    await s.set_mode(mode="read-only")
    assert "scribble: changing files needs workspace-write mode" in text_of(await s.call("scribble", {}))
