"""``bash-local``: run bash commands as local subprocesses (SPEC §9b).

Load :class:`LocalBashExecutor` as a plugin to provide the ``bash`` service::

    await ctx.plugin(LocalBashExecutor, {"timeoutMs": 30000})
"""

from dsh.plugins.bash_local.collector import CollectorRead, OutputCollector, default_spill_dir
from dsh.plugins.bash_local.env import DEFAULT_ENV_ALLOW, MODEL_FRIENDLY, ChildEnv, EnvPolicy, child_env
from dsh.plugins.bash_local.executor import LocalBashConfig, LocalBashExecutor, is_positive_finite
from dsh.plugins.bash_local.process import BashInternals, RunningBash, kill_group, run_bash, signal_name
from dsh.plugins.bash_local.reaper import Reaper
from dsh.plugins.bash_local.watch import CHUNK_BYTES, PipeWatch, pipe_holders

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_ENV_ALLOW",
    "MODEL_FRIENDLY",
    "BashInternals",
    "ChildEnv",
    "CollectorRead",
    "EnvPolicy",
    "LocalBashConfig",
    "LocalBashExecutor",
    "OutputCollector",
    "PipeWatch",
    "Reaper",
    "RunningBash",
    "child_env",
    "default_spill_dir",
    "is_positive_finite",
    "kill_group",
    "pipe_holders",
    "run_bash",
    "signal_name",
]
