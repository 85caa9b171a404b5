"""Instances: the name a page's attempt records, whether another process's attempt is over, and
what an instance keeps of each job (:class:`JobCache`)."""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Generic, TypeVar


def instance_name() -> str:
    """What a page's row records as the instance of its attempt: host, process and a token of
    this start of the process (a process that comes back may get the same pid)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def is_dead(instance: str | None, this: str) -> bool:
    """SQLite: whether the attempt of the process named ``instance`` is over. The database is one
    host's file, so a process of another host name was this host's before a restart (a
    container's). This process's own pages are asked about only when its loop is not running
    them (an attempt that raised): they are over too."""
    if instance is None or instance == this:
        return True
    host, pid, _ = instance.rsplit(":", 2) if instance.count(":") >= 2 else ("", "0", "")
    mine, my_pid, _ = this.rsplit(":", 2)
    if host != mine or not pid.isdigit() or int(pid) == int(my_pid):
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


V = TypeVar("V")

JOBS_KEPT = 256  # jobs whose terms and checked options an instance keeps (PageRuns)


# ... and for how long: a job's seq may be given to a new job once the old one is purged, at
# least a day after it finished (SQLite reuses the highest rowid), far longer than this
JOB_KEPT_SECONDS = 600.0


class JobCache(Generic[V]):
    """What an instance keeps of each job that never changes (its terms, its checked options):
    at most JOBS_KEPT jobs, each for JOB_KEPT_SECONDS."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[float, V]] = {}

    def get(self, job_seq: int) -> V | None:
        found = self._kept.get(job_seq)
        if found is None or time.monotonic() - found[0] > JOB_KEPT_SECONDS:
            return None
        return found[1]

    def put(self, job_seq: int, value: V) -> None:
        if len(self._kept) >= JOBS_KEPT:
            self._kept.clear()
        self._kept[job_seq] = (time.monotonic(), value)
