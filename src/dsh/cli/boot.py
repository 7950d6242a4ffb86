"""Boot a :class:`~dsh.cli.profile.Tree` through the real loader, and tear it down.

:func:`booted` is the one place a command starts plugins: the tree is loaded into a
fresh root :class:`~dsh.kernel.Context` with :func:`~dsh.kernel.load_tree` (a
built-in profile from a temporary copy of its YAML, removed once loaded), and the
whole root is disposed when the block ends, however it ends (sessions settle and
persistence flushes on the way).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from dsh.cli.errors import CliError
from dsh.cli.profile import Tree
from dsh.kernel import Context, LoaderError, load_tree

PROFILE_FILE = "profile.yml"
"""The name of a built-in profile's temporary file (it shows in loader messages)."""


@asynccontextmanager
async def booted(tree: Tree) -> AsyncIterator[Context]:
    """Yield a root context with ``tree`` loaded; dispose the root on exit.

    A tree that fails to load raises :class:`CliError` naming the tree and the
    loader's reason (what loaded before the failure is already unloaded).
    """
    root = Context()
    try:
        if tree.file is not None:
            await _load(root, tree, tree.file)
        else:
            with tempfile.TemporaryDirectory(prefix="dsh-profile-") as folder:
                await _load(root, tree, Path(folder) / PROFILE_FILE)
        yield root
    finally:
        await root.dispose()


def write_profile(tree: Tree, path: Path) -> Path:
    """Write a built-in profile's YAML to ``path`` (a few hundred bytes) and return ``path``."""
    path.write_text(tree.text, encoding="utf-8")
    return path


async def _load(root: Context, tree: Tree, path: Path) -> None:
    """Load ``tree`` from ``path`` (writing its text there first for a built-in profile)."""
    if tree.file is None:
        write_profile(tree, path)
    try:
        await load_tree(root, path)
    except LoaderError as error:
        message = str(error) if tree.file is not None else str(error).replace(str(path), PROFILE_FILE)
        raise CliError(f"cannot start {tree.label}: {message}") from error


class _StderrHandler(logging.Handler):
    """Writes each record to the current ``sys.stderr`` (looked up per record)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


@contextmanager
def logging_to_stderr(verbose: int) -> Iterator[None]:
    """While the block runs, send dsh's logs to stderr: warnings, info with ``-v``, debug with ``-vv``.

    Only the ``dsh`` logger is touched and it is restored afterwards; nothing is ever
    logged to stdout.
    """
    logger = logging.getLogger("dsh")
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = _StderrHandler(level)
    handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
    previous = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
