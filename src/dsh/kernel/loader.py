"""Boot a YAML plugin tree (SPEC §1.5, §16).

A tree file is a YAML list of entries, loaded in order::

    - id: greeter                  # unique in its file; errors name it
      name: ./plugins/greeter.py   # what to load, see below
      config:                      # optional mapping, validated by the plugin's Config
        greeting: !env [DSH_GREETING, Hello]

``name`` is resolved as

* ``include``: built in; loads the tree at ``config.path`` (relative to the including
  file) as the children of one fiber, so disposing that fiber unloads them all;
* a file path (it contains ``/`` or ends in ``.py``), relative to the YAML file,
  imported under a module name unique to its absolute path;
* an entry point in group ``dsh.plugins``;
* a dotted module path (``dsh.plugins.invariants``).

A file or module path may end in ``:Attribute`` to load that attribute instead of the
module. A module is used as a plugin through its namespace (``name``, ``inject``,
``Config``, ``apply``), never through some other callable it happens to export.

``!env NAME`` reads an environment variable (None when unset) and
``!env [NAME, default]`` falls back to ``default``.

A config field that names a place on disk (a :data:`~dsh.kernel.config.ConfigPath`,
such as a persistence ``root``) takes ``$NAME`` / ``${NAME}`` and a leading ``~``; a
relative one resolves against the folder of the file holding the entry (not the
working directory), so a tree kept next to its data boots the same from anywhere.
The loader validates each entry's config itself, with that folder as the base
directory (:func:`~dsh.kernel.config.validate_config`), before loading the plugin;
an include's ``config.path`` expands the same way.

:func:`load_tree` loads each entry (as ``ctx.plugin(...)`` would) and awaits it before the next. When one
fails, the fibers it already loaded are disposed (last first) and a
:class:`LoaderError` names the file, the entry and the cause. :func:`load_entries`
does the same for :class:`PluginEntry` objects built in code.

Cost: the ``dsh.plugins`` entry points are read once per state of ``sys.path`` (its
entries and their modification times), not once per entry: installing or removing a
distribution changes its directory's mtime, so the next lookup reads them again.
YAML is parsed with libyaml when PyYAML has it. ``yaml`` and ``importlib.metadata``
are imported on first use, so importing the kernel does not pay for them.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict

from dsh.kernel.config import ConfigPath, KernelError, expand_path, validate_config
from dsh.kernel.plugin import PluginSpec, describe

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    import yaml

    from dsh.kernel.context import Context
    from dsh.kernel.fiber import Fiber

ENTRY_POINT_GROUP = "dsh.plugins"
INCLUDE = "include"
_ENTRY_KEYS = ("id", "name", "config")


class LoaderError(KernelError):
    """A plugin tree that cannot be read, resolved or started; the message names the fix."""


@dataclass(frozen=True)
class PluginEntry:
    """One entry of a tree file.

    ``file`` is the absolute path of the YAML file that holds it; ``children`` are
    the entries of the tree an ``include`` entry names (empty for other entries).
    """

    id: str
    name: str
    config: Mapping[str, Any] | None
    file: Path
    children: tuple[PluginEntry, ...] = ()

    @property
    def is_include(self) -> bool:
        return self.name == INCLUDE


# --------------------------------------------------------------------------- YAML
def _construct_env(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        name, default = loader.construct_scalar(node), None
    elif isinstance(node, yaml.SequenceNode) and len(node.value) in (1, 2):
        items = loader.construct_sequence(node, deep=True)
        name, default = items[0], items[1] if len(items) == 2 else None
    else:
        raise yaml.constructor.ConstructorError(
            None, None, "!env takes a variable name or [NAME, default]", node.start_mark
        )
    if not isinstance(name, str) or not name:
        raise yaml.constructor.ConstructorError(
            None, None, f"!env needs a variable name, got {name!r}", node.start_mark
        )
    return os.environ.get(name, default)


@functools.cache
def _tree_yaml_loader() -> type[yaml.SafeLoader]:
    """Safe YAML plus the ``!env`` tag, on libyaml's parser when PyYAML was built with it."""
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = cast("type[yaml.SafeLoader]", type("TreeYamlLoader", (base,), {}))
    loader.add_constructor("!env", _construct_env)
    return loader


def _read_yaml(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoaderError(
            f"plugin tree {path} does not exist: check the path "
            "(an include path is relative to the file that includes it)"
        ) from None
    except OSError as error:
        raise LoaderError(f"plugin tree {path} cannot be read: {error}") from error
    import yaml

    try:
        return yaml.load(text, Loader=_tree_yaml_loader())
    except yaml.YAMLError as error:
        raise LoaderError(
            f"plugin tree {path} is not valid YAML: {error}; fix the syntax at the position shown"
        ) from error


# -------------------------------------------------------------------------- parse
def parse_tree(path: str | os.PathLike[str]) -> list[PluginEntry]:
    """Read the tree at ``path`` and the trees it includes, without loading anything.

    Raises :class:`LoaderError` for a missing file, bad YAML, a malformed entry, a
    duplicate id, an include without ``config.path`` or an include cycle.
    """
    return _parse(Path(path).resolve(), ())


def _parse(file: Path, stack: tuple[Path, ...]) -> list[PluginEntry]:
    if file in stack:
        chain = " -> ".join(str(item) for item in (*stack, file))
        raise LoaderError(f"include cycle: {chain}; remove one of these includes")
    raw = _read_yaml(file)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise LoaderError(
            f"plugin tree {file} must be a YAML list of entries {{id, name, config}}, got {type(raw).__name__}"
        )
    entries: list[PluginEntry] = []
    seen: set[str] = set()
    for index, item in enumerate(raw, start=1):
        entry = _parse_entry(file, index, item)
        if entry.id in seen:
            raise LoaderError(f'{file}: entry {index} reuses the id "{entry.id}": give each entry a unique id')
        seen.add(entry.id)
        if entry.is_include:
            target = _include_target(entry)
            entry = PluginEntry(entry.id, entry.name, entry.config, file, tuple(_parse(target, (*stack, file))))
        entries.append(entry)
    return entries


def _parse_entry(file: Path, index: int, item: object) -> PluginEntry:
    where = f"{file}: entry {index}"
    if not isinstance(item, dict):
        raise LoaderError(f"{where} must be a mapping with keys id, name and optional config, got {item!r}")
    unknown = sorted(str(key) for key in item if key not in _ENTRY_KEYS)
    if unknown:
        raise LoaderError(f"{where} has unknown keys {unknown}: an entry takes only id, name and config")
    for key in ("id", "name"):
        value = item.get(key)
        if not isinstance(value, str) or not value:
            raise LoaderError(f'{where} needs a non-empty string "{key}", got {value!r}')
    config = item.get("config")
    if config is not None and not isinstance(config, dict):
        raise LoaderError(f'{where} ("{item["id"]}"): config must be a mapping, got {type(config).__name__}')
    return PluginEntry(item["id"], item["name"], config, file)


def _include_target(entry: PluginEntry) -> Path:
    path = (entry.config or {}).get("path")
    if not isinstance(path, str) or not path:
        raise LoaderError(f'{entry.file}: entry "{entry.id}" (include) needs config.path, the tree file to include')
    try:
        return Path(expand_path(path, entry.file.parent)).resolve()
    except ValueError as error:
        raise LoaderError(f'{entry.file}: entry "{entry.id}" (include): config.path {error}') from None


# ------------------------------------------------------------------------ resolve
def _looks_like_path(target: str) -> bool:
    return "/" in target or "\\" in target or target.endswith(".py")


def resolve_plugin(name: str, base_dir: str | os.PathLike[str]) -> object:
    """The plugin object ``name`` refers to (see the module docstring for the forms).

    ``base_dir`` anchors relative file paths. Raises :class:`LoaderError` for an
    unknown name, a module that fails to import, or a missing ``:Attribute``.
    """
    if name == INCLUDE:
        return include
    target, _, attribute = name.partition(":")
    if _looks_like_path(target):
        loaded: object = _load_file(Path(base_dir) / target)
    else:
        loaded = _load_named(target, name)
    if not attribute:
        return loaded
    try:
        return getattr(loaded, attribute)
    except AttributeError:
        raise LoaderError(
            f'plugin "{name}": {target} has no attribute "{attribute}"; check the name after ":"'
        ) from None


def _path_state() -> tuple[tuple[str, int | None], ...]:
    """Each ``sys.path`` entry (absolute) with its directory's mtime (None when it cannot be read)."""
    state: list[tuple[str, int | None]] = []
    for entry in sys.path:
        where = os.path.abspath(entry)
        try:
            mtime: int | None = os.stat(where).st_mtime_ns
        except OSError:
            mtime = None
        state.append((where, mtime))
    return tuple(state)


class _EntryPointIndex:
    """The ``dsh.plugins`` entry points by name, read again only when ``sys.path`` changes.

    ``importlib.metadata.entry_points`` reads the metadata of every installed
    distribution on each call (milliseconds); a tree names a dozen plugins. The
    first entry point of a name wins, as ``entry_points(name=...)`` would pick it.
    """

    def __init__(self) -> None:
        self._state: tuple[tuple[str, int | None], ...] | None = None
        self._points: dict[str, EntryPoint] = {}

    def get(self, name: str) -> EntryPoint | None:
        state = _path_state()
        if state != self._state:
            import importlib.metadata

            points: dict[str, EntryPoint] = {}
            for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                points.setdefault(point.name, point)
            self._points, self._state = points, state
        return self._points.get(name)


_entry_points = _EntryPointIndex()


def _load_named(target: str, name: str) -> object:
    point = _entry_points.get(target)
    if point is not None:
        try:
            return point.load()
        except Exception as error:
            raise LoaderError(
                f'plugin "{name}": entry point {point.value} failed to load: {_describe(error)}; '
                "reinstall the package that declares it"
            ) from error
    if not all(part.isidentifier() for part in target.split(".")):
        raise _unknown(name)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name is not None and (target == error.name or target.startswith(error.name + ".")):
            raise _unknown(name) from None
        raise LoaderError(f'plugin "{name}": importing {target} failed: {error}') from error


def _unknown(name: str) -> LoaderError:
    return LoaderError(
        f'unknown plugin "{name}": it is not an entry point in group "{ENTRY_POINT_GROUP}" nor an importable '
        'module; install the package that provides it, or give a file path such as "./my_plugin.py"'
    )


def _module_name(path: Path) -> str:
    import hashlib

    digest = hashlib.sha1(str(path).encode("utf-8"), usedforsecurity=False).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    return f"dsh_tree_{stem}_{digest}"


def _load_file(path: Path) -> ModuleType:
    path = path.resolve()
    module_name = _module_name(path)
    cached = sys.modules.get(module_name)
    if cached is not None:
        return cached
    if not path.is_file():
        raise LoaderError(f"plugin file {path} does not exist: a path is relative to the YAML file that names it")
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise LoaderError(f"plugin file {path} is not a Python module: name a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        del sys.modules[module_name]
        if not isinstance(error, Exception):
            raise
        raise LoaderError(f"plugin file {path} failed to import: {_describe(error)}") from error
    return module


# --------------------------------------------------------------------------- boot
class IncludeConfig(BaseModel):
    """Config of the built-in ``include`` plugin."""

    model_config = ConfigDict(extra="forbid")

    path: ConfigPath
    """The tree file to load (``~`` and ``$NAME`` expanded); a relative path resolves
    against the working directory when the plugin is loaded directly, against the
    including file from a tree."""


async def _apply_include(ctx: Context, config: IncludeConfig) -> None:
    await load_tree(ctx, config.path)


include = PluginSpec(name=INCLUDE, apply=_apply_include, Config=IncludeConfig)
"""The built-in ``include`` plugin: ``await ctx.plugin(include, {"path": "tree.yml"})``."""


async def load_tree(ctx: Context, path: str | os.PathLike[str]) -> list[Fiber]:
    """Load every entry of the tree at ``path`` as a child of ``ctx``, in order.

    Returns one fiber per top-level entry (an ``include`` entry is one fiber whose
    children are the included tree); a fiber waiting for an ``inject``ed service
    counts as loaded. On a failure, disposes what this call loaded (last first)
    and raises :class:`LoaderError`.
    """
    return await _load(ctx, parse_tree(path), parsed=True)


async def load_entries(ctx: Context, entries: Sequence[PluginEntry]) -> list[Fiber]:
    """Load ``entries`` as children of ``ctx``, in order, exactly as :func:`load_tree` loads a file's.

    For trees built in code (no YAML to write and parse): the entries are used as
    given, without the checks :func:`parse_tree` makes on a file (well-formed, unique
    ids). Each ``entry.file`` anchors the entry's relative paths (plugin files and
    config paths) and names it in errors; an ``include`` entry loads the file its
    ``config.path`` names. Same result and failure rules as :func:`load_tree`.
    """
    return await _load(ctx, entries, parsed=False)


async def _load(ctx: Context, entries: Sequence[PluginEntry], *, parsed: bool) -> list[Fiber]:
    """``parsed``: the entries come from :func:`parse_tree`, so an include's ``children`` are its tree, read once."""
    fibers: list[Fiber] = []
    try:
        for entry in entries:
            where = f'{entry.file}: entry "{entry.id}" ({entry.name})'
            fiber = _start(ctx, entry, where, parsed)
            fibers.append(fiber)
            try:
                await fiber
            except LoaderError as error:
                raise LoaderError(f"{error} (included by {where})") from error
            except Exception as error:
                raise LoaderError(f"{where} failed to start: {_describe(error)}") from error
            await settle_boots(ctx)
    except BaseException:
        for fiber in reversed(fibers):
            await fiber.dispose()
        raise
    return fibers


async def settle_boots(ctx: Context) -> None:
    """Wait until no plugin of ``ctx``'s tree is still starting.

    Loading an entry can let plugins that waited for its service start (an agent
    resumed once persistence exists); the next entry should see what they did, so
    a tree boots in a deterministic order. Failures stay with their own fibers.
    """
    while True:
        starting = [
            fiber._boot_task
            for fiber in ctx.runtime.dependents
            if fiber._boot_task is not None and not fiber._boot_task.done()
        ]
        if not starting:
            return
        await asyncio.wait(starting)


def _parsed_include(children: tuple[PluginEntry, ...]) -> PluginSpec:
    """The ``include`` plugin for a tree :func:`parse_tree` already read: it loads ``children`` as they are."""

    async def apply(ctx: Context, config: IncludeConfig) -> None:
        await _load(ctx, children, parsed=True)

    return PluginSpec(name=INCLUDE, apply=apply, Config=IncludeConfig)


def _start(ctx: Context, entry: PluginEntry, where: str, parsed: bool) -> Fiber:
    try:
        if entry.is_include:
            plugin: object = _parsed_include(entry.children) if parsed else include
            config: object = {**(entry.config or {}), "path": str(_include_target(entry))}
        else:
            plugin = resolve_plugin(entry.name, entry.file.parent)
            config = entry.config
        info = describe(plugin)
        # validated here, where the entry's folder is known, so its relative paths resolve against it
        return ctx._load(info, validate_config(info.name, info.config_model, config, base_dir=entry.file.parent))
    except KernelError as error:
        raise LoaderError(f"{where}: {error}") from error


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
