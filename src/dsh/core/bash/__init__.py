"""The bash executor seam (SPEC §9): ``BASH`` names the service, the dataclasses its vocabulary."""

from dsh.core.bash.executor import BASH, BashExecutor, TaskDoneListener
from dsh.core.bash.types import (
    BashExecRequest,
    BashExecSpec,
    BashRunResult,
    BashTask,
    BashTaskRead,
    BashTaskStatus,
    CollectedOutput,
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
    "TaskDoneListener",
]
