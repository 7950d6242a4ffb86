"""Leases: one fenced writer per session, across processes and hosts (owner, epoch, expiry).

A backend instance writes a session only under its lease, a row of the store's
``leases`` table: ``session_id``, ``owner`` (a token unique to the instance),
``holder`` (its name in a refusal: ``dsh pid <pid> on <host>``), ``epoch`` (raised by
every takeover) and ``expires_at`` (the server's clock, so hosts' clocks never
matter).

* **Claim** (before a session is read to resume, adopted, created or deleted): the
  row is inserted, or taken over when it has expired; a live lease of another owner
  refuses the claim with ``SESSION_LOCKED`` naming its holder.
* **Fence**: every write transaction first renews the lease *for the epoch it was
  claimed with*, in the same transaction; when the row no longer says so (another
  writer took the session over after this one's lease expired) the transaction
  writes nothing and fails with ``LEASE_LOST``. The renewal locks the row until the
  commit, so a takeover cannot slip between the check and the write.
* **Renewal**: while the instance lives it renews all its leases every third of the
  lease time (:meth:`Leases.renew_all`), so an idle session stays claimed; a process
  that hangs or is partitioned stops renewing and loses its sessions once their
  leases expire. A crashed process leaves its leases until they expire.
* **Release**: retiring a session (its live owner is gone) deletes its lease row, and
  closing the backend deletes the rest, so the next claimant need not wait for the
  expiry.

Every call takes a connection (or cursor) the caller owns; driver errors propagate.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from dsh.core.persistence import PersistenceError


class Leases:
    """The session leases of one backend instance over the tables of ``schema``."""

    def __init__(self, schema: str, holder: str, ttl_s: float) -> None:
        self.holder = holder
        self.ttl_s = ttl_s
        self.owner = uuid.uuid4().hex
        self.held: dict[str, int] = {}
        """The epoch of each session this instance claimed."""
        table = f'"{schema}".leases'
        self._claim = (
            f"INSERT INTO {table} AS lease (session_id, owner, holder, epoch, expires_at) "
            "VALUES (%(id)s, %(owner)s, %(holder)s, 1, now() + make_interval(secs => %(ttl)s)) "
            "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, holder = excluded.holder, "
            "epoch = lease.epoch + 1, expires_at = excluded.expires_at "
            "WHERE lease.expires_at < now() OR lease.owner = excluded.owner "
            "RETURNING epoch"
        )
        self._holder = f"SELECT holder FROM {table} WHERE session_id = %s"
        self._fence = (
            f"UPDATE {table} SET expires_at = now() + make_interval(secs => %s) "
            "WHERE session_id = %s AND owner = %s AND epoch = %s"
        )
        self._renew = (
            f"UPDATE {table} SET expires_at = now() + make_interval(secs => %s) WHERE owner = %s RETURNING session_id"
        )
        self._release = f"DELETE FROM {table} WHERE owner = %s"
        self._release_one = f"DELETE FROM {table} WHERE session_id = %s AND owner = %s"

    async def claim(self, db: psycopg.AsyncConnection[tuple[Any, ...]], id: str) -> None:
        """Claim the lease of ``id`` (not held by this instance), or raise ``SESSION_LOCKED`` naming the holder."""
        params = {"id": id, "owner": self.owner, "holder": self.holder, "ttl": self.ttl_s}
        cursor = await db.execute(self._claim, params)
        row = await cursor.fetchone()
        if row is None:
            cursor = await db.execute(self._holder, (id,))
            names = [holder for (holder,) in await cursor.fetchall()]
            raise PersistenceError(
                f'session "{id}" is in use by another dsh process ({names[0] if names else "holder unknown"}); '
                "wait for it to finish or stop it, then try again",
                "SESSION_LOCKED",
            )
        self.held[id] = row[0]

    async def fence(self, db: psycopg.AsyncConnection[tuple[Any, ...]], id: str) -> None:
        """Renew the lease of ``id`` in the caller's transaction, or raise ``LEASE_LOST``."""
        cursor = await db.execute(self._fence, (self.ttl_s, id, self.owner, self.held.get(id)))
        if cursor.rowcount != 1:
            self.held.pop(id, None)
            raise PersistenceError(
                f'session "{id}" was taken over by another writer after this process\'s lease expired; '
                "this process stopped writing it: resume the session again to continue it",
                "LEASE_LOST",
            )

    async def renew_all(self, db: psycopg.AsyncConnection[tuple[Any, ...]]) -> list[str]:
        """Renew every lease this instance holds; return the ids whose lease was lost meanwhile."""
        cursor = await db.execute(self._renew, (self.ttl_s, self.owner))
        kept = {id for (id,) in await cursor.fetchall()}
        lost = [id for id in self.held if id not in kept]
        for id in lost:
            del self.held[id]
        return lost

    async def release_one(self, db: psycopg.AsyncConnection[tuple[Any, ...]], id: str) -> None:
        """Give up the lease of ``id`` (a row of another owner stays: nothing happens to a lease this one lost)."""
        self.held.pop(id, None)
        await db.execute(self._release_one, (id, self.owner))

    async def release(self, db: psycopg.AsyncConnection[tuple[Any, ...]]) -> None:
        """Give up every lease this instance holds."""
        self.held.clear()
        await db.execute(self._release, (self.owner,))
