"""`dsh sessions list | show | rm` in-process, over logs a real `dsh run --demo` wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.profile import profile_entries
from dsh.cli.sessions import TURN_START_LINE, SessionRow, count_turns, first_prompt, format_table, row_line
from dsh.cli.settings import Settings
from dsh.cli.transcript import format_time
from dsh.core.persistence import MemoryPersistence
from dsh.core.session import SessionHeader, SessionStore
from dsh.kernel import Context
from dsh.plugins.bash_local import bash_spill_dir
from dsh.plugins.persistence_jsonl import NO_CWD_BUCKET, SessionPersistenceJsonl
from tests.cli.helpers import log_of, namespace, session_files, session_id_of, write_tree
from tests.sealing import unsealed_text


async def demo_run(root: Path, cwd: Path, prompt: str, capsys: pytest.CaptureFixture[str], *rest: str) -> str:
    assert await amain(["run", "--demo", "--sessions-root", str(root), "--cwd", str(cwd), *rest, prompt]) == 0
    return session_id_of(capsys.readouterr().err)


def sessions(root: Path, *args: str) -> list[str]:
    return ["sessions", *args, "--sessions-root", str(root)]


async def test_list_shows_each_session_with_its_turns_and_workspace(
    sessions_root: Path, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = await demo_run(sessions_root, workspace, "echo one", capsys)
    await demo_run(sessions_root, workspace, "echo two", capsys, "--resume", first)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = await demo_run(sessions_root, elsewhere, "echo three", capsys)
    assert await amain(sessions(sessions_root, "list")) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "CREATED", "TURNS", "CWD", "FIRST", "PROMPT"]
    assert [line.split()[0] for line in lines[1:]] == [first, second]
    assert lines[1].split()[-4:] == ["2", str(workspace), "echo", "one"]
    assert lines[2].split()[-4:] == ["1", str(elsewhere), "echo", "three"]

    assert await amain(sessions(sessions_root, "list", "--json")) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(row["id"], row["turns"], row["cwd"], row["title"]) for row in rows] == [
        (first, 2, str(workspace), "echo one"),
        (second, 1, str(elsewhere), "echo three"),
    ]
    assert all(isinstance(row["createdAt"], int) for row in rows)


async def test_list_with_nothing_stored_says_so_on_stderr(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(sessions(sessions_root, "list")) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "dsh: no sessions stored by the built-in storage profile\n"


async def test_global_options_work_before_the_subcommand_too(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_id = await demo_run(sessions_root, workspace, "echo x", capsys)
    assert await amain(["--sessions-root", str(sessions_root), "sessions", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == session_id


async def test_show_prints_a_transcript_and_json_prints_the_log(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session_id = await demo_run(sessions_root, workspace, "echo shown", capsys)
    assert await amain(sessions(sessions_root, "show", session_id)) == 0
    transcript = capsys.readouterr().out
    assert transcript.startswith(f"session {session_id}\ncreated ")
    assert f"cwd {workspace}\n\n── turn 1 (message) ──\nuser: echo shown\n" in transcript
    assert '  → bash {"command":"echo shown"' in transcript
    assert "  ← shown\n" in transcript
    assert "── turn 1 ended: completed ──\n\n── usage (at deepseek-v4-flash prices) ──\nturn 1: " in transcript
    assert transcript.splitlines()[-1].startswith("session: 1 turn(s), ")

    assert await amain(sessions(sessions_root, "show", "--json", session_id)) == 0
    (path,) = session_files(sessions_root)
    assert capsys.readouterr().out == unsealed_text(path.read_text(encoding="utf-8"))


async def test_show_repairs_a_crash_tail_first(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log cut in the middle of a turn is closed durably (`interrupted`) before it is shown."""
    session_id = await demo_run(sessions_root, workspace, "echo x", capsys)
    (path,) = session_files(sessions_root)
    header, events = log_of(sessions_root, session_id)
    start = len(events)
    extra = [
        {
            "type": "turn/start",
            "seq": start,
            "time": 1,
            "data": {"turn": 2, "trigger": {"kind": "message", "source": {"kind": "user"}}},
        },
        {
            "type": "user/message",
            "seq": start + 1,
            "time": 1,
            "data": {"content": [{"type": "text", "text": "lost"}], "source": {"kind": "user"}},
        },
    ]
    with path.open("a", encoding="utf-8") as log:
        log.writelines(json.dumps(event, separators=(",", ":")) + "\n" for event in extra)
        log.write('{"type":"step/st')
    assert await amain(sessions(sessions_root, "show", "--json", session_id)) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == header
    assert lines[-1]["data"] == {"turn": 2, "reason": {"kind": "interrupted"}}
    assert unsealed_text(path.read_text(encoding="utf-8")).splitlines()[-1] == json.dumps(
        lines[-1], separators=(",", ":")
    )
    assert await amain(sessions(sessions_root, "show", session_id)) == 0
    assert "user: lost\n── turn 2 ended: interrupted ──\n\n── usage " in capsys.readouterr().out


async def test_show_and_rm_of_an_unknown_session_fail_with_status_1(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await amain(sessions(sessions_root, "show", "ghost")) == 1
    assert capsys.readouterr().err == (
        'dsh: no stored session has an id starting with "ghost": see `dsh sessions list`\n'
    )
    assert await amain(sessions(sessions_root, "rm", "ghost")) == 1
    assert capsys.readouterr().err == (
        'dsh: no session "ghost" is stored by the built-in storage profile: see `dsh sessions list`\n'
    )


async def test_rm_deletes_the_log(sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session_id = await demo_run(sessions_root, workspace, "echo x", capsys)
    assert await amain(sessions(sessions_root, "rm", session_id)) == 0
    assert capsys.readouterr().out == f"removed {session_id}\n"
    assert session_files(sessions_root) == []


async def test_rm_deletes_the_spill_files_kept_for_the_session(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (bash,) = [
        entry
        for entry in profile_entries(Settings.from_args(namespace(sessions_root=str(sessions_root))))
        if entry["id"] == "bash"
    ]
    assert bash["config"] == {"sessionFiles": str(sessions_root)}
    session_id = await demo_run(sessions_root, workspace, "echo x", capsys)
    spills = Path(bash_spill_dir(str(sessions_root), session_id))
    spills.mkdir(parents=True)
    (spills / "dsh-bash-1-stdout.log").write_text("x" * 1000)
    other = Path(bash_spill_dir(str(sessions_root), "another-session"))
    other.mkdir(parents=True)
    assert await amain(sessions(sessions_root, "check")) == 0
    assert await amain(sessions(sessions_root, "list")) == 0
    assert session_id in capsys.readouterr().out
    assert await amain(sessions(sessions_root, "rm", session_id)) == 0
    assert not spills.parent.exists()
    assert other.is_dir()


async def test_a_config_tree_without_persistence_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "tree.yml", [{"id": "sessions", "name": "sessions"}])
    assert await amain(["sessions", "list", "--config", str(tree)]) == 1
    assert capsys.readouterr().err.startswith(f"dsh: {tree} provides no session persistence: add an entry")


async def test_another_backend_lists_without_turn_counts(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through `--config`, any backend serves; turns are counted only for JSONL files (else `-`)."""
    settings = Settings.from_args(namespace(cwd=str(workspace), demo=True), {})
    sqlite = {"id": "persistence", "name": "session-persistence-sqlite", "config": {"path": str(tmp_path / "s.db")}}
    entries = [entry if entry["id"] != "persistence" else sqlite for entry in profile_entries(settings)]
    tree = write_tree(tmp_path / "tree.yml", entries)
    assert await amain(["run", "--config", str(tree), "--cwd", str(workspace), "echo stored"]) == 0
    session_id = session_id_of(capsys.readouterr().err)
    assert await amain(["sessions", "list", "--config", str(tree)]) == 0
    _, row = capsys.readouterr().out.splitlines()
    assert row.split()[0] == session_id
    assert row.split()[-3:] == ["-", str(workspace), "-"]
    assert await amain(["sessions", "list", "--json", "--config", str(tree)]) == 0
    assert "turns" not in json.loads(capsys.readouterr().out)


async def test_count_turns_reads_jsonl_files_only(tmp_path: Path) -> None:
    header = SessionHeader(version=1, id="x", created_at=0)
    assert TURN_START_LINE.startswith(b"\n")
    for backend, config in ((MemoryPersistence, {}), (SessionPersistenceJsonl, {"root": str(tmp_path)})):
        root = Context()
        await root.plugin(SessionStore)
        fiber = await root.plugin(backend, config)
        assert count_turns(fiber.instance, header) is None  # memory: not a file; jsonl: no such file
        await root.dispose()


def test_the_table_aligns_columns_and_marks_unknowns() -> None:
    rows = [
        SessionRow(id="a", created_at=0, turns=12, cwd="/w", title="x" * 60),
        SessionRow(id="longer-id", created_at=0),
    ]
    stamp = format_time(0)
    assert format_table(rows) == (
        f"ID         CREATED{' ' * (len(stamp) - 7)}  TURNS  CWD  FIRST PROMPT\n"
        f"a          {stamp}     12  /w   {'x' * 49}…\n"
        f"longer-id  {stamp}      -  -    -\n"
    )


async def test_list_shows_forks_and_sessions_without_a_workspace(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = sessions_root / NO_CWD_BUCKET
    bucket.mkdir(parents=True)
    header = {"type": "session", "version": 1, "id": "fork", "createdAt": 5, "parentSession": "origin"}
    start = {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}
    lines = [header, {"type": "turn/start", "seq": 0, "time": 6, "data": start}]
    (bucket / "fork.jsonl").write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    assert await amain(sessions(sessions_root, "list", "--json")) == 0
    assert json.loads(capsys.readouterr().out) == {"id": "fork", "createdAt": 5, "parentSession": "origin", "turns": 1}
    assert await amain(sessions(sessions_root, "list")) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[-3:] == ["1", "-", "-"]


async def test_show_and_resume_take_a_unique_id_prefix_and_an_ambiguous_one_lists_the_candidates(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = sessions_root / NO_CWD_BUCKET
    bucket.mkdir(parents=True)
    for session_id in ("abc-1", "abc-2", "xyz-9"):
        header = {"type": "session", "version": 1, "id": session_id, "createdAt": 5}
        (bucket / f"{session_id}.jsonl").write_text(json.dumps(header, separators=(",", ":")) + "\n")
    assert await amain(sessions(sessions_root, "show", "--json", "xy")) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "xyz-9"
    assert await amain(sessions(sessions_root, "show", "abc")) == 1
    assert capsys.readouterr().err == ('dsh: "abc" is the start of 2 session ids (abc-1, abc-2): type more of the id\n')
    assert await amain(sessions(sessions_root, "show", "--json", "abc-2")) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "abc-2"
    args = ["run", "--demo", "--sessions-root", str(sessions_root), "--cwd", str(workspace)]
    assert await amain([*args, "--resume", "xyz", "echo again"]) == 0
    assert session_id_of(capsys.readouterr().err) == "xyz-9"
    assert await amain([*args, "--resume", "abc", "echo again"]) == 1
    assert 'dsh: cannot resume session "abc": "abc" is the start of 2 session ids' in capsys.readouterr().err


def test_first_prompt_is_the_first_user_message_on_one_line_or_none() -> None:
    data = b'"data":{"content":[{"type":"text","text":" two\\n words "}],"source":{"kind":"user"}}}'
    line = b'\n{"type":"user/message","seq":1,"time":0,' + data + b"\n"
    assert first_prompt(b"{}" + line) == "two words"
    assert first_prompt(b"{}" + line.rstrip(b"\n")) == "two words"
    assert first_prompt(b'{}\n{"type":"user/message",broken}\n') is None
    assert first_prompt(b'{}\n{"type":"user/message","data":{"content":[{"type":"image"}]}}\n') is None
    image = b'"data":{"content":[{"type":"image","url":"u"}],"source":{"kind":"user"}}}'
    assert first_prompt(b'{}\n{"type":"user/message","seq":1,"time":0,' + image + b"\n") is None
    assert first_prompt(b"{}\n") is None
    relabelled = b'\n{"type":"user/message","seq":1,"time":0,"type":"plugin/note",' + data + b"\n"
    assert first_prompt(b"{}" + relabelled) is None  # the last "type" wins: not a user message after all


def test_a_json_row_writes_a_lone_surrogate_as_its_escape() -> None:
    line = b'\n{"type":"user/message","seq":1,"time":0,"data":{"content":[{"type":"text","text":"a\\ud800"}],"source":{"kind":"user"}}}'
    title = first_prompt(b"{}" + line)
    assert title == "a\ud800"
    assert title is not None
    row = SessionRow(id="s", created_at=0, title=title)
    assert row_line(row) == '{"id":"s","createdAt":0,"title":"a\\ud800"}'
    assert row_line(SessionRow(id="s", created_at=0, turns=1)) == '{"id":"s","createdAt":0,"turns":1}'


async def test_show_of_a_damaged_log_names_the_action_file_and_line(
    sessions_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = sessions_root / NO_CWD_BUCKET
    bucket.mkdir(parents=True)
    header = {"type": "session", "version": 1, "id": "bad", "createdAt": 5}
    end = {"type": "turn/end", "seq": 1, "time": 6, "data": {"turn": 1, "reason": {"kind": "completed"}}}
    path = bucket / "bad.jsonl"
    path.write_text("\n".join([json.dumps(header), "garbage", json.dumps(end)]) + "\n")
    assert await amain(sessions(sessions_root, "show", "bad")) == 1
    assert capsys.readouterr().err == (
        f"dsh: sessions show: corrupt session log: unparsable committed event at line 2 of {path}\n"
    )


async def test_check_reports_each_damaged_or_torn_log_and_repair_cuts_it_after_a_copy(
    sessions_root: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    intact = await demo_run(sessions_root, workspace, "echo one", capsys)
    torn = await demo_run(sessions_root, workspace, "echo two", capsys)
    damaged = await demo_run(sessions_root, workspace, "echo three", capsys)
    assert await amain(sessions(sessions_root, "check")) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("", "dsh: checked 3 session(s) of the built-in storage profile: 0 problem(s)\n")
    paths = {path.stem: path for path in session_files(sessions_root)}
    with paths[torn].open("ab") as log:
        log.write(b'{"type":"turn/start","se')
    original = paths[damaged].read_bytes()
    lines = original.split(b"\n")
    lines[3] = b"garbage"
    paths[damaged].write_bytes(b"\n".join(lines))
    assert await amain(sessions(sessions_root, "check")) == 1
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == sorted(
        [
            f"{torn}: a torn tail (an unfinished write); a resume or `dsh sessions repair {torn}` removes it",
            f"{damaged}: corrupt session log: unparsable committed event at line 4 of {paths[damaged]} "
            f"(run `dsh sessions repair {damaged}`)",
        ]
    )
    assert err.endswith(": 2 problem(s)\n")
    damaged_bytes = paths[damaged].read_bytes()
    assert await amain(sessions(sessions_root, "repair", damaged)) == 0
    out = capsys.readouterr().out
    (backup,) = paths[damaged].parent.glob(f"{paths[damaged].name}.bak-*")
    assert backup.read_bytes() == damaged_bytes
    cut = len(damaged_bytes) - len(b"\n".join(lines[:3])) - 1
    assert out.splitlines()[0] == f"{paths[damaged]}: cut {cut} damaged byte(s); the whole file was saved as {backup}"
    assert out.splitlines()[1] == f"repaired {damaged}: 3 event(s) kept"  # two intact, one closer
    assert await amain(sessions(sessions_root, "repair", intact)) == 0
    assert capsys.readouterr().out == f"repaired {intact}: {len(log_of(sessions_root, intact)[1])} event(s) kept\n"
    assert await amain(sessions(sessions_root, "repair", torn)) == 0
    capsys.readouterr()
    assert await amain(sessions(sessions_root, "check")) == 0
    stray = paths[intact].parent / "stray.jsonl"
    stray.write_bytes(b"not a header\n")
    (paths[intact].parent / "link.jsonl").symlink_to(paths[intact])
    capsys.readouterr()
    assert await amain(sessions(sessions_root, "check")) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: not a readable session log (a symbolic link, or no valid header line): move it away"
        for path in (paths[intact].parent / "link.jsonl", stray)
    ]
    assert await amain(sessions(sessions_root, "repair", "ghost")) == 1
    assert capsys.readouterr().err.endswith('sessions repair: session "ghost" not found\n')


async def test_repair_refuses_other_backends_and_symlinked_logs(
    sessions_root: Path, workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.from_args(namespace(cwd=str(workspace), demo=True), {})
    sqlite = {"id": "persistence", "name": "session-persistence-sqlite", "config": {"path": str(tmp_path / "s.db")}}
    entries = [entry if entry["id"] != "persistence" else sqlite for entry in profile_entries(settings)]
    tree = write_tree(tmp_path / "tree.yml", entries)
    assert await amain(["sessions", "repair", "x", "--config", str(tree)]) == 1
    assert "sessions repair works on JSONL logs only" in capsys.readouterr().err
    assert await amain(["sessions", "check", "--config", str(tree)]) == 0
    assert capsys.readouterr().err.endswith(": 0 problem(s)\n")
    session_id = await demo_run(sessions_root, workspace, "echo one", capsys)
    (path,) = session_files(sessions_root)
    target = tmp_path / "target.jsonl"
    path.rename(target)
    path.symlink_to(target)
    before = target.read_bytes()
    assert await amain(sessions(sessions_root, "repair", session_id)) == 1
    assert "is a symbolic link and dsh never follows one" in capsys.readouterr().err
    assert target.read_bytes() == before
