"""The YAML plugin-tree loader (SPEC §1.5, §16): parse, resolve, boot, include, !env."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.kernel import (
    Context,
    FiberState,
    LoaderError,
    PluginEntry,
    ServiceKey,
    load_tree,
    parse_tree,
    resolve_plugin,
)
from dsh.kernel.loader import include, load_entries
from tests.kernel.helpers import leftovers, ticks

GREETER: ServiceKey[Any] = ServiceKey("greeter")

GREETER_PLUGIN = """
from pydantic import BaseModel
from dsh.kernel import Service

LOG = []


class Greeter(Service):
    name = "greeter"

    class Config(BaseModel):
        model_config = {"extra": "forbid"}
        greeting: str = "Hello"

    def __init__(self, ctx, config):
        super().__init__(ctx, "greeter")
        self.greeting = config.greeting
        ctx.effect(lambda: lambda: LOG.append("greeter gone"))

    def greet(self, who):
        return f"{self.greeting}, {who}!"
"""

HELLO_PLUGIN = """
from dsh.kernel import ServiceKey

GREETER = ServiceKey("greeter")
LOG = []
name = "hello"
inject = ["greeter"]


def apply(ctx, config):
    LOG.append(ctx[GREETER].greet(config.get("who", "world")))
    ctx.effect(lambda: lambda: LOG.append("hello gone"))


def default(ctx, config):
    raise AssertionError("a stray default callable must never be used as the plugin")
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def forget_tree_modules(tmp_path: Path) -> Iterator[None]:
    """Plugin files a test loaded leave sys.modules with the test."""
    yield
    for name, module in list(sys.modules.items()):
        if name.startswith("dsh_tree_") and str(getattr(module, "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def tree_dir(tmp_path: Path) -> Path:
    write(tmp_path / "plugins" / "greeter.py", GREETER_PLUGIN)
    write(tmp_path / "plugins" / "hello.py", HELLO_PLUGIN)
    return tmp_path


def module_of(path: Path) -> object:
    return resolve_plugin(str(path), path.parent)


# --------------------------------------------------------------------------- parse
def test_parse_tree_reads_entries_in_order_with_their_file(tree_dir: Path) -> None:
    """Each entry keeps id, name, config and the absolute path of its file."""
    tree = write(
        tree_dir / "tree.yml",
        """
        - id: greeter
          name: ./plugins/greeter.py:Greeter
          config: {greeting: Hi}
        - id: hello
          name: ./plugins/hello.py
        """,
    )
    entries = parse_tree(tree)
    assert entries == [
        PluginEntry("greeter", "./plugins/greeter.py:Greeter", {"greeting": "Hi"}, tree.resolve()),
        PluginEntry("hello", "./plugins/hello.py", None, tree.resolve()),
    ]
    assert not entries[0].is_include


def test_parse_tree_expands_includes_relative_to_the_including_file(tree_dir: Path) -> None:
    """An include entry lists the included tree's entries as its children."""
    write(tree_dir / "nested" / "inner.yml", "- {id: greeter, name: ../plugins/greeter.py:Greeter}\n")
    tree = write(tree_dir / "tree.yml", "- {id: core, name: include, config: {path: ./nested/inner.yml}}\n")
    [core] = parse_tree(str(tree))
    assert core.is_include
    assert [child.id for child in core.children] == ["greeter"]
    assert core.children[0].file == (tree_dir / "nested" / "inner.yml").resolve()


def test_an_empty_tree_file_has_no_entries(tmp_path: Path) -> None:
    """A file with only comments loads nothing."""
    assert parse_tree(write(tmp_path / "empty.yml", "# nothing yet\n")) == []


def test_env_tags_read_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """!env NAME is the value or None; !env [NAME, default] falls back to the default."""
    monkeypatch.setenv("DSH_TEST_SET", "from env")
    monkeypatch.delenv("DSH_TEST_UNSET", raising=False)
    tree = write(
        tmp_path / "tree.yml",
        """
        - id: env
          name: dsh.kernel
          config:
            set: !env DSH_TEST_SET
            unset: !env DSH_TEST_UNSET
            defaulted: !env [DSH_TEST_UNSET, ./.sessions]
            typed_default: !env [DSH_TEST_UNSET, 60000]
            overridden: !env [DSH_TEST_SET, ignored]
            single: !env [DSH_TEST_UNSET]
        """,
    )
    [entry] = parse_tree(tree)
    assert entry.config == {
        "set": "from env",
        "unset": None,
        "defaulted": "./.sessions",
        "typed_default": 60000,
        "overridden": "from env",
        "single": None,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("key: !env {a: b}", "!env takes a variable name or"),
        ("key: !env [A, b, c]", "!env takes a variable name or"),
        ("key: !env ''", "!env needs a variable name"),
        ("key: !env [[A], b]", "!env needs a variable name"),
    ],
)
def test_malformed_env_tags_are_rejected(tmp_path: Path, body: str, message: str) -> None:
    """The error points at the tag and says what it takes."""
    tree = write(tmp_path / "tree.yml", f"- id: x\n  name: y\n  config:\n    {body}\n")
    with pytest.raises(LoaderError, match="is not valid YAML") as caught:
        parse_tree(tree)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- id: [unclosed\n", "is not valid YAML"),
        ("id: x\nname: y\n", "must be a YAML list of entries {id, name, config}, got dict"),
        ("- just a string\n", "entry 1 must be a mapping with keys id, name and optional config"),
        ("- {id: x, name: y, conifg: {}}\n", "entry 1 has unknown keys ['conifg']"),
        ("- {name: y}\n", 'entry 1 needs a non-empty string "id"'),
        ("- {id: x, name: ''}\n", 'entry 1 needs a non-empty string "name"'),
        ("- {id: x, name: y, config: [1]}\n", 'entry 1 ("x"): config must be a mapping, got list'),
        ("- {id: x, name: y}\n- {id: x, name: z}\n", 'entry 2 reuses the id "x": give each entry a unique id'),
        ("- {id: x, name: include}\n", 'entry "x" (include) needs config.path'),
    ],
)
def test_malformed_trees_are_rejected_with_the_fix(tmp_path: Path, text: str, message: str) -> None:
    """Every problem names the file and what to change."""
    tree = write(tmp_path / "tree.yml", text)
    with pytest.raises(LoaderError) as caught:
        parse_tree(tree)
    assert str(tree.resolve()) in str(caught.value)
    assert message in str(caught.value)


def test_a_missing_tree_file_names_the_path(tmp_path: Path) -> None:
    """A missing file (or include target) says how paths resolve."""
    with pytest.raises(LoaderError, match="does not exist: check the path"):
        parse_tree(tmp_path / "nope.yml")
    tree = write(tmp_path / "tree.yml", "- {id: sub, name: include, config: {path: ./missing.yml}}\n")
    with pytest.raises(LoaderError, match=r"missing\.yml does not exist.*relative to the file that includes it"):
        parse_tree(tree)


def test_an_unreadable_tree_file_is_reported(tmp_path: Path) -> None:
    """A directory in place of the file is a read error, not a crash."""
    (tmp_path / "dir.yml").mkdir()
    with pytest.raises(LoaderError, match="cannot be read"):
        parse_tree(tmp_path / "dir.yml")


def test_an_include_cycle_is_rejected(tmp_path: Path) -> None:
    """a.yml -> b.yml -> a.yml is named in full."""
    write(tmp_path / "a.yml", "- {id: b, name: include, config: {path: b.yml}}\n")
    write(tmp_path / "b.yml", "- {id: a, name: include, config: {path: ./a.yml}}\n")
    with pytest.raises(LoaderError, match=r"include cycle: .*a\.yml -> .*b\.yml -> .*a\.yml; remove one"):
        parse_tree(tmp_path / "a.yml")


# ------------------------------------------------------------------------- resolve
def test_include_resolves_to_the_built_in_include_plugin(tmp_path: Path) -> None:
    """The name include is reserved."""
    assert resolve_plugin("include", tmp_path) is include


def test_a_file_path_resolves_to_its_module_loaded_once_under_a_unique_name(tree_dir: Path) -> None:
    """The module's namespace is the plugin; the same file loads once."""
    module = resolve_plugin("./plugins/hello.py", tree_dir)
    assert module.name == "hello"  # type: ignore[attr-defined]
    assert module.__name__.startswith("dsh_tree_hello_")  # type: ignore[attr-defined]
    assert sys.modules[module.__name__] is module  # type: ignore[attr-defined]
    assert resolve_plugin(str(tree_dir / "plugins" / "hello.py"), "/elsewhere") is module


def test_a_path_with_an_attribute_resolves_to_that_attribute(tree_dir: Path) -> None:
    """file.py:Attribute picks a class out of the module."""
    greeter = resolve_plugin("plugins/greeter.py:Greeter", tree_dir)
    assert isinstance(greeter, type)
    assert greeter.__name__ == "Greeter"
    with pytest.raises(LoaderError, match=r'plugins/greeter\.py has no attribute "Nope"; check the name after ":"'):
        resolve_plugin("plugins/greeter.py:Nope", tree_dir)


def test_a_missing_or_broken_plugin_file_is_reported(tmp_path: Path) -> None:
    """A missing file, a directory named like a module, or an import failure (module not kept)."""
    with pytest.raises(LoaderError, match=r"plugin file .*nope\.py does not exist"):
        resolve_plugin("./nope.py", tmp_path)
    (tmp_path / "pkg.py").mkdir()
    with pytest.raises(LoaderError, match=r"plugin file .*pkg\.py does not exist"):
        resolve_plugin("./pkg.py", tmp_path)
    broken = write(tmp_path / "broken.py", "raise RuntimeError('import-time failure')\n")
    with pytest.raises(LoaderError, match="failed to import: RuntimeError: import-time failure"):
        resolve_plugin("./broken.py", tmp_path)
    assert not [name for name in sys.modules if name.startswith("dsh_tree_broken_")]
    write(broken, "raise SystemExit(3)\n")
    with pytest.raises(SystemExit):
        resolve_plugin("./broken.py", tmp_path)
    assert not [name for name in sys.modules if name.startswith("dsh_tree_broken_")]


def test_a_file_that_is_not_python_is_refused(tmp_path: Path) -> None:
    """Only a .py file can be imported as a plugin."""
    write(tmp_path / "plugin.txt", "not python")
    with pytest.raises(LoaderError, match=r"is not a Python module: name a \.py file"):
        resolve_plugin("./plugin.txt", tmp_path)


def test_a_dotted_module_path_resolves_to_the_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Importable modules load by name, with an optional :Attribute."""
    write(tmp_path / "dsh_test_pkg" / "__init__.py", "")
    write(tmp_path / "dsh_test_pkg" / "plug.py", "name = 'plug'\ndef apply(ctx, config):\n    return None\n")
    write(tmp_path / "dsh_test_pkg" / "needs.py", "import dsh_test_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = resolve_plugin("dsh_test_pkg.plug", tmp_path)
    assert module.name == "plug"  # type: ignore[attr-defined]
    assert resolve_plugin("dsh_test_pkg.plug:apply", tmp_path) is module.apply  # type: ignore[attr-defined]
    with pytest.raises(LoaderError, match=r"importing dsh_test_pkg\.needs failed: No module named"):
        resolve_plugin("dsh_test_pkg.needs", tmp_path)
    for name in ("dsh_test_pkg", "dsh_test_pkg.plug"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("name", ["dsh_no_such_plugin", "dsh_no_such_pkg.child", "my-plugin", "dsh.no_such_module"])
def test_an_unknown_plugin_name_says_how_to_fix_it(tmp_path: Path, name: str) -> None:
    """Neither an entry point nor an importable module."""
    with pytest.raises(LoaderError, match=f'unknown plugin "{name}".*install the package.*"./my_plugin.py"'):
        resolve_plugin(name, tmp_path)


def test_an_entry_point_in_group_dsh_plugins_resolves_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package names its plugins in the dsh.plugins group."""
    write(tmp_path / "dsh_test_ep_module.py", "name = 'from-entry-point'\ndef apply(ctx, config):\n    return None\n")
    write(
        tmp_path / "dsh_test_ep-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: dsh-test-ep\nVersion: 1.0\n"
    )
    write(
        tmp_path / "dsh_test_ep-1.0.dist-info" / "entry_points.txt",
        "[dsh.plugins]\ndsh-test-ep = dsh_test_ep_module\ndsh-test-broken = dsh_test_missing_module:thing\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = resolve_plugin("dsh-test-ep", tmp_path)
    assert module.name == "from-entry-point"  # type: ignore[attr-defined]
    assert resolve_plugin("dsh-test-ep:apply", tmp_path) is module.apply  # type: ignore[attr-defined]
    with pytest.raises(LoaderError, match=r"entry point dsh_test_missing_module:thing failed to load.*reinstall"):
        resolve_plugin("dsh-test-broken", tmp_path)
    sys.modules.pop("dsh_test_ep_module", None)


def _dist_info(where: Path, project: str, lines: str) -> None:
    """A minimal installed distribution in ``where`` declaring ``lines`` in group dsh.plugins."""
    info = where / f"{project}-1.0.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {project.replace('_', '-')}\nVersion: 1.0\n")
    write(info / "entry_points.txt", f"[dsh.plugins]\n{lines}\n")


def test_entry_points_are_read_once_per_state_of_sys_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree names a dozen plugins: the installed metadata is read once, again only when sys.path changes."""
    import importlib.metadata

    reads: list[str | None] = []
    real_entry_points = importlib.metadata.entry_points

    def counting(**params: Any) -> Any:
        reads.append(params.get("group"))
        return real_entry_points(**params)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    write(tmp_path / "dsh_test_cached_a.py", "name = 'a'\n")
    write(tmp_path / "dsh_test_cached_b.py", "name = 'b'\n")
    _dist_info(tmp_path, "dsh_test_cached", "dsh-test-a = dsh_test_cached_a")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve_plugin("dsh-test-a", tmp_path).name == "a"  # type: ignore[attr-defined]
    assert resolve_plugin("llm", tmp_path) is not None
    assert resolve_plugin("dsh-test-a:name", tmp_path) == "a"
    assert reads == ["dsh.plugins"]

    # A distribution installed meanwhile changes its directory's mtime: read again.
    _dist_info(tmp_path, "dsh_test_cached_more", "dsh-test-b = dsh_test_cached_b")
    stamp = tmp_path.stat()
    os.utime(tmp_path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert resolve_plugin("dsh-test-b", tmp_path).name == "b"  # type: ignore[attr-defined]
    assert reads == ["dsh.plugins"] * 2

    # So does a new sys.path entry, even one that does not exist (yet).
    monkeypatch.syspath_prepend(str(tmp_path / "not-there"))
    assert resolve_plugin("dsh-test-a", tmp_path).name == "a"  # type: ignore[attr-defined]
    assert reads == ["dsh.plugins"] * 3
    for name in ("dsh_test_cached_a", "dsh_test_cached_b"):
        sys.modules.pop(name, None)


# --------------------------------------------------------------------------- boot
async def test_load_tree_boots_every_entry_in_order_and_disposes_cleanly(tree_dir: Path) -> None:
    """A service plugin and a module plugin that injects it; the stray default is never used."""
    tree = write(
        tree_dir / "tree.yml",
        """
        - id: greeter
          name: ./plugins/greeter.py:Greeter
          config: {greeting: Hi}
        - id: hello
          name: ./plugins/hello.py
          config: {who: tree}
        """,
    )
    root = Context()
    fibers = await load_tree(root, tree)
    await ticks()
    assert [fiber.name for fiber in fibers] == ["greeter", "hello"]
    assert [fiber.state for fiber in fibers] == [FiberState.ACTIVE, FiberState.ACTIVE]
    hello = module_of(tree_dir / "plugins" / "hello.py")
    greeter = module_of(tree_dir / "plugins" / "greeter.py")
    assert hello.LOG == ["Hi, tree!"]  # type: ignore[attr-defined]
    await root.dispose()
    assert hello.LOG == ["Hi, tree!", "hello gone"]  # type: ignore[attr-defined]
    assert greeter.LOG == ["greeter gone"]  # type: ignore[attr-defined]
    assert leftovers(root, fibers) == []


async def test_load_entries_boots_a_tree_built_in_code_like_a_file(tree_dir: Path) -> None:
    """(extra) entries built in code load without YAML; relative names resolve against ``entry.file``."""
    virtual = tree_dir / "built-in.yml"  # never written: it only anchors paths and names the tree
    entries = [
        PluginEntry("greeter", "./plugins/greeter.py:Greeter", {"greeting": "Hey"}, virtual),
        PluginEntry("hello", "./plugins/hello.py", {"who": "code"}, virtual),
    ]
    root = Context()
    fibers = await load_entries(root, entries)
    await ticks()
    assert [fiber.state for fiber in fibers] == [FiberState.ACTIVE, FiberState.ACTIVE]
    assert module_of(tree_dir / "plugins" / "hello.py").LOG == ["Hey, code!"]  # type: ignore[attr-defined]
    assert not virtual.exists()
    await root.dispose()
    assert leftovers(root, fibers) == []

    again = Context()
    broken = [*entries, PluginEntry("bad", "no-such-plugin-anywhere", None, virtual)]
    with pytest.raises(LoaderError, match=f'^{re.escape(str(virtual))}: entry "bad" .*unknown plugin'):
        await load_entries(again, broken)
    assert leftovers(again) == []


async def test_an_entry_waiting_for_a_service_counts_as_loaded(tree_dir: Path) -> None:
    """Order is free: a dependent listed first starts when its service arrives."""
    tree = write(
        tree_dir / "tree.yml",
        """
        - {id: hello, name: ./plugins/hello.py}
        - {id: greeter, name: ./plugins/greeter.py:Greeter}
        """,
    )
    root = Context()
    hello_fiber, _ = await load_tree(root, tree)
    await ticks()
    assert hello_fiber.state is FiberState.ACTIVE
    assert module_of(tree_dir / "plugins" / "hello.py").LOG == ["Hello, world!"]  # type: ignore[attr-defined]
    await root.dispose()


async def test_an_include_entry_is_one_fiber_owning_the_included_tree(tree_dir: Path) -> None:
    """Disposing the include fiber unloads everything it loaded."""
    write(tree_dir / "sub" / "services.yml", "- {id: greeter, name: ../plugins/greeter.py:Greeter}\n")
    tree = write(
        tree_dir / "tree.yml",
        """
        - {id: services, name: include, config: {path: sub/services.yml}}
        - {id: hello, name: ./plugins/hello.py}
        """,
    )
    root = Context()
    services, hello = await load_tree(root, tree)
    await ticks()
    assert services.name == "include"
    assert hello.state is FiberState.ACTIVE
    assert root.get(GREETER) is not None
    await services.dispose()
    assert hello.state is FiberState.PENDING
    assert root.get(GREETER) is None
    await root.dispose()
    assert leftovers(root, [services, hello]) == []


async def test_each_file_of_a_nested_include_chain_is_read_once(
    tree_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(extra) load_tree loads an include from the tree parse_tree read, not by reading the file again"""
    import dsh.kernel.loader as loader

    write(tree_dir / "leaf.yml", "- {id: greeter, name: ./plugins/greeter.py:Greeter}\n")
    write(tree_dir / "inner.yml", "- {id: leaf, name: include, config: {path: leaf.yml}}\n")
    tree = write(tree_dir / "tree.yml", "- {id: inner, name: include, config: {path: inner.yml}}\n")
    reads: list[str] = []
    original = loader._read_yaml

    def counting(file: Path) -> Any:
        reads.append(file.name)
        return original(file)

    monkeypatch.setattr(loader, "_read_yaml", counting)
    root = Context()
    (inner,) = await load_tree(root, tree)
    await ticks()
    assert sorted(reads) == ["inner.yml", "leaf.yml", "tree.yml"]
    assert root.get(GREETER) is not None
    await inner.dispose()
    assert root.get(GREETER) is None
    await root.dispose()


async def test_the_include_plugin_loads_a_tree_directly(tree_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ctx.plugin(include, {path}) boots a tree as one fiber (paths relative to the working directory)."""
    write(tree_dir / "tree.yml", "- {id: greeter, name: ./plugins/greeter.py:Greeter}\n")
    monkeypatch.chdir(tree_dir)
    root = Context()
    fiber = await root.plugin(include, {"path": "tree.yml"})
    assert root.get(GREETER) is not None
    await fiber.dispose()
    assert root.get(GREETER) is None


async def test_a_failing_entry_fails_the_boot_naming_entry_file_and_cause_and_unloads_the_rest(
    tree_dir: Path,
) -> None:
    """Entries before the failure are disposed; later ones never load."""
    write(tree_dir / "plugins" / "bad.py", "def apply(ctx, config):\n    raise ValueError('bad apply')\n")
    tree = write(
        tree_dir / "tree.yml",
        """
        - {id: greeter, name: ./plugins/greeter.py:Greeter}
        - {id: broken, name: ./plugins/bad.py}
        - {id: hello, name: ./plugins/hello.py}
        """,
    )
    root = Context()
    with pytest.raises(LoaderError) as caught:
        await load_tree(root, tree)
    message = str(caught.value)
    assert message == f'{tree.resolve()}: entry "broken" (./plugins/bad.py) failed to start: ValueError: bad apply'
    assert isinstance(caught.value.__cause__, ValueError)
    assert module_of(tree_dir / "plugins" / "greeter.py").LOG == ["greeter gone"]  # type: ignore[attr-defined]
    assert module_of(tree_dir / "plugins" / "hello.py").LOG == []  # type: ignore[attr-defined]
    assert leftovers(root) == []


async def test_an_invalid_entry_config_fails_the_boot_with_every_field_path(tree_dir: Path) -> None:
    """The ConfigError text (every path) is kept inside the loader error; the entry is checked before it loads."""
    tree = write(
        tree_dir / "tree.yml",
        "- {id: greeter, name: ./plugins/greeter.py:Greeter, config: {greeting: [1], colour: red}}\n",
    )
    root = Context()
    with pytest.raises(
        LoaderError, match=r'entry "greeter" \(\S+\): plugin "greeter": invalid config: greeting: .*colour: '
    ):
        await load_tree(root, tree)
    assert leftovers(root) == []


async def test_a_failure_inside_an_include_names_the_inner_entry_and_the_including_one(tree_dir: Path) -> None:
    """The innermost entry is named first, then who included it."""
    write(tree_dir / "inner.yml", "- {id: ghost, name: dsh_no_such_plugin}\n")
    tree = write(tree_dir / "outer.yml", "- {id: core, name: include, config: {path: inner.yml}}\n")
    root = Context()
    with pytest.raises(LoaderError) as caught:
        await load_tree(root, tree)
    message = str(caught.value)
    assert message.startswith(
        f'{(tree_dir / "inner.yml").resolve()}: entry "ghost" (dsh_no_such_plugin): unknown plugin'
    )
    assert message.endswith(f'(included by {tree.resolve()}: entry "core" (include))')
    assert leftovers(root) == []


async def test_an_entry_that_is_not_a_plugin_fails_the_boot(tree_dir: Path) -> None:
    """A resolved object the kernel cannot load is reported with the entry."""
    write(tree_dir / "plugins" / "const.py", "VALUE = 42\n")
    tree = write(tree_dir / "tree.yml", "- {id: const, name: './plugins/const.py:VALUE'}\n")
    with pytest.raises(LoaderError, match=r'entry "const" \(./plugins/const.py:VALUE\): not a plugin: 42'):
        await load_tree(Context(), tree)


async def test_loading_into_a_disposed_context_fails_with_the_entry(tree_dir: Path) -> None:
    """Kernel refusals surface as loader errors naming the entry."""
    tree = write(tree_dir / "tree.yml", "- {id: greeter, name: ./plugins/greeter.py:Greeter}\n")
    root = Context()
    child = await root.plugin(include, {"path": str(write(tree_dir / "empty.yml", "[]\n"))})
    await child.dispose()
    with pytest.raises(LoaderError, match=r'entry "greeter" .*cannot create effect on inactive context'):
        await load_tree(child.ctx, tree)


async def test_each_entry_loads_after_the_plugins_the_previous_one_unblocked_have_started(tmp_path: Path) -> None:
    """(extra) A plugin waiting for a service starts (and finishes its async apply) before the next entry loads."""
    import sys

    from dsh.kernel import Context, load_tree

    (tmp_path / "order.py").write_text(
        "import asyncio\n"
        "from dsh.kernel import Service, ServiceKey\n"
        "LOG = []\n"
        "KEY = ServiceKey('store')\n"
        "class Store(Service):\n"
        "    def __init__(self, ctx, config):\n"
        "        super().__init__(ctx, KEY)\n"
        "        LOG.append('store')\n"
        "async def _waiter(ctx, config):\n"
        "    for _ in range(5):\n"
        "        await asyncio.sleep(0)\n"
        "    LOG.append('waiter done')\n"
        "_waiter.inject = ['store']\n"
        "waiter = _waiter\n"
        "def last(ctx, config):\n"
        "    LOG.append('last')\n"
    )
    tree = tmp_path / "tree.yml"
    tree.write_text(
        "- {id: w, name: ./order.py:waiter}\n- {id: s, name: ./order.py:Store}\n- {id: l, name: ./order.py:last}\n"
    )
    root = Context()
    fibers = await load_tree(root, tree)
    module = fibers[0].info.source.__module__  # type: ignore[union-attr]
    assert sys.modules[module].LOG == ["store", "waiter done", "last"]
    await root.dispose()
