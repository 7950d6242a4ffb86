"""``bash-local``: run bash commands as local subprocesses (SPEC §9b).

Load :class:`LocalBashExecutor` as a plugin to provide the ``bash`` service::

    await ctx.plugin(LocalBashExecutor, {"timeoutMs": 30000})

Commands run under the OS sandbox of their permission mode (bubblewrap, else
Landlock; see :mod:`dsh.plugins.bash_local.sandbox`). A foreground run's output is
emitted live as ``bash/output`` events; long output spills to files, kept in the
session's folder when ``sessionFiles`` is set (see :mod:`dsh.plugins.bash_local.spill`).
"""

from dsh.plugins.bash_local.collector import CollectorRead, OutputCollector, default_spill_dir
from dsh.plugins.bash_local.env import DEFAULT_ENV_ALLOW, MODEL_FRIENDLY, ChildEnv, EnvPolicy, child_env
from dsh.plugins.bash_local.executor import LocalBashConfig, LocalBashExecutor, is_positive_finite
from dsh.plugins.bash_local.landlock import landlock_abi
from dsh.plugins.bash_local.process import (
    BashInternals,
    OutputListener,
    RunningBash,
    kill_group,
    run_bash,
    signal_name,
)
from dsh.plugins.bash_local.reaper import Reaper
from dsh.plugins.bash_local.sandbox import (
    BackendChoice,
    Launch,
    Sandbox,
    SandboxConfig,
    detect,
    forget_probes,
    platform_line,
    temp_dirs,
)
from dsh.plugins.bash_local.spill import SESSION_FILES, bash_spill_dir, prune_spills, session_folder, session_segment
from dsh.plugins.bash_local.watch import CHUNK_BYTES, PipeWatch, pipe_holders

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_ENV_ALLOW",
    "MODEL_FRIENDLY",
    "SESSION_FILES",
    "BackendChoice",
    "BashInternals",
    "ChildEnv",
    "CollectorRead",
    "EnvPolicy",
    "Launch",
    "LocalBashConfig",
    "LocalBashExecutor",
    "OutputCollector",
    "OutputListener",
    "PipeWatch",
    "Reaper",
    "RunningBash",
    "Sandbox",
    "SandboxConfig",
    "bash_spill_dir",
    "child_env",
    "default_spill_dir",
    "detect",
    "forget_probes",
    "is_positive_finite",
    "kill_group",
    "landlock_abi",
    "pipe_holders",
    "platform_line",
    "prune_spills",
    "run_bash",
    "session_folder",
    "session_segment",
    "signal_name",
    "temp_dirs",
]
