"""State attached to objects, held weakly whenever the object allows it."""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ObjectTable(Generic[K, V]):
    """A map from objects to per-object state that tries not to keep them alive.

    Keys whose type supports weak references are held weakly (a
    ``WeakKeyDictionary``): the entry vanishes with the object. Keys that cannot be
    weakly referenced (a class with ``__slots__`` but no ``__weakref__``) are held
    strongly, by identity, until the table itself is dropped. O(1) per lookup.
    """

    __slots__ = ("_strong", "_weak")

    def __init__(self) -> None:
        self._weak: weakref.WeakKeyDictionary[K, V] = weakref.WeakKeyDictionary()
        self._strong: dict[int, tuple[K, V]] = {}

    def get(self, key: K) -> V | None:
        """The state stored for ``key``, or None."""
        if type(key).__weakrefoffset__:
            return self._weak.get(key)
        entry = self._strong.get(id(key))
        return None if entry is None else entry[1]

    def __setitem__(self, key: K, value: V) -> None:
        if type(key).__weakrefoffset__:
            self._weak[key] = value
        else:
            self._strong[id(key)] = (key, value)
