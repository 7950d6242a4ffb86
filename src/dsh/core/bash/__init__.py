"""The bash executor seam (SPEC §9): ``BASH`` names the service, the dataclasses its vocabulary,
:class:`SandboxSupport` what its OS sandbox enforces."""

from dsh.core.bash.executor import BASH, BashExecutor, TaskDoneListener
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
