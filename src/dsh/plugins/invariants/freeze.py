"""Immutable JSON containers, so any mutation of logged history fails loudly (SPEC §13).

:class:`FrozenDict` and :class:`FrozenList` subclass ``dict`` and ``list``: they
serialize with ``json.dumps``, pass ``isinstance(x, dict | list)`` checks and read
like the originals, but every mutator raises ``TypeError``. Copies (``copy.copy``,
``copy.deepcopy``, ``.copy()``, slicing, pickling) are plain mutable containers,
because a copy belongs to whoever made it.
"""

from __future__ import annotations

import copy
from gc import is_tracked
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
    if kind is FrozenDict or kind is FrozenList:
        return _refreeze(value, memo)  # type: ignore[arg-type]
    if isinstance(value, dict):
        return _freeze_dict(value, memo)
    if isinstance(value, list):
        return _freeze_list(value, memo)
    return value


def _freeze_dict(value: dict[str, Any], memo: dict[int, Any]) -> FrozenDict:
    """A new frozen twin of a mutable dict (registered before the walk: a cycle finds it)."""
    marker = id(value)
    done = memo.get(marker)
    if done is not None:
        return done  # type: ignore[no-any-return]
    frozen = memo[marker] = FrozenDict(value)  # dict.__init__ copies at C speed
    for key, item in dict.items(frozen):  # replacing values keeps the size: iteration stays valid
        kind = type(item)
        if kind is dict:
            dict.__setitem__(frozen, key, _freeze_dict(item, memo))
        elif kind is list:
            dict.__setitem__(frozen, key, _freeze_list(item, memo))
        elif kind not in _SCALARS:
            dict.__setitem__(frozen, key, _freeze(item, memo))
    return frozen


def _freeze_list(value: list[Any], memo: dict[int, Any]) -> FrozenList:
    marker = id(value)
    done = memo.get(marker)
    if done is not None:
        return done  # type: ignore[no-any-return]
    frozen = memo[marker] = FrozenList(value)
    for index, item in enumerate(list.__iter__(frozen)):
        kind = type(item)
        if kind is dict:
            list.__setitem__(frozen, index, _freeze_dict(item, memo))
        elif kind is list:
            list.__setitem__(frozen, index, _freeze_list(item, memo))
        elif kind not in _SCALARS:
            list.__setitem__(frozen, index, _freeze(item, memo))
    return frozen


def _refreeze(value: FrozenDict | FrozenList, memo: dict[int, Any]) -> Any:
    """``value`` itself when it is frozen all the way down, else a rebuilt twin."""
    marker = id(value)
    done = memo.get(marker)
    if done is not None:
        return done
    memo[marker] = value  # a cycle back to it is fine while it stays
    items = dict.values(value) if isinstance(value, dict) else list.__iter__(value)
    for item in items:
        if type(item) not in _SCALARS and _freeze(item, memo) is not item:
            del memo[marker]  # a descendant was mutable: rebuild this container as if it were plain
            if isinstance(value, dict):
                return _freeze_dict(value, memo)
            return _freeze_list(value, memo)
    return value


def deep_freeze(value: object) -> Any:
    """``value`` with every reachable dict and list replaced by its frozen twin.

    Scalars and other objects are returned as they are. A container that is already
    frozen all the way down is returned itself (no copy); one that holds a mutable
    descendant is rebuilt, even when it is frozen itself. Cycles and shared
    sub-structures are preserved (a memo of visited containers guards the walk).
    """
    return _freeze(value, {})


class _NotPlain(Exception):  # noqa: N818 - internal signal, never escapes
    """Internal: the plain-tree walk met something only :func:`deep_freeze` handles."""


def _freeze_plain(value: dict[str, Any] | list[Any]) -> Any:
    if type(value) is dict:
        frozen: Any = FrozenDict(value)
        if not is_tracked(value):
            return frozen  # CPython leaves a dict untracked while it holds no container: nothing to descend into
        for key, item in dict.items(frozen):  # replacing values keeps the size: iteration stays valid
            kind = type(item)
            if kind is dict or kind is list:
                dict.__setitem__(frozen, key, _freeze_plain(item))
            elif kind not in _SCALARS:
                raise _NotPlain
        return frozen
    frozen = FrozenList(value)
    for index, item in enumerate(list.__iter__(frozen)):
        kind = type(item)
        if kind is dict or kind is list:
            list.__setitem__(frozen, index, _freeze_plain(item))
        elif kind not in _SCALARS:
            raise _NotPlain
    return frozen


def freeze_data(value: object) -> Any:
    """:func:`deep_freeze` for logged event data, fastest on what a session logs.

    Logged data is normally a tree of plain dicts, lists and scalars (a fresh
    snapshot): that is frozen in one walk without the visited memo, which does not
    look into a dict the garbage collector does not track (CPython untracks a dict
    holding no container, so it has nothing to freeze below it). Anything else
    (frozen or other containers, other objects, shared or cyclic structure detected
    by recursion) goes to :func:`deep_freeze`; a sub-structure shared inside a plain
    tree may come back as two equal frozen twins.
    """
    kind = type(value)
    if kind is dict or kind is list:
        try:
            return _freeze_plain(value)  # type: ignore[arg-type]
        except (_NotPlain, RecursionError):
            pass
    return deep_freeze(value)
