"""The ``llm-replay`` plugin: a recorded session log answers every model call (SPEC §12).

Config (YAML keys camelCase; snake_case accepted too):

* ``file`` -- the recorded session JSONL, else ``$DSH_SNAPSHOT_FILE``; required (an
  empty path counts as missing);
* ``overrideFile`` -- a ``replay.override.json`` sidecar, else
  ``$DSH_SNAPSHOT_OVERRIDE``; an empty path means none. When it exists, it replaces
  the script derived from ``file``.

The environment is read only for keys the config leaves out (or null). Config paths
take ``~`` and ``$NAME`` (:data:`~dsh.kernel.ConfigPath`) and a relative one, in a
tree file, resolves against that file's folder; any other relative path is made
absolute against the working directory at apply time.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.errors import HarnessError
from dsh.core.llm import LLM, LLM_STREAM, GenerateOptions, StreamChunk
from dsh.kernel import ConfigPath, Context, Effect
from dsh.plugins.llm_replay.player import play_entry
from dsh.plugins.llm_replay.script import load_replay_script

name = "llm-replay"
inject = [LLM.name]

FILE_ENV = "DSH_SNAPSHOT_FILE"
OVERRIDE_ENV = "DSH_SNAPSHOT_OVERRIDE"


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    file: ConfigPath | None = None
    override_file: ConfigPath | None = Field(default=None, alias="overrideFile")


def install_llm_replay(ctx: Context, config: Config) -> Effect:
    """Answer every model call made through ``ctx``'s kernel from the recorded script.

    Loads the script now (``config.file`` must name the fixture; ``override_file``
    is optional) and raises before installing anything if that fails. Then adds ONE
    ``llm/stream`` listener, owned by ``ctx``'s fiber, that never calls ``next()``:
    no adapter is needed and the model name is ignored. Calls are served by
    position: the listener takes the next index when the call is *made*, not when
    its stream is first iterated. Returns the listener's effect (call it to remove
    the listener; disposing the fiber does too).
    """
    if not config.file:
        raise HarnessError(f"llm-replay: a fixture path is required (Config.file or ${FILE_ENV})", "REPLAY_NO_FIXTURE")
    script = load_replay_script(config.file, config.override_file)
    calls = itertools.count()

    def serve(options: GenerateOptions, _next: Callable[[], AsyncIterator[StreamChunk]]) -> AsyncIterator[StreamChunk]:
        return play_entry(script, next(calls), options.signal)

    return ctx.on(LLM_STREAM, serve)


def _absolute(path: str | None) -> str | None:
    return os.path.abspath(path) if path else None


def apply(ctx: Context, config: Config) -> None:
    """Resolve the fixture paths (config, then environment) and install the replay.

    Raises ``REPLAY_NO_FIXTURE`` when neither names a fixture, and whatever
    :func:`~dsh.plugins.llm_replay.script.load_replay_script` raises.
    """
    file = config.file if config.file is not None else os.environ.get(FILE_ENV)
    override = config.override_file if config.override_file is not None else os.environ.get(OVERRIDE_ENV)
    resolved = config.model_copy(update={"file": _absolute(file), "override_file": _absolute(override)})
    install_llm_replay(ctx, resolved)
