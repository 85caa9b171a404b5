"""A PostgreSQL server of a test's own, which the test may stop, start and restart.

The machine's server is shared by every test run on it (and, on a dev machine, by whatever else
uses it): a test that restarts it fails the others' queries. This one is made by ``initdb`` in a
temporary directory and listens on a free port of 127.0.0.1 only. As root (CI), the server runs
as the ``postgres`` user, as PostgreSQL requires.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
PG_CTL_TIMEOUT = 60  # seconds for pg_ctl to stop or start the server


def _binary(name: str) -> str:
    for directory in BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name}: no PostgreSQL server binaries on this machine")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """``initdb`` into a new temporary directory; :meth:`start` it, :meth:`remove` at the end."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="scrapespy-pg-"))
        self.port = _free_port()
        self.data = self.directory / "data"
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        self._run(_binary("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as, *command], check=True, capture_output=True, timeout=PG_CTL_TIMEOUT
        )

    def _pg_ctl(self, action: str, *args: str) -> None:
        self._run(_binary("pg_ctl"), action, "-D", str(self.data), "-w", *args)

    def start(self) -> Cluster:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=200"
        )
        self._pg_ctl("start", "-o", options, "-l", str(self.directory / "server.log"))
        return self

    def stop(self) -> None:
        """A fast shutdown: the sessions are ended, as in a failover or a minor upgrade."""
        self._pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        """Stopped and started again (``pg_ctl restart`` would forget the log file, and the
        server would keep the pipes of this call open)."""
        self.stop()
        self.start()

    def remove(self) -> None:
        try:
            self._pg_ctl("stop", "-m", "immediate")
        except subprocess.CalledProcessError:  # not running
            pass
        shutil.rmtree(self.directory, ignore_errors=True)
