"""``llm-replay``: keyless replay of a recorded session log as the model (SPEC §12).

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``; nothing else is a plugin entry): load it with
``ctx.plugin(dsh.plugins.llm_replay, {"file": "session.jsonl"})`` or by its module
path in YAML. Snapshot tests record a scenario against a real model once, then
replay it here without a key. Its parts:

* :mod:`.entries` -- the closed :data:`ReplayEntry` union and its JSON check;
* :mod:`.script` -- session log to script: :func:`parse_session_log`,
  :func:`derive_replay_script`, :func:`load_replay_script`;
* :mod:`.player` -- one entry as a chunk stream (:func:`play_entry`);
* :mod:`.plugin` -- :func:`install_llm_replay` and the plugin entry.

Error codes: ``REPLAY_NO_FIXTURE``, ``REPLAY_FIXTURE_NOT_FOUND``, ``REPLAY_IO``,
``MALFORMED``, ``UNREACHABLE`` (unknown entry kind), ``REPLAY_NEEDS_OVERRIDE``,
``REPLAY_EXHAUSTED``, ``ABORTED``; a ``throw`` entry raises its own ``LlmError``.
"""

from dsh.plugins.llm_replay.entries import (
    ChunksEntry,
    HangEntry,
    ReplayEntry,
    ThrowEntry,
    parse_replay_entry,
)
from dsh.plugins.llm_replay.player import play_entry
from dsh.plugins.llm_replay.plugin import (
    FILE_ENV,
    OVERRIDE_ENV,
    Config,
    apply,
    inject,
    install_llm_replay,
    name,
)
from dsh.plugins.llm_replay.script import (
    OVERRIDE_FILE_NAME,
    derive_replay_script,
    load_replay_script,
    parse_session_log,
)

__all__ = [
    "FILE_ENV",
    "OVERRIDE_ENV",
    "OVERRIDE_FILE_NAME",
    "ChunksEntry",
    "Config",
    "HangEntry",
    "ReplayEntry",
    "ThrowEntry",
    "apply",
    "derive_replay_script",
    "inject",
    "install_llm_replay",
    "load_replay_script",
    "name",
    "parse_replay_entry",
    "parse_session_log",
    "play_entry",
]
