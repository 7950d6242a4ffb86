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


def test_a_collected_key_takes_its_entry_out_of_the_table() -> None:
    """The weak reference's callback drops the entry, so a later object reusing the id finds nothing."""
    table: ObjectTable[Plain, str] = ObjectTable()
    key = Plain()
    table[key] = "first"
    table[key] = "second"
    assert (len(table), table.get(key)) == (1, "second")

    del key
    gc.collect()

    assert len(table) == 0
    assert table.get(Plain()) is None


def test_a_callback_arriving_after_the_table_is_gone_does_nothing() -> None:
    """The callback holds the table weakly (no reference cycle), so it survives outliving the table."""
    table: ObjectTable[Plain, str] = ObjectTable()
    key = Plain()
    table[key] = "state"
    reference = table._entries[id(key)][0]  # kept alive past the table, so its callback still runs
    watcher = weakref.ref(table)

    del table
    assert watcher() is None
    del key
    gc.collect()

    assert isinstance(reference, weakref.ref)
    assert reference() is None
