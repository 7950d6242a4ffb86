"""JSON values (SPEC §3.2): is_json_value, check_json, dumps_json."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.session import NotJsonError, dumps_json, is_json_value
from dsh.core.session.jsonvalue import check_json


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Ratio(float):
    pass


class FrozenDict(dict[str, Any]):
    """Like the invariants plugin's frozen mapping: a dict subclass that refuses writes."""

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("frozen")


class FrozenList(list[Any]):
    def append(self, value: Any) -> None:
        raise TypeError("frozen")


def _cyclic_list() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


def _cyclic_dict() -> dict[str, Any]:
    node: dict[str, Any] = {"a": 1}
    node["self"] = {"inner": [node]}
    return node


NOT_JSON: list[tuple[str, Any]] = [
    ("tuple (for a bigint/sparse array)", (1, 2)),
    ("set (for Map/Set)", {1, 2}),
    ("frozenset", frozenset()),
    ("bytes", b"x"),
    ("bytearray", bytearray(b"x")),
    ("object (for a symbol/class instance)", object()),
    ("function", lambda: None),
    ("NaN", float("nan")),
    ("Infinity", float("inf")),
    ("-Infinity", float("-inf")),
    ("complex", 1j),
    ("enum member that is not a str/int", Color.RED),
    ("non-str key", {1: "a"}),
    ("None key (for undefined)", {None: "a"}),
    ("tuple key", {(1,): "a"}),
    ("nested function", {"a": [1, {"b": print}]}),
    ("dense list with a bad item", [1, 2, (3,)]),
    ("cyclic list", _cyclic_list()),
    ("cyclic dict", _cyclic_dict()),
    ("non-finite float subclass", Ratio("nan")),
]


@pytest.mark.parametrize(("label", "value"), NOT_JSON, ids=[label for label, _ in NOT_JSON])
def test_rejects_every_non_json_value(label: str, value: Any) -> None:
    """Python mapping of the JS cases: tuples, sets, bytes, objects, NaN/inf, non-str keys, cycles."""
    assert is_json_value(value) is False
    with pytest.raises(NotJsonError, match="not a JSON value"):
        check_json(value)
    with pytest.raises(NotJsonError):
        check_json({"wrapped": [value]})


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -7, 2**70, 1.5, -0.0, "", "ünïcødé ✓", [], {}, [None, [True, {"a": [1.25]}]]],
)
def test_accepts_plain_json_values(value: Any) -> None:
    assert is_json_value(value) is True
    check_json(value)


def test_accepts_the_same_object_twice_without_a_cycle() -> None:
    shared = {"x": [1, 2]}
    value: Any = {"a": shared, "b": [shared, shared]}
    assert is_json_value(value)
    check_json(value)


def test_accepts_dict_and_list_subclasses() -> None:
    frozen = FrozenDict(a=FrozenList([1, FrozenDict(b="c")]))
    ordered = OrderedDict([("z", 1), ("a", 2)])
    assert is_json_value(frozen)
    assert is_json_value({"frozen": frozen, "ordered": ordered})
    assert is_json_value(FrozenList([FrozenDict(x=FrozenList([0.5]))]))
    with pytest.raises(NotJsonError, match=r"\$\[0\]\.bad"):
        check_json(FrozenList([FrozenDict(bad={1})]))


def test_accepts_str_int_float_subclasses() -> None:
    value: Any = {Name("key"): [Name("v"), Level.HIGH, Ratio(0.5)], "top": Level.HIGH}
    assert is_json_value(value)
    assert is_json_value([Level.HIGH])
    assert is_json_value(Name("top"))
    assert is_json_value(Ratio(1.5))


def test_not_json_error_names_the_path_and_the_reason() -> None:
    with pytest.raises(NotJsonError) as caught:
        check_json({"data": {"content": [{"ok": 1}, {"weird key": float("inf")}]}})
    error = caught.value
    assert error.path == '$.data.content[1]["weird key"]'
    assert error.reason == "non-finite number inf"
    assert str(error) == 'not a JSON value at $.data.content[1]["weird key"]: non-finite number inf'
    assert isinstance(error, ValueError)
    assert isinstance(error, HarnessError)
    assert error.code == "NOT_JSON"


def test_not_json_error_at_the_root_and_for_keys_and_cycles() -> None:
    with pytest.raises(NotJsonError) as root_error:
        check_json((1,))
    assert root_error.value.path == "$"
    assert "tuple" in root_error.value.reason
    with pytest.raises(NotJsonError) as key_error:
        check_json({"a": {2: "x"}})
    assert key_error.value.path == "$.a"
    assert "non-string key 2" in key_error.value.reason
    with pytest.raises(NotJsonError) as cycle_error:
        check_json(_cyclic_dict())
    assert cycle_error.value.path == "$.self.inner[0]"
    assert "cycle" in cycle_error.value.reason
    with pytest.raises(NotJsonError) as list_cycle:
        check_json(_cyclic_list())
    assert list_cycle.value.path == "$[1]"
    with pytest.raises(NotJsonError) as custom:
        check_json([object()])
    assert "builtins.object object" in custom.value.reason


def test_not_json_error_defaults_its_reason_to_the_message() -> None:
    error = NotJsonError("plain message")
    assert error.reason == "plain message"
    assert error.path == "$"


def test_nesting_deeper_than_the_recursion_limit_is_rejected() -> None:
    value: list[Any] = []
    for _ in range(5_000):
        value = [value]
    assert is_json_value(value) is False
    with pytest.raises(NotJsonError, match="nesting too deep"):
        check_json(value)


def test_a_rejected_value_does_not_poison_the_next_check() -> None:
    shared = [1]
    assert not is_json_value([shared, shared, (2,)])
    assert is_json_value([shared, shared])


def test_dumps_json_is_compact_utf8_and_key_ordered() -> None:
    value = {"z": 1, "a": ["ü", {"k": None}], "f": 1.5, "b": True}
    assert dumps_json(value) == '{"z":1,"a":["ü",{"k":null}],"f":1.5,"b":true}'


def test_dumps_json_refuses_nan() -> None:
    with pytest.raises(ValueError):
        dumps_json({"x": math.nan})


def test_dumps_json_refuses_non_json_types_and_cycles() -> None:
    """TypeError names the type; a cycle exceeds the recursion limit (no cycle bookkeeping)."""
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        dumps_json({"x": object()})
    with pytest.raises(RecursionError):
        dumps_json(_cyclic_list())


def test_dumps_json_writes_subclasses_as_their_plain_values() -> None:
    value = {Name("k"): [Level.HIGH, Ratio(0.5), FrozenDict(a=FrozenList([True]))]}
    assert dumps_json(value) == '{"k":[3,0.5,{"a":[true]}]}'
    assert dumps_json("top") == '"top"'


def test_dumps_json_serves_several_threads_at_once() -> None:
    """The shared encoder keeps no per-call state, so concurrent calls do not interfere."""
    values = [{"n": number, "items": [{"deep": [number] * 50}] * 20} for number in range(64)]
    expected = [json.dumps(value, ensure_ascii=False, separators=(",", ":")) for value in values]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(dumps_json, values)) == expected


def test_check_json_accepts_json_and_subclasses_and_changes_nothing() -> None:
    frozen = FrozenDict(a=FrozenList([1, FrozenDict(b="c")]))
    value: Any = {"plain": [1, 2.5, None, True, "s", {"k": []}], "frozen": frozen, Name("key"): Level.HIGH}
    check_json(value)
    check_json(1.5)
    check_json(frozen)
    assert value["frozen"] is frozen
    assert type(next(iter(value.keys() - {"plain", "frozen"}))) is Name
    with pytest.raises(NotJsonError, match="nesting too deep"):
        check_json(_deep(5_000))


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=25,
)


@settings(deadline=None)
@given(json_values)
def test_property_every_json_value_is_accepted_and_serializes_back_equal(value: Any) -> None:
    """Every JSON value is accepted and dumps_json writes it back equal."""
    assert is_json_value(value)
    check_json(value)
    assert json.loads(dumps_json(value)) == value


bad_leaves = st.sampled_from([(1,), {1}, b"b", float("nan"), float("inf"), object()])


@settings(deadline=None)
@given(json_values, bad_leaves, st.data())
def test_property_one_bad_leaf_anywhere_is_rejected(value: Any, bad: Any, data: st.DataObject) -> None:
    """Planting a non-JSON value at any container position makes the whole value non-JSON."""
    containers: list[Any] = [item for item in _walk(value) if isinstance(item, dict | list)]
    if not containers:
        value = [value]
        containers = [value]
    target = data.draw(st.sampled_from(containers))
    if isinstance(target, dict):
        target["planted"] = bad
    else:
        target.append(bad)
    assert not is_json_value(value)
    with pytest.raises(NotJsonError):
        check_json(value)


def _walk(value: Any) -> list[Any]:
    out = [value]
    if isinstance(value, dict):
        for item in value.values():
            out.extend(_walk(item))
    elif isinstance(value, list):
        for item in value:
            out.extend(_walk(item))
    return out
