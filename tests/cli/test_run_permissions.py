"""`dsh run` under the permissions, in real subprocesses against the wire server: modes, --yes, exit 5,
resume and fork keeping the session's mode."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dsh.cli import amain
from dsh.cli.agent import EXIT_FAILED, EXIT_USAGE
from dsh.cli.permission_flags import EXIT_REFUSED, Refusals
from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings
from dsh.testing.wire import Reply, TextDelta, WireServer, api_error, text_reply, tool_call
from tests.cli.helpers import child_env, dsh, log_of, namespace, session_id_of, write_tree

PROJECT = Path(__file__).resolve().parents[2]


def call(name: str, arguments: dict[str, Any], call_id: str = "call-1") -> Reply:
    return Reply([TextDelta("Trying."), *tool_call(0, call_id, name, json.dumps(arguments))])


def env_for(server: WireServer, tmp_path: Path) -> dict[str, str]:
    env = child_env(base_url=server.base_url, home=tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    return env


def run(root: Path, cwd: Path, *rest: str) -> list[str]:
    return ["run", "--sessions-root", str(root), "--cwd", str(cwd), *rest]


def events_of(root: Path, stderr: str, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in log_of(root, session_id_of(stderr))[1] if e["type"] == kind]


def refusal_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "refused" in line and line.startswith("dsh: ")]


async def test_read_only_refuses_a_write_and_exits_5(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path
) -> None:
    server.add(call("write", {"file_path": "new.txt", "content": "x"}), text_reply("Could not write."))
    done = await dsh(
        *run(sessions_root, workspace, "--permission-mode", "read-only", "write new.txt"),
        env=env_for(server, tmp_path),
        cwd=workspace,
    )
    assert done.status == EXIT_REFUSED, done.stderr
    assert not (workspace / "new.txt").exists()
    assert refusal_lines(done.stderr) == [
        "dsh: 1 tool call was refused: write new.txt: changing files needs workspace-write mode (the session is "
        "read-only); nobody can approve calls in dsh run: --permission-mode workspace-write allows it, --yes "
        "allows every call that would be asked"
    ]
    (mode,) = events_of(sessions_root, done.stderr, "permission/mode")
    assert mode == {"mode": "read-only", "policy": "ask", "plan": False}
    (asked,) = events_of(sessions_root, done.stderr, "approval/asked")
    assert asked["toolName"] == "write"
    assert asked["callId"] == "call-1"
    (decided,) = events_of(sessions_root, done.stderr, "approval/decided")
    assert decided == {"callId": "call-1", "outcome": "unavailable"}
    (result,) = events_of(sessions_root, done.stderr, "tool/result")
    assert result["error"]["code"] == "PERMISSION_DENIED"
    assert "Nobody was there to approve this call" in result["content"][0]["text"]
    # the model never sees approval events: its next request holds the refused result and nothing else new
    request = server.requests[-1].json
    assert all("approval" not in json.dumps(message) for message in request["messages"])


async def test_bash_writes_are_blocked_in_read_only_by_approvals_without_a_sandbox(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {})
    entries = profile_entries(settings)
    for entry in entries:
        if entry["name"] == "bash-local":
            entry["name"] = "tests.cli.plugins.unsandboxed_bash:UnsandboxedBash"
    tree = write_tree(tmp_path / "tree.yml", entries)
    server.add(call("bash", {"command": "echo x > out.txt"}), text_reply("Blocked."))
    done = await dsh(
        "--config",
        str(tree),
        *run(sessions_root, workspace, "--permission-mode", "read-only", "write out.txt with bash"),
        env=env_for(server, tmp_path),
        cwd=workspace,
    )
    assert done.status == EXIT_REFUSED, done.stderr
    assert not (workspace / "out.txt").exists()
    assert "bash is not sandboxed here (test host: no sandbox)" in done.stderr
    assert "--permission-mode full-access allows it" in done.stderr
    assert [d["outcome"] for d in events_of(sessions_root, done.stderr, "approval/decided")] == ["unavailable"]


async def test_bash_writes_are_blocked_in_read_only_by_whatever_enforces_it_here(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path
) -> None:
    """With this host's real probe: the sandbox blocks the write, or (none working) the approvals do."""
    server.add(call("bash", {"command": "echo x > out.txt"}), text_reply("Blocked."))
    done = await dsh(
        *run(sessions_root, workspace, "--permission-mode", "read-only", "write out.txt with bash"),
        env=env_for(server, tmp_path),
        cwd=workspace,
    )
    assert not (workspace / "out.txt").exists()
    decided = events_of(sessions_root, done.stderr, "approval/decided")
    if decided:  # no sandbox works on this host: the approvals refused it
        assert done.status == EXIT_REFUSED
    else:  # the sandbox confined the command: it ran and failed to write
        assert done.status == 0, done.stderr
        (result,) = events_of(sessions_root, done.stderr, "tool/result")
        said = result["content"][0]["text"]
        assert "out.txt: Read-only file system" in said or "out.txt: Permission denied" in said  # bwrap, Landlock
        assert said.endswith("[exit code: 1]")


async def test_yes_allows_what_would_be_asked(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path
) -> None:
    server.add(call("write", {"file_path": "new.txt", "content": "x"}), text_reply("Written."))
    done = await dsh(
        *run(sessions_root, workspace, "--permission-mode", "read-only", "--yes", "write new.txt"),
        env=env_for(server, tmp_path),
        cwd=workspace,
    )
    assert done.status == 0, done.stderr
    assert (workspace / "new.txt").read_text() == "x"
    assert [d["outcome"] for d in events_of(sessions_root, done.stderr, "approval/decided")] == ["allowed-once"]
    assert refusal_lines(done.stderr) == []


async def test_resume_and_fork_keep_the_sessions_mode(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path
) -> None:
    env = env_for(server, tmp_path)
    server.add(text_reply("Noted."))
    first = await dsh(*run(sessions_root, workspace, "--permission-mode", "read-only", "hello"), env=env, cwd=workspace)
    assert first.status == 0, first.stderr
    session = session_id_of(first.stderr)
    write = {"file_path": "new.txt", "content": "x"}
    server.add(call("write", write), text_reply("No."))
    resumed = await dsh(*run(sessions_root, workspace, "--resume", session, "write it"), env=env, cwd=workspace)
    assert resumed.status == EXIT_REFUSED, resumed.stderr
    server.add(call("write", write), text_reply("No."))
    forked = await dsh(*run(sessions_root, workspace, "--fork", session, "write it"), env=env, cwd=workspace)
    assert forked.status == EXIT_REFUSED, forked.stderr
    assert session_id_of(forked.stderr) != session
    assert not (workspace / "new.txt").exists()
    server.add(call("write", write), text_reply("Yes."))
    widened = await dsh(
        *run(sessions_root, workspace, "--resume", session, "--permission-mode", "workspace-write", "write it"),
        env=env,
        cwd=workspace,
    )
    assert widened.status == 0, widened.stderr
    assert (workspace / "new.txt").read_text() == "x"
    modes = [e["mode"] for e in events_of(sessions_root, widened.stderr, "permission/mode")]
    assert modes == ["read-only", "workspace-write"]


# ------------------------------------------------------------------- in process
async def test_a_policy_refusal_names_the_flags_in_process(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path, capsys: Any
) -> None:
    outside = tmp_path / "outside.txt"
    server.add(call("write", {"file_path": str(outside), "content": "x"}), text_reply("No."))
    status = await amain(run(sessions_root, workspace, "--approval-policy", "never-ask", "write outside"))
    assert status == EXIT_REFUSED
    assert not outside.exists()
    err = capsys.readouterr().err
    assert (
        "dsh: 1 tool call was refused by the permissions (workspace-write mode); --permission-mode, "
        "--approval-policy and the `permissions: {allow: [...]}` rules of the settings file say what may run"
    ) in err


async def test_a_failed_turn_keeps_its_own_status_after_a_refusal(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: Any
) -> None:
    server.add(
        call("write", {"file_path": "a.txt", "content": "x"}),
        call("write", {"file_path": "b.txt", "content": "x"}, "call-2"),
        api_error(401, "Authentication Fails", "authentication_error"),
    )
    status = await amain(run(sessions_root, workspace, "--permission-mode", "read-only", "write"))
    assert status == EXIT_FAILED
    assert "2 tool calls were refused: write a.txt" in capsys.readouterr().err


async def test_the_flags_need_the_permissions_plugin(
    server: WireServer, tmp_path: Path, workspace: Path, capsys: Any
) -> None:
    settings = Settings.from_args(namespace(sessions_root=str(tmp_path / "s"), cwd=str(workspace)), {})
    entries = [e for e in profile_entries(settings) if e["name"] not in ("permissions", "plan-mode")]
    tree = write_tree(tmp_path / "tree.yml", entries)
    status = await amain(["--config", str(tree), *run(tmp_path / "s", workspace, "--yes", "hi")])
    assert status == EXIT_USAGE
    assert "need the permissions plugin, which the tree does not load" in capsys.readouterr().err


async def test_report_names_plan_mode_and_an_unknown_mode() -> None:
    from dsh.core.approval import PermissionService, PermissionState
    from dsh.core.llm import text
    from dsh.core.session import Session, ToolErrorInfo, ToolResultData, ToolResultEvent
    from dsh.kernel import Context

    class Agent:
        session = Session("s")

    agent = Agent()
    agent.session.append(
        ToolResultEvent,
        ToolResultData(
            turn=1,
            step=1,
            call_id="c",
            content=(text("no"),),
            is_error=True,
            error=ToolErrorInfo(name="PermissionDeniedError", code="PERMISSION_DENIED"),
        ),
    )
    agent.session.append(
        ToolResultEvent,
        ToolResultData(turn=1, step=1, call_id="d", content=(text("ok"),), is_error=False),
    )
    bare = Context()
    assert Refusals(bare).report(agent, 0) == Refusals(bare).message(1, "unknown")
    assert Refusals(bare).report(agent, 1) is None
    await bare.dispose()

    class Plugin:
        def __init__(self, ctx: Context, config: object = None) -> None:
            PermissionService(ctx, PermissionState(plan=True))

    root = Context()
    await root.plugin(Plugin)
    assert "(plan mode)" in (Refusals(root).report(agent, 0) or "")
    await root.dispose()


async def test_refusals_remember_only_unanswered_requests() -> None:
    from dsh.core.approval import (
        APPROVAL_REQUEST,
        APPROVALS,
        ApprovalDecision,
        ApprovalOutcome,
        ApprovalRequest,
        ApprovalService,
    )
    from dsh.kernel import Context

    root = Context()
    await root.plugin(ApprovalService)
    refusals = Refusals(root)
    answers: list[ApprovalOutcome] = ["allowed-once"]

    async def answer(request: ApprovalRequest, next: Any) -> ApprovalDecision:
        return ApprovalDecision(outcome=answers.pop()) if answers else await next()

    root.on(APPROVAL_REQUEST, answer)
    request = ApprovalRequest(agent=None, tool_name="t", call_id=None, arguments={}, reason="r", grant="t")
    assert (await root[APPROVALS].request(request)).outcome == "allowed-once"
    assert refusals.unanswered == []
    assert (await root[APPROVALS].request(request)).outcome == "unavailable"
    assert refusals.unanswered == [request]
    await root.dispose()


async def test_yes_and_no_flags_in_process(
    server: WireServer, sessions_root: Path, workspace: Path, capsys: Any
) -> None:
    outside = workspace.parent / "y.txt"
    server.add(call("write", {"file_path": str(outside), "content": "y"}), text_reply("Done."), text_reply("Hi."))
    assert await amain(run(sessions_root, workspace, "--yes", "write outside")) == 0
    assert outside.read_text() == "y"
    assert await amain(run(sessions_root, workspace, "hi")) == 0
    assert "refused" not in capsys.readouterr().err


async def test_settings_file_rules_reach_the_profile(
    server: WireServer, sessions_root: Path, workspace: Path, tmp_path: Path, capsys: Any
) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.yml").write_text('permissions: {allow: ["probe"], deny: ["write(*.secret)"]}\n')
    settings = Settings.from_args(
        namespace(sessions_root=str(sessions_root), cwd=str(workspace)), {"DSH_HOME": str(home)}
    )
    (entry,) = [e for e in profile_entries(settings) if e["name"] == "permissions"]
    assert entry["config"] == {"allow": ["probe"], "deny": ["write(*.secret)"]}
    server.add(call("write", {"file_path": "k.secret", "content": "x"}), text_reply("Denied."))
    assert await amain(run(sessions_root, workspace, "write the key")) == EXIT_REFUSED
    assert not (workspace / "k.secret").exists()
    assert "1 tool call was refused by the permissions" in capsys.readouterr().err
    (home / "settings.yml").write_text("permissions: [read]\n")
    assert await amain(run(sessions_root, workspace, "hi")) == EXIT_USAGE
    assert "permissions must be a mapping" in capsys.readouterr().err
