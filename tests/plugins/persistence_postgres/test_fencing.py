"""Two writers over one PostgreSQL store, in random interleavings: the lease decides who writes, nothing interleaves.

Each example runs a random sequence of resumes, appends and lease expiries (the holder "hangs": its lease is
made stale in the database) by two backend instances on one session, against a model of the lease: who owns
it, whether it expired, which instance still believes it holds it. Every operation must succeed or fail
exactly as the model says (``SESSION_LOCKED`` for a claim against a live lease, ``LEASE_LOST`` for a write by
an instance that was taken over), and the stored log must be exactly the successful appends, in order, with
contiguous seqs.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.persistence import SESSION_PERSISTENCE, PersistenceError, data_text
from dsh.core.session import SessionEvent, SessionStore
from dsh.kernel import Context
from dsh.plugins.persistence_postgres import SessionPersistencePostgres
from tests.core.persistence.helpers import CWD, meta, one_turn_log, seqs, short_turn, texts
from tests.plugins.persistence_postgres.cluster import Cluster
from tests.plugins.persistence_postgres.conftest import raw

_ids = itertools.count()
T = TypeVar("T")

Op = tuple[str, int]
OPS = st.lists(
    st.sampled_from([("resume", 0), ("resume", 1), ("append", 0), ("append", 1), ("expire", 0)]), max_size=14
)


@dataclass
class Model:
    """What the lease says: the owner (an instance index), whether its lease expired, who believes it holds."""

    owner: int | None = None
    expired: bool = False
    held: list[bool] = field(default_factory=lambda: [False, False])
    view: list[int | None] = field(default_factory=lambda: [None, None])
    log: list[SessionEvent] = field(default_factory=list)


async def attempt(awaitable: Awaitable[T]) -> tuple[T | None, str | None]:
    """The result of ``awaitable`` and None, or None and the code of the PersistenceError it raised."""
    try:
        return await awaitable, None
    except PersistenceError as error:
        return None, error.code


async def _play(url: str, schema: str, ops: list[Op]) -> None:
    id = f"p{next(_ids)}"
    contexts = [Context(), Context()]
    try:
        for ctx in contexts:
            await ctx.plugin(SessionStore)
            await ctx.plugin(SessionPersistencePostgres, {"url": url, "pg_schema": schema})
        stores = [ctx[SESSION_PERSISTENCE] for ctx in contexts]
        model = Model(log=one_turn_log())
        seed = Context()
        await seed.plugin(SessionStore)
        await seed.plugin(SessionPersistencePostgres, {"url": url, "pg_schema": schema})
        await seed[SESSION_PERSISTENCE].create(meta(id, CWD))
        await seed[SESSION_PERSISTENCE].append(id, model.log)
        await seed.dispose()
        for kind, writer in ops:
            if kind == "expire":
                with raw(url) as db:
                    db.execute(f"UPDATE \"{schema}\".leases SET expires_at = now() - interval '1 second'")
                model.expired = model.owner is not None
            elif kind == "resume":
                may = model.held[writer] or model.owner is None or model.expired
                loaded, code = await attempt(stores[writer].load(id))
                assert code == (None if may else "SESSION_LOCKED"), f"resume by {writer}: {code}, model {model}"
                if loaded is None:
                    continue
                if not model.held[writer]:
                    model.owner, model.expired, model.held[writer] = writer, False, True
                assert texts(loaded.events) == texts(model.log)
                model.view[writer] = len(loaded.events)
            else:
                cursor = model.view[writer]
                if cursor is None:
                    continue
                batch = short_turn(len(model.log), cursor)
                _none, code = await attempt(stores[writer].append(id, batch))
                owns = model.owner == writer
                assert code == (None if owns else "LEASE_LOST"), f"append by {writer}: {code}, model {model}"
                if not owns:
                    model.held[writer] = False
                    continue
                model.log += batch
                model.view[writer] = cursor + len(batch)
                model.expired = False  # every write renews the lease
        with raw(url) as db:  # the last owner may hold a live lease: read the rows themselves
            stored = db.execute(
                f'SELECT seq, data FROM "{schema}".events WHERE session_id = %s ORDER BY seq', (id,)
            ).fetchall()
        assert seqs(model.log) == list(range(len(model.log)))
        assert stored == [(item.seq, data_text(item)) for item in model.log]
    finally:
        for ctx in contexts:
            await ctx.dispose()


@settings(max_examples=30, deadline=None)
@given(ops=OPS)
def test_random_interleavings_of_two_writers_never_interleave_the_log(cluster: Cluster, ops: list[Op]) -> None:
    asyncio.run(_play(cluster.url(), "fencing", ops))


def test_a_scripted_takeover_interleaving(cluster: Cluster) -> None:
    """(the interleaving of the issue: A writes, hangs, B takes over and writes, A's write is refused)"""
    script: list[Any] = [("resume", 0), ("append", 0), ("resume", 1), ("expire", 0), ("resume", 1), ("append", 1)]
    asyncio.run(_play(cluster.url(), "fencing", [*script, ("append", 0), ("resume", 0), ("append", 1)]))
