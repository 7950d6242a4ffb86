"""Boot a :class:`~dsh.cli.profile.Tree` through the real loader, and tear it down.

:func:`booted` is the one place a command starts plugins: the tree is loaded into a
fresh root :class:`~dsh.kernel.Context` (a built-in profile from its entries with
:func:`~dsh.kernel.loader.load_entries`, a file with :func:`~dsh.kernel.load_tree`,
YAML text from a temporary copy removed once loaded), and the whole root is disposed
when the block ends, however it ends (sessions settle and persistence flushes on
the way). Loader messages name a built-in profile's tree ``profile.yml``.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from dsh.cli import errors
from dsh.cli.errors import CliError
from dsh.cli.profile import Tree
from dsh.cli.startup import COLLECTOR
from dsh.kernel import Context, LoaderError, PluginEntry, load_tree, parse_tree
from dsh.kernel.loader import load_entries

MODEL_ADAPTERS = ("llm-deepseek", "llm-openai")
"""The adapter plugins whose ``models`` ``--model`` extends in a ``--config`` tree."""

PROFILE_FILE = "profile.yml"
"""The name loader messages give a tree without a file of its own (a built-in profile)."""

BUILT_IN_PATH = Path("/", "<dsh built-in profile>", PROFILE_FILE)
"""The ``file`` of a built-in profile's entries: never read (it names no real file).

Its folder would anchor a relative config path, so a built-in profile names its
paths absolute (:mod:`dsh.cli.profile`)."""


@asynccontextmanager
async def booted(tree: Tree) -> AsyncIterator[Context]:
    """Yield a root context with ``tree`` loaded; dispose the root on exit.

    A tree that fails to load raises :class:`CliError` naming the tree and the
    loader's reason (what loaded before the failure is already unloaded). Once the
    tree is up, the process's start-up collector pause ends (see
    :class:`~dsh.cli.startup.CollectorPolicy`; a no-op unless ``dsh`` owns the process).
    """
    root = Context()
    try:
        if tree.file is not None:
            await _load(root, tree, tree.file)
        elif tree.source is None:
            await _load(root, tree, BUILT_IN_PATH)
        else:
            with tempfile.TemporaryDirectory(prefix="dsh-profile-") as folder:
                await _load(root, tree, Path(folder) / PROFILE_FILE)
        COLLECTOR.settle()
        yield root
    finally:
        await root.dispose()


def _entry(item: dict[str, Any], file: Path) -> PluginEntry:
    return PluginEntry(item["id"], item["name"], item.get("config"), file)


def write_profile(tree: Tree, path: Path) -> Path:
    """Write a built-in profile's YAML to ``path`` (a few hundred bytes) and return ``path``."""
    path.write_text(tree.text, encoding="utf-8")
    return path


async def _load(root: Context, tree: Tree, path: Path) -> None:
    """Load ``tree``: its entries (``path`` naming them), else its YAML at ``path`` (written first if need be)."""
    try:
        if tree.file is None and tree.source is None:
            await load_entries(root, [_entry(item, path) for item in tree.entries])
        elif tree.file is not None and tree.model is not None:
            await load_entries(root, serving(parse_tree(tree.file), tree.model))
        else:
            if tree.file is None:
                write_profile(tree, path)
            await load_tree(root, path)
    except LoaderError as error:
        message = str(error) if tree.file is not None else str(error).replace(str(path), PROFILE_FILE)
        raise CliError(f"cannot start {tree.label}: {message}") from error


def serving(entries: list[PluginEntry], model: str) -> list[PluginEntry]:
    """``entries`` with ``model`` added to the ``models`` of their one adapter entry (:data:`MODEL_ADAPTERS`).

    This is how ``--model`` works with ``--config`` as with the built-in profile. The
    entries are unchanged when the model is already listed, or when the tree has no
    (or more than one) top-level adapter entry: the agent then asks ``model`` of
    whatever the tree serves.
    """
    adapters = [index for index, entry in enumerate(entries) if entry.name in MODEL_ADAPTERS]
    if len(adapters) != 1:
        return entries
    (index,) = adapters
    entry = entries[index]
    config = dict(entry.config or {})
    from dsh.adapters.deepseek import DEFAULT_MODELS

    models = config.get("models", list(DEFAULT_MODELS))
    if not isinstance(models, list) or model in models:  # a bad list is the plugin's to report
        return entries
    config["models"] = [*models, model]
    changed = PluginEntry(entry.id, entry.name, config, entry.file, entry.children)
    return [*entries[:index], changed, *entries[index + 1 :]]


class _StderrHandler(logging.Handler):
    """Writes each record to the current ``sys.stderr`` (looked up per record).

    Unless ``debug``, a record is one line (its message's first line, no traceback)
    and a record repeating a failure already said is dropped (see :class:`~dsh.cli.errors.Once`).
    """

    def __init__(self, level: int, *, debug: bool) -> None:
        super().__init__(level)
        self.debug = debug

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.debug:
                sys.stderr.write(self.format(record) + "\n")
            else:
                message = record.getMessage().splitlines()[0] if record.getMessage() else ""
                if errors.ONCE.repeats(message):
                    return
                errors.ONCE.remember(message)
                sys.stderr.write(f"{record.name}: {record.levelname}: {message}\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


@contextmanager
def logging_to_stderr(verbose: int, *, debug: bool = False) -> Iterator[None]:
    """While the block runs, send dsh's logs to stderr: warnings, info with ``-v``, debug with ``-vv``.

    Only the ``dsh`` logger is touched and it is restored afterwards; nothing is ever
    logged to stdout. Tracebacks are printed only with ``debug`` (``--debug``);
    otherwise each failure is said once (:data:`~dsh.cli.errors.ONCE`, started afresh here).
    """
    errors.ONCE = errors.Once()
    logger = logging.getLogger("dsh")
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = _StderrHandler(level, debug=debug)
    handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
    previous = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
