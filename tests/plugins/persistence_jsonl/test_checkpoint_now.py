"""A JSONL checkpoint of a stored log is one unsynced write made before the listener returns.

The coordinator hands the buffer to ``write_batch_now``, which writes it on the loop
(no task, no worker thread); when ``syncIntervalMs`` has passed since the last fsync it
declines, and the chained write fsyncs in the executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh.core.agent import Agent
from dsh.core.persistence import EARLY_WRITE, early_write_phase
from dsh.core.session import SESSION_FLUSH, Session
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.plugins.persistence_jsonl import files as jsonl_files
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.plugins.persistence_jsonl.test_checkpoint import on_disk, types_of


def note(session: Session, words: str) -> None:
    session.append(
        "context/message",
        {"content": [{"type": "text", "text": words}], "source": {"kind": "plugin", "plugin": "test"}},
    )


def counting_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    syncs: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        syncs.append(fd)
        real(fd)

    monkeypatch.setattr(jsonl_files.os, "fsync", counting)
    return syncs


@dataclass
class Stored:
    """A JSONL backend under a harness, an agent whose first turn is flushed to its log, and the fsyncs since."""

    harness: Harness
    root: Path
    backend: SessionPersistenceJsonl
    agent: Agent
    syncs: list[int]

    @property
    def id(self) -> str:
        return self.agent.session.header.id


@contextlib.asynccontextmanager
async def stored_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **config: object) -> AsyncIterator[Stored]:
    """:class:`Stored` over ``tmp_path / "sessions"`` with the backend's ``config`` added; ``syncs`` empty at entry."""
    root = tmp_path / "sessions"
    syncs = counting_fsyncs(monkeypatch)
    async with Harness([text_response("hello")], invariants_plugin=False) as h:
        backend = (await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root), **config})).instance
        assert isinstance(backend, SessionPersistenceJsonl)
        agent = h.agent()
        agent.send([{"type": "text", "text": "hi"}])
        await agent.when_idle()
        await h.ctx.parallel(SESSION_FLUSH, agent.session)
        syncs.clear()
        yield Stored(h, root, backend, agent, syncs)


async def test_a_checkpoint_of_a_stored_log_is_written_before_the_listener_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stored_turn(tmp_path, monkeypatch) as it:
        note(it.agent.session, "x")
        assert it.backend.coordinator.checkpoint(it.agent.session) is None
        assert types_of(on_disk(it.root, it.id))[-1] == "context/message"
        assert it.syncs == []


async def test_a_checkpoint_due_for_an_fsync_is_chained_and_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stored_turn(tmp_path, monkeypatch, syncIntervalMs=0) as it:
        note(it.agent.session, "x")
        pending = it.backend.coordinator.checkpoint(it.agent.session)
        assert isinstance(pending, asyncio.Task)
        await pending
        assert types_of(on_disk(it.root, it.id))[-1] == "context/message"
        assert len(it.syncs) == 1


async def test_a_long_run_of_events_reaches_the_file_a_batch_at_a_time_before_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stored_turn(tmp_path, monkeypatch) as it:
        stored = len(on_disk(it.root, it.id))
        count = EARLY_WRITE * 2 + 3
        for n in range(count):
            note(it.agent.session, f"note {n}")
        # the flush left the buffer empty: every event through the last batch boundary of the id's phase is
        # written (two boundaries at least in two batches and three), the events after it wait
        last = max(
            seq for seq in range(stored, stored + count) if (seq + 1 + early_write_phase(it.id)) % EARLY_WRITE == 0
        )
        assert last >= stored + EARLY_WRITE
        assert len(on_disk(it.root, it.id)) == last + 1
        assert it.syncs == []  # unsynced writes: the turn's flush makes them durable
        await it.harness.ctx.parallel(SESSION_FLUSH, it.agent.session)
        assert len(on_disk(it.root, it.id)) == stored + count
