"""A test plugin: the real local bash executor on a host without an OS sandbox (it reports none)."""

from __future__ import annotations

from dsh.core.bash import SandboxSupport
from dsh.plugins.bash_local import LocalBashExecutor


class UnsandboxedBash(LocalBashExecutor):
    """``bash-local`` whose probe found nothing: the permissions then ask before bash runs."""

    def sandbox_support(self) -> SandboxSupport:
        return SandboxSupport(detail="test host: no sandbox")
