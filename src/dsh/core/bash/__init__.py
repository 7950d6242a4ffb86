"""The bash executor seam (SPEC §9): ``BASH`` names the service, the dataclasses its vocabulary,
:class:`SandboxSupport` what its OS sandbox enforces, ``BASH_OUTPUT`` a run's live output."""

from dsh.core.bash.executor import BASH, BASH_OUTPUT, BashExecutor, TaskDoneListener
from dsh.core.bash.types import (
    BashExecRequest,
    BashExecSpec,
    BashRunResult,
    BashTask,
    BashTaskRead,
    BashTaskStatus,
    CollectedOutput,
    ConfinedMode,
    SandboxBackend,
    SandboxPolicy,
    SandboxSupport,
)

__all__ = [
    "BASH",
    "BASH_OUTPUT",
    "BashExecRequest",
    "BashExecSpec",
    "BashExecutor",
    "BashRunResult",
    "BashTask",
    "BashTaskRead",
    "BashTaskStatus",
    "CollectedOutput",
    "ConfinedMode",
    "SandboxBackend",
    "SandboxPolicy",
    "SandboxSupport",
    "TaskDoneListener",
]
