"""State attached to objects, held weakly whenever the object allows it."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ObjectTable(Generic[K, V]):
    """A map from objects to per-object state that tries not to keep them alive.

    Entries are found by the key's identity (``id``), so a lookup is one dict probe:
    it runs for every logged event. A key whose type supports weak references is
    held weakly, and its entry leaves the table when the key is collected (the weak
    reference's callback runs before the key's memory, hence its ``id``, can be
    reused). A key that cannot be weakly referenced (a class with ``__slots__`` but no
    ``__weakref__``) is held strongly until the table itself is dropped.
    """

    __slots__ = ("__weakref__", "_entries")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[object, V]] = {}

    def get(self, key: K) -> V | None:
        """The state stored for ``key``, or None."""
        entry = self._entries.get(id(key))
        return None if entry is None else entry[1]

    def __setitem__(self, key: K, value: V) -> None:
        marker = id(key)
        entry = self._entries.get(marker)
        if entry is not None:
            self._entries[marker] = (entry[0], value)
        elif type(key).__weakrefoffset__:
            self._entries[marker] = (weakref.ref(key, _forget(weakref.ref(self), marker)), value)
        else:
            self._entries[marker] = (key, value)

    def __len__(self) -> int:
        return len(self._entries)


def _forget(table: weakref.ref[ObjectTable[Any, Any]], marker: int) -> Callable[[object], None]:
    """The weak-reference callback dropping entry ``marker`` (it holds the table weakly: no cycle)."""

    def forget(_reference: object) -> None:
        owner = table()
        if owner is not None:
            owner._entries.pop(marker, None)

    return forget
