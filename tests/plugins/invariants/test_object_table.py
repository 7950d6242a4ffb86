"""ObjectTable: per-object state that does not keep weakly-referable keys alive."""

from __future__ import annotations

import gc
import weakref

from dsh.plugins.invariants.object_table import ObjectTable


class Plain:
    pass


class Slotted:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def test_entries_of_weakly_referable_keys_vanish_with_the_key() -> None:
    """A collected key takes its state with it."""
    table: ObjectTable[Plain, str] = ObjectTable()
    key = Plain()
    table[key] = "state"
    assert table.get(key) == "state"

    watcher = weakref.ref(key)

    del key
    gc.collect()

    assert watcher() is None


def test_keys_without_weak_reference_support_are_kept_by_identity() -> None:
    """Slotted keys work too; two equal-looking keys never share state."""
    table: ObjectTable[Slotted, int] = ObjectTable()
    first, second = Slotted("same"), Slotted("same")

    table[first] = 1
    assert table.get(first) == 1
    assert table.get(second) is None
    table[second] = 2
    table[first] = 3

    assert (table.get(first), table.get(second)) == (3, 2)


def test_a_missing_weakly_referable_key_reads_as_none() -> None:
    """get() of an unknown key is None, not an error."""
    table: ObjectTable[Plain, int] = ObjectTable()

    assert table.get(Plain()) is None
