"""gc-tuning on a real kernel: it freezes what was booted, sets the thresholds, and undoes both on unload."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.kernel import ConfigError, Context, load_tree
from dsh.plugins import gc_tuning


class Node:
    """A cyclic-garbage candidate the collector tracks."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def clean_collector() -> Iterator[tuple[int, int, int]]:
    """Each test starts and must end with the process's own thresholds and nothing frozen."""
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    gc.unfreeze()  # whatever an earlier test of this worker froze: the counts below are this test's
    assert not gc_tuning.TUNINGS.active
    yield before
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert not gc_tuning.TUNINGS.active
    if frozen_before:
        gc.freeze()


def _tracked(thing: object) -> bool:
    """Whether a collection would scan ``thing`` (frozen objects are in no generation)."""
    return any(other is thing for other in gc.get_objects())


async def test_a_tree_entry_freezes_the_boot_and_sets_the_default_thresholds(
    tmp_path: Path, clean_collector: tuple[int, int, int]
) -> None:
    booted = Node()
    tree = tmp_path / "tree.yml"
    tree.write_text("- {id: gc, name: gc-tuning}\n")
    root = Context()
    await load_tree(root, tree)
    assert gc.get_threshold() == gc_tuning.DEFAULT_THRESHOLDS
    assert gc.get_freeze_count() > 0
    assert not _tracked(booted)  # alive before the plugin started: frozen, never scanned again
    later = Node()
    assert _tracked(later)
    await root.dispose()
    assert gc.get_threshold() == clean_collector
    assert _tracked(booted)  # unfrozen: back in the oldest generation


async def test_garbage_made_after_the_freeze_is_still_collected() -> None:
    root = Context()
    await root.plugin(gc_tuning, {"thresholds": [5000, 5, 5]})
    assert gc.get_threshold() == (5000, 5, 5)
    cycle = Node()
    gone: list[bool] = []
    probe = weakref.ref(cycle, lambda _ref: gone.append(True))
    del cycle
    assert probe() is not None  # a cycle: reference counting alone does not free it
    gc.collect()
    assert gone == [True]
    await root.dispose()


async def test_without_freeze_only_the_thresholds_change(clean_collector: tuple[int, int, int]) -> None:
    root = Context()
    booted = Node()
    await root.plugin(gc_tuning, {"freeze": False, "thresholds": [1000, 10, 10]})
    assert gc.get_threshold() == (1000, 10, 10)
    assert gc.get_freeze_count() == 0
    assert _tracked(booted)
    await root.dispose()
    assert gc.get_threshold() == clean_collector


async def test_two_loads_the_latest_applies_and_the_last_unload_restores(
    clean_collector: tuple[int, int, int],
) -> None:
    first, second = Context(), Context()
    await first.plugin(gc_tuning, {"thresholds": [3000, 10, 10]})
    await second.plugin(gc_tuning, {"freeze": False, "thresholds": [4000, 10, 10]})
    assert gc.get_threshold() == (4000, 10, 10)
    await second.dispose()
    assert gc.get_threshold() == (3000, 10, 10)
    second = Context()
    await second.plugin(gc_tuning, {"thresholds": [4000, 10, 10]})
    await first.dispose()  # out of order: the one still loaded keeps its thresholds and the freeze
    assert gc.get_threshold() == (4000, 10, 10)
    assert gc.get_freeze_count() > 0
    await second.dispose()
    assert gc.get_threshold() == clean_collector


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ([0, 10, 10], "greater than 0"),
        ([700, 10], r"thresholds\.2: Field required"),
        (["many", 10, 10], "valid integer"),
    ],
)
async def test_bad_thresholds_are_refused_before_anything_changes(
    thresholds: list[object], message: str, clean_collector: tuple[int, int, int]
) -> None:
    root = Context()
    with pytest.raises(ConfigError, match=message):
        await root.plugin(gc_tuning, {"thresholds": thresholds})
    assert gc.get_threshold() == clean_collector
    await root.dispose()
