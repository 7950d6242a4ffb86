"""FrozenDict / FrozenList / deep_freeze: immutable, JSON-transparent, cheap to copy."""

from __future__ import annotations

import copy
import json
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.core.session import is_json_value, json_snapshot
from dsh.plugins.invariants import FrozenDict, FrozenList, deep_freeze
from dsh.plugins.invariants.freeze import freeze_data

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=25,
)


def containers(value: Any) -> list[Any]:
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


@given(json_values)
def test_freezing_keeps_the_json_value_and_leaves_no_mutable_container(value: Any) -> None:
    """A frozen value equals the original, serializes identically and holds only frozen containers."""
    frozen = deep_freeze(value)

    assert frozen == value
    assert json.dumps(frozen, ensure_ascii=False) == json.dumps(value, ensure_ascii=False)
    assert all(type(item) in (FrozenDict, FrozenList) for item in containers(frozen))
    assert is_json_value(frozen)


@given(json_values)
def test_freezing_is_idempotent_and_free_the_second_time(value: Any) -> None:
    """deep_freeze of a deeply frozen value returns that very object."""
    frozen = deep_freeze(value)

    assert deep_freeze(frozen) is frozen


@given(json_values)
def test_copies_of_frozen_values_are_plain_and_independent(value: Any) -> None:
    """deepcopy / json_snapshot / pickle give plain mutable containers equal to the original."""
    frozen = deep_freeze(value)

    for copied in (copy.deepcopy(frozen), json_snapshot(frozen), pickle.loads(pickle.dumps(frozen))):
        assert copied == value
        assert all(type(item) in (dict, list) for item in containers(copied))


def test_shallow_copies_are_plain() -> None:
    """copy.copy and .copy() hand back ordinary containers holding the same children."""
    frozen = deep_freeze({"a": [1, {"b": 2}]})

    for shallow in (copy.copy(frozen), frozen.copy()):
        assert type(shallow) is dict
        shallow["c"] = 3
        assert shallow["a"] is frozen["a"]
    assert type(copy.copy(frozen["a"])) is list
    assert type(frozen["a"][:]) is list
    assert "c" not in frozen


DICT_MUTATIONS: dict[str, Callable[[dict[str, Any]], object]] = {
    "setitem": lambda d: d.__setitem__("k", 1),
    "delitem": lambda d: d.__delitem__("a"),
    "ior": lambda d: d.__ior__({"k": 1}),
    "clear": lambda d: d.clear(),
    "pop": lambda d: d.pop("a"),
    "popitem": lambda d: d.popitem(),
    "setdefault": lambda d: d.setdefault("k", 1),
    "update": lambda d: d.update(k=1),
}

LIST_MUTATIONS: dict[str, Callable[[list[Any]], object]] = {
    "setitem": lambda items: items.__setitem__(0, 9),
    "setslice": lambda items: items.__setitem__(slice(0, 1), [9]),
    "delitem": lambda items: items.__delitem__(0),
    "iadd": lambda items: items.__iadd__([9]),
    "imul": lambda items: items.__imul__(2),
    "append": lambda items: items.append(9),
    "clear": lambda items: items.clear(),
    "extend": lambda items: items.extend([9]),
    "insert": lambda items: items.insert(0, 9),
    "pop": lambda items: items.pop(),
    "remove": lambda items: items.remove(1),
    "reverse": lambda items: items.reverse(),
    "sort": lambda items: items.sort(),
}


@pytest.mark.parametrize("mutation", sorted(DICT_MUTATIONS))
def test_every_dict_mutator_raises_and_changes_nothing(mutation: str) -> None:
    """Each dict mutator raises TypeError naming the fix; the dict is unchanged."""
    frozen = deep_freeze({"a": 1, "b": 2})

    with pytest.raises(TypeError, match=r"FrozenDict is logged session history.*copy\.deepcopy"):
        DICT_MUTATIONS[mutation](frozen)
    assert frozen == {"a": 1, "b": 2}


@pytest.mark.parametrize("mutation", sorted(LIST_MUTATIONS))
def test_every_list_mutator_raises_and_changes_nothing(mutation: str) -> None:
    """Each list mutator raises TypeError naming the fix; the list is unchanged."""
    frozen = deep_freeze([2, 1, 3])

    with pytest.raises(TypeError, match="FrozenList is logged session history"):
        LIST_MUTATIONS[mutation](frozen)
    assert frozen == [2, 1, 3]


def test_augmented_assignment_on_a_frozen_list_raises() -> None:
    """``items += [...]`` is a mutation too."""
    holder = {"items": deep_freeze([1])}

    with pytest.raises(TypeError):
        holder["items"] += [2]


def test_shared_sub_structures_stay_shared_and_cycles_survive() -> None:
    """A child reachable twice is frozen once; a cycle maps onto itself."""
    shared = {"x": 1}
    cyclic: list[Any] = [shared, shared]
    cyclic.append(cyclic)

    frozen = deep_freeze(cyclic)

    assert frozen[0] is frozen[1]
    assert frozen[2] is frozen
    assert isinstance(frozen[0], FrozenDict)
    rebuilt = copy.deepcopy(frozen)
    assert rebuilt[2] is rebuilt
    assert type(rebuilt) is list


def test_a_frozen_container_with_a_mutable_child_is_rebuilt() -> None:
    """An outer frozen container is not trusted: its mutable descendants get frozen too."""
    child = [1]
    outer = FrozenDict({"child": child, "done": deep_freeze({"y": 2})})

    frozen = deep_freeze(outer)

    assert frozen is not outer
    assert isinstance(frozen["child"], FrozenList)
    assert frozen["done"] is outer["done"]
    nested = FrozenList([child])
    assert deep_freeze(nested) is not nested


def test_other_objects_pass_through_untouched() -> None:
    """Scalars and non-JSON objects are returned as they are (freezing only touches dict/list)."""
    marker = object()
    pair = (1, [2])

    assert deep_freeze(marker) is marker
    assert deep_freeze(pair) is pair
    assert deep_freeze("text") == "text"
    assert deep_freeze(None) is None


def test_a_frozen_child_reached_twice_is_checked_once() -> None:
    """A deeply frozen container shared inside a frozen list is returned itself, both times."""
    shared = deep_freeze({"k": [1]})
    outer = FrozenList([shared, shared])

    assert deep_freeze(outer) is outer
    mixed = [shared, OrderedDict(a=[2]), (3,)]
    frozen = deep_freeze(mixed)
    assert frozen[0] is shared
    assert type(frozen[1]) is FrozenDict
    assert type(frozen[1]["a"]) is FrozenList
    assert frozen[2] is mixed[2]


@given(json_values)
def test_freeze_data_gives_what_deep_freeze_gives(value: Any) -> None:
    """freeze_data (the plain-tree fast path) is equal to deep_freeze and leaves nothing mutable."""
    frozen = freeze_data(value)

    assert frozen == deep_freeze(value) == value
    assert all(type(item) in (FrozenDict, FrozenList) for item in containers(frozen))


def test_freeze_data_hands_anything_unusual_to_deep_freeze() -> None:
    """Frozen children, other objects, subclasses and cycles take the memo walk."""
    done = deep_freeze({"y": 2})
    with_frozen = freeze_data({"a": [1, done]})
    assert with_frozen["a"][1] is done
    assert freeze_data({"b": done})["b"] is done
    pair = (1, 2)
    assert freeze_data([{"pair": pair}])[0]["pair"] is pair
    assert freeze_data({"list": [pair]})["list"][0] is pair
    assert type(freeze_data([OrderedDict(z=1)])[0]) is FrozenDict
    cyclic: dict[str, Any] = {"items": []}
    cyclic["items"].append(cyclic)
    frozen = freeze_data(cyclic)
    assert frozen["items"][0] is frozen
    assert freeze_data("text") == "text"
    assert freeze_data(None) is None
    assert freeze_data(done) is done


def test_freeze_data_freezes_shared_plain_children_as_equal_twins() -> None:
    """Without the memo a shared plain child may be frozen twice: equal, both immutable."""
    shared = {"x": [1]}
    frozen = freeze_data({"a": shared, "b": shared})

    assert frozen["a"] == frozen["b"] == shared
    assert type(frozen["a"]) is FrozenDict
    assert type(frozen["b"]["x"]) is FrozenList
