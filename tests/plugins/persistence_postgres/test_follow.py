"""The PostgreSQL live tail: `LISTEN/NOTIFY` after each committed batch, and `dsh sessions show --follow`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.core.persistence import data_text
from dsh.plugins.persistence_postgres import plugin as postgres_plugin
from tests.cli.follow_scenario import follow_a_live_run
from tests.core.persistence.follow_contract import take
from tests.core.persistence.helpers import CWD, Rig, meta, one_user_turn, seqs, short_turn
from tests.plugins.persistence_postgres.cluster import Cluster
from tests.plugins.persistence_postgres.conftest import raw


async def test_follow_prints_a_postgres_session_while_another_process_writes_it(
    tmp_path: Path, cluster: Cluster
) -> None:
    await follow_a_live_run(tmp_path, ["--store", cluster.url()])


async def test_a_follower_wakes_for_its_own_session_only(rig: Rig) -> None:
    persistence = await rig.mount()
    for id in ("mine", "other"):
        await persistence.create(meta(id, CWD))
        await persistence.append(id, one_user_turn(1, 0))
    follower = persistence.follow("mine")
    try:
        assert seqs(await take(follower, 3)) == [0, 1, 2]
        await persistence.append("other", short_turn(2, 3))  # a notification for another session
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pending := asyncio.ensure_future(anext(follower))), 0.3)
        await persistence.append("mine", short_turn(2, 3))
        assert seqs([await asyncio.wait_for(pending, 10), *await take(follower, 1)]) == [3, 4]
    finally:
        await follower.aclose()


async def test_rows_written_without_a_notification_are_found_by_the_periodic_read(
    rig: Rig, config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_plugin, "FOLLOW_RECHECK_S", 0.1)
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn(1, 0))
    follower = persistence.follow("s1", 2)
    try:
        waiting = asyncio.ensure_future(anext(follower))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        with raw(config["url"]) as db:
            for event in short_turn(2, 3):
                db.execute(
                    f'INSERT INTO "{config["pg_schema"]}".events (session_id, seq, type, time, data) '
                    "VALUES (%s, %s, %s, %s, %s)",
                    ("s1", event.seq, event.type, event.time, data_text(event)),
                )
        assert seqs([await asyncio.wait_for(waiting, 10), *await take(follower, 1)]) == [3, 4]
    finally:
        await follower.aclose()
