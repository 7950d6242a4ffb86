"""SessionPersistenceJsonl: durability, crash semantics, write path and edge cases (SPEC §4b)."""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import asyncio
import errno
import math
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.core.llm import to_json
from dsh.core.persistence import SESSION_PERSISTENCE, PersistenceError, cwd_of
from dsh.core.session import (
    NotJsonError,
    Session,
    SessionEvent,
    SessionHeader,
    UntypedEvent,
    header_line,
    session_event_line,
)
from dsh.kernel import ConfigError
from dsh.plugins.persistence_jsonl import LOCKS_DIR, SessionPersistenceJsonl, bucket_name, log_path
from tests.core.persistence.helpers import (
    CWD,
    Rig,
    event,
    log,
    meta,
    one_turn_log,
    one_user_turn,
    open_turn,
    replay,
    seqs,
    short_turn,
    text,
    texts,
    turn_start,
    types,
    user_message,
)
from tests.plugins.persistence_jsonl.conftest import TORN_FRAGMENT
from tests.sealing import seal, unsealed


def write_raw(root: Path, header: SessionHeader, events: list[SessionEvent], tail: bytes = b"") -> Path:
    """Write a log file by hand (as a crashed process would have left it)."""
    path = Path(log_path(str(root), cwd_of(header), header.id))
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header_line(header), *(session_event_line(item) for item in events)]
    path.write_bytes(b"".join(line.encode() + b"\n" for line in lines) + tail)
    return path


def expected_bytes(header: SessionHeader, events: list[SessionEvent]) -> bytes:
    lines = [header_line(header), *(session_event_line(item) for item in events)]
    return b"".join(seal(line.encode()) + b"\n" for line in lines)


def fail_once(monkeypatch: pytest.MonkeyPatch, name: str, message: str = "disk full") -> list[int]:
    """Make the next ``os.<name>`` call fail with ENOSPC; later calls go through. Returns the call log."""
    real: Callable[..., Any] = getattr(os, name)
    calls: list[int] = []

    def patched(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, message)
        return real(*args)

    monkeypatch.setattr(os, name, patched)
    return calls


def all_files(top: Path) -> list[Path]:
    """Every file under ``top`` but the writer lock files (``<root>/.locks/*.lock``)."""
    return sorted(path for path in top.rglob("*") if path.is_file() and path.suffix != ".lock")


# --- describe "durability and crash semantics"
async def test_lazy_materialization_create_writes_no_file_until_the_first_append(rig: Rig, root: Path) -> None:
    """lazy materialization: create() writes no file until the first append"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    assert all_files(root) == []
    assert list(root.glob("*.lock")) == []  # the locks have a directory of their own
    (lock,) = (root / LOCKS_DIR).glob("*.lock")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert lock.read_text() == f"{os.getpid()}\n"
    await persistence.append("s1", one_user_turn())
    path = Path(log_path(str(root), CWD, "s1"))
    assert all_files(root) == [path]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_round_trip_is_byte_identical_incl_assistant_chunk_verbatim(rig: Rig, root: Path) -> None:
    """round-trip is byte-identical (incl. assistant/chunk verbatim)"""
    persistence = await rig.mount()
    header = meta("s1", CWD, parentSession="p")
    events = log(
        ("turn/start", turn_start(1)),
        ("user/message", user_message("naïve ☃ 😀")),
        ("step/start", {"turn": 1, "step": 1}),
        (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
        ),
        (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "hé"}},
        ),
        ("assistant/message", {"turn": 1, "step": 1, "content": [text("hé")]}),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    )
    await persistence.create(header)
    await persistence.append("s1", events[:4])
    await persistence.append("s1", events[4:])
    path = Path(log_path(str(root), CWD, "s1"))
    assert path.read_bytes() == expected_bytes(header, events)
    loaded = await (await rig.remount()).load("s1")
    assert loaded.meta == header
    assert texts(loaded.events) == texts(events)


async def test_crash_recovery_load_preserves_the_interrupted_turn_and_closes_it_with_a_synthetic_turn_end_interrupted(
    rig: Rig, root: Path
) -> None:
    """crash recovery: load preserves the interrupted turn and closes it with a synthetic turn/end {interrupted}"""
    written = [*one_turn_log(), *open_turn(2, 6)]
    path = write_raw(root, meta("s1", CWD), written, tail=TORN_FRAGMENT)
    persistence = await rig.mount()
    loaded = await persistence.load("s1")
    assert seqs(loaded.events) == list(range(10))
    assert types(loaded.events[8:]) == ["step/end", "turn/end"]
    assert to_json(loaded.events[9].data)["reason"] == {"kind": "interrupted"}
    assert TORN_FRAGMENT not in path.read_bytes()
    await persistence.append("s1", short_turn(3, 10))
    reloaded = await (await rig.remount()).load("s1")
    assert seqs(reloaded.events) == list(range(12))


async def test_committed_events_are_never_rewritten_only_the_crash_tail_is_repaired(rig: Rig, root: Path) -> None:
    """committed events are never rewritten: only the crash tail is repaired"""
    written = [*one_turn_log(), *open_turn(2, 6)]
    path = write_raw(root, meta("s1", CWD), written, tail=TORN_FRAGMENT)
    original = unsealed(expected_bytes(meta("s1", CWD), written))  # write_raw seals nothing
    persistence = await rig.mount()
    loaded = await persistence.load("s1")
    repaired = path.read_bytes()
    assert repaired.startswith(original)
    assert repaired == original + b"".join(
        seal(session_event_line(item).encode()) + b"\n" for item in loaded.events[8:]
    )


async def test_a_failed_append_lines_truncates_partial_bytes_so_a_retry_has_no_seq_gap(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a failed appendLines truncates partial bytes so a retry has no seq gap"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    path = Path(log_path(str(root), CWD, "s1"))
    size = path.stat().st_size
    fail_once(monkeypatch, "fsync")
    with pytest.raises(PersistenceError, match=r"disk full") as raised:
        await persistence.append("s1", short_turn(2, 6))
    assert raised.value.code == "STORAGE_IO"
    assert isinstance(raised.value.__cause__, OSError)
    assert raised.value.__cause__.errno == errno.ENOSPC
    assert path.stat().st_size == size
    await persistence.append("s1", short_turn(2, 6))
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == list(range(8))


async def test_load_returns_an_immutable_meta_nothing_can_corrupt_backend_pathing(rig: Rig, root: Path) -> None:
    """load returns an immutable meta: nothing can corrupt backend pathing"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    loaded = await persistence.load("s1")
    with pytest.raises(AttributeError):
        loaded.meta.cwd = "/elsewhere"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        loaded.meta.id = "hijacked"  # type: ignore[misc]
    await persistence.append("s1", short_turn(2, 6))
    assert all_files(root) == [Path(log_path(str(root), CWD, "s1"))]
    assert seqs((await persistence.load("s1")).events) == list(range(8))


async def test_rejects_a_re_append_of_an_already_stored_seq(rig: Rig) -> None:
    """rejects a re-append of an already-stored seq"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    with pytest.raises(PersistenceError, match=r"seq mismatch"):
        await persistence.append("s1", one_turn_log()[5:])
    assert seqs((await persistence.load("s1")).events) == list(range(6))


async def test_path_traversal_session_ids_are_neutralized_no_escape_from_root(
    rig: Rig, root: Path, tmp_path: Path
) -> None:
    """path-traversal session ids are neutralized (no escape from root)"""
    persistence = await rig.mount()
    hostile = ["..", ".", "../escape", "/etc/passwd", "a/../../b", "nul\0byte", "~002E"]
    for id in hostile:
        await persistence.create(meta(id, CWD))
        await persistence.append(id, one_user_turn())
    bucket = root / bucket_name(CWD)
    assert all_files(tmp_path) == sorted(
        bucket / (name + ".jsonl")
        for name in [
            "~002E~002E",
            "~002E",
            "..~002Fescape",
            "~002Fetc~002Fpasswd",
            "a~002F..~002F..~002Fb",
            "nul~0000byte",
            "~007E002E",
        ]
    )
    fresh = await rig.remount()
    for id in hostile:
        assert (await fresh.load(id)).meta.id == id


# --- describe "write path (session/event → flush)"
async def test_concurrent_sessions_do_not_cross_buffers(rig: Rig) -> None:
    """concurrent sessions do not cross buffers"""
    await rig.mount()
    _a_fiber, a = await rig.live("a")
    _b_fiber, b = await rig.live("b", cwd=None)
    for index in range(3):
        a.append("user/message", user_message(f"a{index}"))
        b.append("user/message", user_message(f"b{index}"))
    await asyncio.gather(rig.flush(a), rig.flush(b), rig.flush(a))
    fresh = await rig.remount()
    loaded_a, loaded_b = await fresh.load("a"), await fresh.load("b")
    assert [to_json(item.data)["content"][0]["text"] for item in loaded_a.events] == ["a0", "a1", "a2"]
    assert [to_json(item.data)["content"][0]["text"] for item in loaded_b.events] == ["b0", "b1", "b2"]
    assert texts(loaded_a.events) == texts(a.events)
    assert texts(loaded_b.events) == texts(b.events)


# --- describe "edge cases"
async def test_append_rejects_non_json_serializable_undefined_producing_data(rig: Rig, root: Path) -> None:
    """append rejects non-JSON-serializable undefined-producing data"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    for value in (lambda: None, object(), print):
        with pytest.raises(PersistenceError, match=r'event "x/note" carries non-JSON-serializable data'):
            await persistence.append("s1", [UntypedEvent(type="x/note", seq=0, time=0, data={"content": value})])
    assert all_files(root) == []


async def test_create_takes_an_immutable_meta_the_caller_cannot_change_it_after_the_call(rig: Rig, root: Path) -> None:
    """create takes an immutable meta: the caller cannot change it after the call"""
    persistence = await rig.mount()
    header = meta("s1", CWD)
    pending = persistence.create(header)
    with pytest.raises(AttributeError):
        header.cwd = "/mutated"  # type: ignore[misc]
    await pending
    await persistence.append("s1", one_user_turn())
    assert all_files(root) == [Path(log_path(str(root), CWD, "s1"))]


async def test_list_discovers_sessions_across_multiple_cwd_buckets(rig: Rig, root: Path) -> None:
    """list discovers sessions across multiple cwd buckets"""
    persistence = await rig.mount()
    headers = [meta("a", "/one"), meta("b", "/two"), meta("c")]
    for header in headers:
        await persistence.create(header)
        await persistence.append(header.id, one_user_turn())
    assert sorted(path.name for path in root.iterdir()) == sorted(
        [bucket_name("/one"), bucket_name("/two"), "_no-cwd", LOCKS_DIR]
    )
    listed = await (await rig.remount()).list()
    assert sorted(listed, key=lambda header: header.id) == headers


async def test_list_on_an_empty_root_returns_nothing(rig: Rig, root: Path) -> None:
    """list on an empty root returns nothing"""
    root.mkdir()
    (root / "stray-file.txt").write_text("not a bucket")
    persistence = await rig.mount()
    assert await persistence.list() == []


async def test_list_skips_empty_and_non_header_jsonl_files_metadata_only_read(rig: Rig, root: Path) -> None:
    """list skips empty and non-header .jsonl files (metadata-only read)"""
    good = write_raw(root, meta("good", CWD), one_user_turn())
    bucket = good.parent
    (bucket / "empty.jsonl").write_bytes(b"")
    (bucket / "no-newline.jsonl").write_bytes(header_line(meta("no-newline", CWD)).encode())
    (bucket / "event-first.jsonl").write_bytes(session_event_line(one_user_turn()[0]).encode() + b"\n")
    (bucket / "garbage.jsonl").write_bytes(b"\x00\xff garbage\n")
    (bucket / "notes.txt").write_bytes(header_line(meta("notes", CWD)).encode() + b"\n")
    (bucket / "dir.jsonl").mkdir()
    (bucket / "dangling.jsonl").symlink_to(bucket / "missing-target")
    with open(good, "ab") as file:
        file.write(b"this tail is never read by list\n")
    persistence = await rig.mount()
    assert await persistence.list() == [meta("good", CWD)]


async def test_list_reads_a_header_line_longer_than_the_8kb_read_chunk(rig: Rig, root: Path) -> None:
    """list reads a header line longer than the 8KB read chunk"""
    long_cwd = "/" + "d" * 20_000
    header = meta("long", long_cwd)
    write_raw(root, header, one_user_turn())
    persistence = await rig.mount()
    assert await persistence.list() == [header]


async def test_has_finds_a_session_on_disk_under_an_unknown_cwd_cross_bucket_scan(rig: Rig, root: Path) -> None:
    """has() finds a session on disk under an unknown cwd (cross-bucket scan)"""
    write_raw(root, meta("s1", "/somewhere/else"), one_user_turn())
    persistence = await rig.mount()
    assert await persistence.has("s1") is True
    assert await persistence.has("s2") is False


async def test_a_different_live_session_object_reusing_a_disposed_id_gets_its_own_init_no_stale_cache(
    rig: Rig,
) -> None:
    """a DIFFERENT live session object reusing a disposed id gets its own init (no stale cache)"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    replay(first, one_user_turn())
    await rig.flush(first)
    first_init = rig.backend.inits[first]
    await first_fiber.dispose()
    _fiber, second = await rig.live("s1")
    second_init = rig.backend.inits[second]
    assert second_init is not first_init
    with pytest.raises(PersistenceError, match=r"id collision"):
        await second_init
    await first_init


async def test_a_no_cwd_live_session_does_not_cross_cwd_adopt_a_same_id_log_from_a_real_cwd_bucket(
    rig: Rig, root: Path
) -> None:
    """a NO-CWD live session does NOT cross-cwd-adopt a same-id log from a real cwd bucket (loadLive is scope-exact)"""
    path = write_raw(root, meta("s1", CWD), one_turn_log())
    before = path.read_bytes()
    await rig.mount()
    _fiber, session = await rig.live("s1", seed=one_turn_log(), cwd=None)
    with pytest.raises(PersistenceError, match=r'session "s1" already has a persisted log on disk; load/resume'):
        await rig.init(session)
    assert path.read_bytes() == before
    assert not (root / "_no-cwd").exists()


async def test_a_seed_with_matching_seq_type_time_but_different_data_is_rejected_deep_prefix_compare(
    rig: Rig, root: Path
) -> None:
    """a seed with matching seq/type/time but DIFFERENT data is rejected (deep prefix compare)"""
    path = write_raw(root, meta("s1", CWD), one_turn_log())
    before = path.read_bytes()
    seed = one_turn_log()
    seed[3] = event("assistant/message", 3, {"turn": 1, "step": 1, "content": [text("a different answer")]})
    await rig.mount()
    _fiber, session = await rig.live("s1", seed=seed)
    with pytest.raises(PersistenceError, match=r"does not match this live session \(id collision\)"):
        await rig.init(session)
    assert path.read_bytes() == before


async def test_a_second_live_session_reusing_a_bound_id_is_rejected(rig: Rig) -> None:
    """a second live session reusing a bound id is rejected"""
    await rig.mount()
    _fiber, bound = await rig.live("s1")
    replay(bound, one_user_turn())
    await rig.flush(bound)
    twin = Session("s1", header=bound.header)
    with pytest.raises(PersistenceError, match=r"already bound to a different live session in this backend"):
        await rig.backend.coordinator.init_for(twin)
    replay(bound, one_user_turn(turn=2, start=3))
    await rig.flush(bound)
    assert seqs((await (await rig.remount()).load("s1")).events) == list(range(6))


async def test_list_returns_nothing_when_the_root_directory_does_not_exist(rig: Rig, root: Path) -> None:
    """list returns nothing when the root directory does not exist"""
    persistence = await rig.mount()
    assert all_files(root) == []
    assert await persistence.list() == []
    assert await persistence.has("s1") is False


async def test_list_surfaces_a_non_enoent_root_error_enotdir_instead_of_reporting_no_sessions(
    rig: Rig, root: Path
) -> None:
    """list surfaces a non-ENOENT root error (ENOTDIR) instead of reporting no sessions"""
    root.write_text("a file where the root should be")
    persistence = await rig.mount()
    with pytest.raises(PersistenceError, match=r"listing sessions failed") as raised:
        await persistence.list()
    assert raised.value.code == "STORAGE_IO"
    assert isinstance(raised.value.__cause__, NotADirectoryError)


async def test_exists_surfaces_a_non_enoent_lookup_error_enotdir_instead_of_reporting_absent(
    rig: Rig, root: Path
) -> None:
    """exists() surfaces a non-ENOENT lookup error (ENOTDIR) instead of reporting absent"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    root.mkdir(exist_ok=True)
    (root / bucket_name(CWD)).write_text("a file where the bucket should be")
    with pytest.raises(PersistenceError) as raised:
        await persistence.has("s1")
    assert isinstance(raised.value.__cause__, NotADirectoryError)
    assert raised.value.__cause__.errno == errno.ENOTDIR


async def test_append_to_a_disk_only_session_adopts_it_and_repairs_a_crash_tail(rig: Rig, root: Path) -> None:
    """append() to a disk-only session adopts it and repairs a crash tail"""
    write_raw(root, meta("s1", CWD), [*one_turn_log(), *open_turn(2, 6)], tail=TORN_FRAGMENT)
    persistence = await rig.mount()
    await persistence.append("s1", short_turn(3, 10))
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == list(range(12))
    assert to_json(loaded.events[9].data)["reason"] == {"kind": "interrupted"}


async def test_a_header_only_log_open_turn_no_turn_end_preserves_the_open_turn_on_load_and_closes_it(
    rig: Rig, root: Path
) -> None:
    """a header-only log (open turn, no turn/end) preserves the open turn on load and closes it"""
    write_raw(root, meta("s1", CWD), [event("turn/start", 0, turn_start(1))])
    persistence = await rig.mount()
    loaded = await persistence.load("s1")
    assert types(loaded.events) == ["turn/start", "turn/end"]
    assert to_json(loaded.events[1].data) == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert types((await (await rig.remount()).load("s1")).events) == ["turn/start", "turn/end"]


async def test_create_core_rejects_an_id_already_on_disk_under_a_different_cwd_bucket(rig: Rig, root: Path) -> None:
    """createCore rejects an id already on disk under a DIFFERENT cwd bucket"""
    write_raw(root, meta("s1", "/a"), one_user_turn())
    persistence = await rig.mount()
    with pytest.raises(PersistenceError, match=r'session "s1" already has a persisted log on disk'):
        await persistence.create(meta("s1", "/b"))
    assert not (root / bucket_name("/b")).exists()


async def test_flush_keeps_buffered_events_when_the_append_fails_no_silent_loss(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flush keeps buffered events when the append fails (no silent loss)"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    await rig.init(session)
    session.append("user/message", user_message("one"))
    session.append("user/message", user_message("two"))
    fail_once(monkeypatch, "write")
    with pytest.raises(PersistenceError, match=r"disk full"):
        await rig.flush(session)
    assert not Path(log_path(str(root), CWD, "s1")).exists()
    assert [path.name for path in all_files(root)] == []
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == [0, 1]


async def test_rejects_non_json_event_data_bigint_function_circular_map_undefined_property(
    rig: Rig, root: Path
) -> None:
    """rejects non-JSON event data: BigInt, function, circular, Map, undefined property"""
    circular: dict[str, Any] = {}
    circular["loop"] = circular
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    for value in (math.inf, len, circular, {("a", 1): "tuple key"}, {1, 2}, object()):
        with pytest.raises(PersistenceError, match=r"non-JSON-serializable"):
            await persistence.append(
                "s1", [UntypedEvent(type="x/note", seq=0, time=0, data={"content": [], "x": value})]
            )
    assert all_files(root) == []
    assert await persistence.has("s1") is False


async def test_accepts_well_formed_json_values_null_booleans_nested_arrays_objects(rig: Rig) -> None:
    """accepts well-formed JSON values (null, booleans, nested arrays/objects)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    data = {
        "n": None,
        "t": True,
        "f": False,
        "i": 10**30,
        "x": -0.5,
        "nested": [[], [{"a": [1, {"b": None}]}]],
        "s": "",
    }
    await persistence.append("s1", [event("x/custom", 0, data)])
    loaded = await (await rig.remount()).load("s1")
    assert loaded.events[0] == UntypedEvent(type="x/custom", seq=0, time=0, data=data)
    assert texts(loaded.events) == texts([event("x/custom", 0, data)])


async def test_session_append_rejects_a_non_serializable_event_at_the_source_never_enters_the_log(
    rig: Rig, root: Path
) -> None:
    """Session.append rejects a non-serializable event at the source (never enters the log)"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    with pytest.raises(NotJsonError, match=r"non-JSON-serializable"):
        session.append("x/note", {"content": [], "bad": {1, 2}})
    assert session.seq == 0
    await rig.flush(session)
    assert all_files(root) == []


async def test_lone_surrogates_round_trip_as_json_escapes(rig: Rig, root: Path) -> None:
    """(a lone surrogate in data or id is written as a \\u escape, valid UTF-8, and loads back)"""
    persistence = await rig.mount()
    await persistence.create(meta("id\ud800", CWD))
    await persistence.append("id\ud800", [event("user/message", 0, user_message("x\udc00y"))])
    path = Path(log_path(str(root), CWD, "id\ud800"))
    assert path.name == "id~D800.jsonl"
    raw = path.read_bytes()
    raw.decode("utf-8")
    assert b"\\udc00" in raw
    loaded = await (await rig.remount()).load("id\ud800")
    assert loaded.events[0].data.content[0].text == "x\udc00y"  # type: ignore[union-attr]
    assert loaded.meta.id == "id\ud800"


async def test_the_backend_label_shadows_nothing_of_the_service_key(rig: Rig, root: Path) -> None:
    """(name is the backend label; the service key stays session_persistence; root is absolute)"""
    persistence = await rig.mount()
    assert isinstance(persistence, SessionPersistenceJsonl)
    assert persistence.name == "session-persistence-jsonl"
    assert rig.backend.service_name == "session_persistence"
    assert rig.backend.root == str(root)
    assert os.path.isabs(rig.backend.root)


async def test_a_relative_root_is_resolved_once_at_construction(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Config root is resolved to an absolute path once)"""
    monkeypatch.chdir(tmp_path)
    rig.kit.config = {"root": "relative-root"}
    persistence = await rig.mount()
    monkeypatch.chdir("/")
    await persistence.create(meta("s1"))
    await persistence.append("s1", one_user_turn())
    assert (tmp_path / "relative-root" / "_no-cwd" / "s1.jsonl").exists()


async def test_the_root_is_required_and_nothing_registers_without_it(rig: Rig) -> None:
    """(Config: root is required, no default)"""
    for config in ({}, {"root": ""}, {"root": "/x", "extra": 1}):
        with pytest.raises(ConfigError, match='plugin "session-persistence-jsonl": invalid config'):
            await rig.ctx.plugin(SessionPersistenceJsonl, config)
    assert rig.ctx.get(SESSION_PERSISTENCE) is None


async def test_a_written_batch_is_on_disk_before_its_sync(rig: Rig, root: Path) -> None:
    """(write_batch appends without the fsync; sync_log makes it durable)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceJsonl)
    await backend.write_batch(meta("s1", CWD), short_turn(2, 3), True)
    assert Path(log_path(str(root), CWD, "s1")).read_bytes() == expected_bytes(
        meta("s1", CWD), [*one_user_turn(), *short_turn(2, 3)]
    )
    await backend.sync_log(meta("s1", CWD))
    assert seqs((await (await rig.remount()).load("s1")).events) == list(range(5))


async def test_cut_damage_keeps_the_intact_start_and_a_copy_of_the_whole_file(rig: Rig, root: Path) -> None:
    """(repair: the log is cut at its first hole, after a backup; an intact log is left alone)"""
    log = one_turn_log()
    path = write_raw(root, meta("s1", CWD), log[:2])
    intact = path.read_bytes()
    path.write_bytes(intact + b"garbage\n" + b"".join(session_event_line(item).encode() + b"\n" for item in log[3:]))
    damaged = path.read_bytes()
    await rig.mount()
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceJsonl)
    result = await backend.cut_damage("s1")
    assert result is not None
    cut_path, backup, removed = result
    assert (cut_path, removed) == (str(path), len(damaged) - len(intact))
    assert path.read_bytes() == intact
    assert Path(backup).read_bytes() == damaged
    assert await backend.cut_damage("s1") is None
    with pytest.raises(PersistenceError, match=r'session "ghost" not found'):
        await backend.cut_damage("ghost")


async def test_unlisted_logs_names_the_files_list_skips(rig: Rig, root: Path) -> None:
    """(a .jsonl without a valid header is not listed; unlisted_logs names it)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    stray = Path(log_path(str(root), CWD, "stray"))
    stray.write_bytes(b"not a header\n")
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceJsonl)
    headers = await persistence.list()
    assert headers == [meta("s1", CWD)]
    assert backend.unlisted_logs(headers) == [str(stray)]


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return calls


@pytest.mark.parametrize(("interval", "synced"), [(None, False), (0, True), (3_600_000, False)])
async def test_a_checkpoint_fsyncs_once_sync_interval_ms_has_passed(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch, interval: int | None, synced: bool
) -> None:
    """(durability: fsync at turn end, and at a configurable interval during a long turn)"""
    if interval is not None:
        rig.kit.config = {"root": str(root), "syncIntervalMs": interval}
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceJsonl)
    calls = _count_fsyncs(monkeypatch)
    await backend.write_batch(meta("s1", CWD), short_turn(2, 3), True)
    assert bool(calls) is synced
    assert seqs((await (await rig.remount()).load("s1")).events) == list(range(5))


async def test_the_sync_interval_counts_from_the_last_fsync_of_that_log(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig.kit.config = {"root": str(root), "syncIntervalMs": 50}
    await rig.mount()
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceJsonl)
    await backend.write_batch(meta("s1", CWD), one_user_turn(), False)  # a new log: published and synced
    calls = _count_fsyncs(monkeypatch)
    clock = [time.monotonic()]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    await backend.write_batch(meta("s1", CWD), short_turn(2, 3)[:1], True)
    assert calls == []
    clock[0] += 0.05
    await backend.write_batch(meta("s1", CWD), short_turn(2, 3)[1:], True)
    assert len(calls) == 1
    await backend.write_batch(meta("s1", CWD), short_turn(3, 5)[:1], True)
    assert len(calls) == 1
    await backend.sync_log(meta("s1", CWD))
    clock[0] += 0.049
    await backend.write_batch(meta("s1", CWD), short_turn(3, 5)[1:], True)
    assert len(calls) == 2  # the sync_log only
    logged = Path(log_path(str(root), CWD, "s1")).read_bytes()
    assert logged == expected_bytes(meta("s1", CWD), [*one_user_turn(), *short_turn(2, 3), *short_turn(3, 5)])
    await backend.release_writer("s1")  # the session was retired: nothing of it stays in the backend
    assert "s1" not in backend._last_sync
