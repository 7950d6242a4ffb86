"""Every line the JSONL backend writes carries its own checksum: a changed byte is caught, never loaded silently."""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from dsh.core.persistence import PersistenceError
from dsh.core.session import session_event_line
from dsh.plugins.persistence_jsonl import log_path, scan_log
from dsh.plugins.persistence_jsonl.checksum import SEAL_LENGTH, ChecksumError, check, seal
from tests.core.persistence.helpers import CWD, Rig, meta, one_turn_log, short_turn, texts
from tests.sealing import unsealed


def test_a_sealed_line_is_the_same_json_plus_a_crc_of_what_precedes_it() -> None:
    line = b'{"type":"x","seq":0,"time":1,"data":{"a":"\xc3\xa9"}}'
    sealed = seal(line)
    assert json.loads(sealed) == {**json.loads(line), "crc": f"{zlib.crc32(line[:-1]):08x}"}
    assert len(sealed) == len(line) + SEAL_LENGTH - 1
    assert unsealed(sealed) == line
    check(sealed)
    check(line)  # a line without a seal (an older writer, another implementation) is read as it is


@pytest.mark.parametrize(
    "damage",
    [
        lambda line: line.replace(b'"seq":0', b'"seq":1'),
        lambda line: line[:-4] + b"X" + line[-3:],  # not a hex digit
        lambda line: line[:-4] + (b"0" if line[-4:-3] != b"0" else b"1") + line[-3:],  # another digit
    ],
    ids=["content", "non-hex digit", "digit"],
)
def test_a_changed_sealed_line_fails_its_check(damage: object) -> None:
    sealed = seal(b'{"type":"x","seq":0,"time":1,"data":{}}')
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        check(damage(sealed))  # type: ignore[operator]


async def _written_log(rig: Rig, root: Path) -> tuple[Path, bytes]:
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", [*one_turn_log(), *short_turn(2, 6)])
    path = Path(log_path(str(root), CWD, "s1"))
    return path, path.read_bytes()


async def test_every_single_byte_change_of_a_committed_line_is_refused_or_changes_nothing(rig: Rig, root: Path) -> None:
    """(issue: 12 of 120 byte flips in a committed line were accepted with changed content; now none is)"""
    path, data = await _written_log(rig, root)
    lines = data.split(b"\n")
    target = 4  # the first assistant message: committed, well before the last turn/end
    start = sum(len(line) + 1 for line in lines[:target])
    original = scan_log(data, str(path)).events
    refusals: list[PersistenceError] = []
    accepted: list[tuple[int, list[str]]] = []
    for offset in range(len(lines[target])):
        for mask in (0x01, 0x20, 0x80):
            damaged = bytearray(data)
            damaged[start + offset] ^= mask
            if damaged[start + offset] == ord("\n"):
                continue  # that splits the line in two: a different damage (a hole)
            try:
                accepted.append((offset, texts(scan_log(bytes(damaged), str(path)).events)))
            except PersistenceError as error:
                refusals.append(error)
    assert len(refusals) + len(accepted) > 300
    assert {error.code for error in refusals} == {"CORRUPT_LOG"}
    assert all(f"line {target + 1} of {path}" in error.message for error in refusals)
    # what passes is a change inside the seal that leaves the event as it was: the field's name, a digit's case
    seal_start = len(lines[target]) - SEAL_LENGTH
    assert all(offset > seal_start and events == texts(original) for offset, events in accepted)
    assert len(accepted) < 20


async def test_a_changed_committed_line_names_the_file_and_line_and_the_repair(rig: Rig, root: Path) -> None:
    path, data = await _written_log(rig, root)
    path.write_bytes(data.replace(b'"text":"hello"', b'"text":"jello"', 1))
    assert path.read_bytes() != data
    fresh = await rig.remount()
    with pytest.raises(PersistenceError) as raised:
        await fresh.load("s1")
    assert raised.value.code == "CORRUPT_LOG"
    assert raised.value.message == (
        f"corrupt session log: checksum mismatch: the line was changed after it was written (committed event at "
        f"line 5 of {path}; `dsh sessions repair` cuts the log before it, keeping a copy)"
    )


async def test_a_changed_header_is_refused(rig: Rig, root: Path) -> None:
    path, data = await _written_log(rig, root)
    path.write_bytes(data.replace(b'"createdAt":1000', b'"createdAt":1001', 1))
    with pytest.raises(PersistenceError, match="header line checksum mismatch") as raised:
        await (await rig.remount()).load("s1")
    assert raised.value.code == "CORRUPT_LOG"
    assert await (await rig.remount()).list() == []


async def test_a_changed_line_after_the_last_turn_end_is_a_torn_tail_and_repair_cuts_before_a_changed_one(
    rig: Rig, root: Path
) -> None:
    path, data = await _written_log(rig, root)
    extra = seal(session_event_line(short_turn(3, 8)[0]).encode())
    damaged = extra.replace(b'"turn":3', b'"turn":4')
    path.write_bytes(data + damaged + b"\n")
    loaded = await (await rig.remount()).load("s1")
    assert texts(loaded.events) == texts([*one_turn_log(), *short_turn(2, 6)])
    assert damaged not in path.read_bytes()
