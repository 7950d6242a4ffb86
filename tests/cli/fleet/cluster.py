"""A local Ray cluster for the fleet tests, held by a small process of its own.

The holder process starts the cluster (``ray.init(address="local")``: 2 CPUs, no
dashboard), prints its address, and stops it (``ray.shutdown``) when its stdin
closes, so a test session ends its own cluster and never touches another's.
"""

from __future__ import annotations

import os
import subprocess
import sys

NO_AUTH = {"RAY_AUTH_MODE": "disabled"}
"""The cluster and its drivers run without Ray's token authentication (a private cluster on this host)."""

HOLDER = """
import sys, ray
context = ray.init(address="local", num_cpus=int(sys.argv[1]), include_dashboard=False, logging_level="WARNING")
print(context.address_info["address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""


class RayCluster:
    """A started local cluster: ``address`` to join it; :meth:`stop` ends it and its processes."""

    def __init__(self, cpus: int = 2) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(cpus)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **NO_AUTH},
        )
        assert self.process.stdout is not None
        self.address = self.process.stdout.readline().strip()
        if not self.address:
            self.stop()
            raise RuntimeError("the Ray cluster did not start (see the output above)")

    def stop(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown; kill the holder
            self.process.kill()
            self.process.wait()
