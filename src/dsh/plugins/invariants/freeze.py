"""Immutable JSON containers, so any mutation of logged history fails loudly (SPEC §13).

:class:`FrozenDict` and :class:`FrozenList` subclass ``dict`` and ``list``: they
serialize with ``json.dumps``, pass ``isinstance(x, dict | list)`` checks and read
like the originals, but every mutator raises ``TypeError``. Copies (``copy.copy``,
``copy.deepcopy``, ``.copy()``, slicing, pickling) are plain mutable containers,
because a copy belongs to whoever made it.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn


def _refuse(container: object, *_args: object, **_kwargs: object) -> NoReturn:
    raise TypeError(
        f"{type(container).__name__} is logged session history and cannot be changed: "
        "copy it (copy.deepcopy) and change the copy"
    )


class FrozenDict(dict[str, Any]):
    """A ``dict`` whose mutators raise ``TypeError``; see the module docstring."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        memo[id(self)] = result
        for key, value in dict.items(self):
            result[key] = copy.deepcopy(value, memo)
        return result

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` whose mutators raise ``TypeError``; see the module docstring."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    clear = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    reverse = _refuse
    sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        result: list[Any] = []
        memo[id(self)] = result
        for item in list.__iter__(self):
            result.append(copy.deepcopy(item, memo))
        return result

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _freeze(value: object, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, dict):
        marker = id(value)
        done = memo.get(marker)
        if done is not None:
            return done
        frozen_dict = FrozenDict()
        memo[marker] = frozen_dict  # registered before the walk: a cycle finds it
        entries: dict[str, Any] = {}
        same = kind is FrozenDict
        for key, item in dict.items(value):
            if type(item) not in _SCALARS:
                frozen_item = _freeze(item, memo)
                if frozen_item is not item:
                    same = False
                    item = frozen_item
            entries[key] = item
        if same:
            memo[marker] = value
            return value
        dict.update(frozen_dict, entries)
        return frozen_dict
    if isinstance(value, list):
        marker = id(value)
        done = memo.get(marker)
        if done is not None:
            return done
        frozen_list = FrozenList()
        memo[marker] = frozen_list
        elements: list[Any] = []
        same = kind is FrozenList
        for item in list.__iter__(value):
            if type(item) not in _SCALARS:
                frozen_item = _freeze(item, memo)
                if frozen_item is not item:
                    same = False
                    item = frozen_item
            elements.append(item)
        if same:
            memo[marker] = value
            return value
        list.extend(frozen_list, elements)
        return frozen_list
    return value


def deep_freeze(value: object) -> Any:
    """``value`` with every reachable dict and list replaced by its frozen twin.

    Scalars and other objects are returned as they are. A container that is already
    frozen all the way down is returned itself (no copy); one that holds a mutable
    descendant is rebuilt, even when it is frozen itself. Cycles and shared
    sub-structures are preserved (a memo of visited containers guards the walk).
    """
    return _freeze(value, {})
