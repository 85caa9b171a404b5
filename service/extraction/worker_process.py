"""An extraction worker process as the parent holds it (service.extraction.pool): the pages
handed to it, and Twisted's process around it, read in larger chunks than Twisted's own.
"""

from __future__ import annotations

import errno
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from twisted.internet.defer import Deferred
from twisted.internet.main import CONNECTION_DONE, CONNECTION_LOST
from twisted.internet.process import Process, ProcessReader
from twisted.internet.protocol import ProcessProtocol

# A pipe's capacity on Linux: a reply is read in one turn of the reactor loop, not in 8 kB ones.
READ_SIZE = 64 * 1024
_CHILD_ENV = ("PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "VIRTUAL_ENV", "TMPDIR")


def reactor() -> Any:
    """The running reactor (installed by the service's entry points, service.core.reactor)."""
    from twisted.internet import reactor as installed

    return installed


class Feeder(Protocol):
    """What feeds a worker its pages and hears what it answers: the pool."""

    def received(self, worker: Worker, data: bytes) -> None: ...

    def ended(self, worker: Worker, signal_number: int | None = None) -> None: ...


@dataclass
class Task:
    frame: bytes
    timeout: float
    deferred: Deferred[dict[str, Any]]
    timer: Any = None
    account: int | None = None
    background: bool = False  # a job's page: no caller waits on it
    document: bool = False  # a document's bytes, converted (service.extraction.documents)
    capped: bool = False  # ``timeout`` is the page's own bound, not its scrape's time left
    light: bool = False  # a page ``_small`` says parses in milliseconds


@dataclass
class Worker:
    pool: Feeder
    protocol: Any = None
    # the page it is parsing first, then the one it reads next (at most ``PIPELINE``)
    tasks: deque[Task] = field(default_factory=deque)
    buffer: bytearray = field(default_factory=bytearray)
    alive: bool = True
    # it has said so with an empty frame, once started: a page's time starts only then, not
    # while the worker still imports (seconds on a busy machine)
    ready: bool = False


def fits(worker: Worker, task: Task, workers: list[Worker], size: int) -> bool:
    """Whether ``task`` may go to ``worker`` now: not behind another account's long page, and
    not to an account's last worker unless it is light.

    Turns (service.extraction.turns) alone still let one account hold every worker: six pages
    that stay under every bound, each a few seconds of a worker, kept another caller's small
    page waiting 8.4 to 10 s (5 ms alone). So an account's pages hold at most all workers but
    one, and a page waits behind another account's page at a worker only when that one is
    light. A light page is one that would be parsed in place (``INLINE_MAX_CHARS``,
    ``INLINE_MAX_TAGS``, no main content, no ``json.selectors``: milliseconds): it may take that
    last worker, so that a lone caller's ordinary pages still use them all; only long ones are
    held to the others."""
    if worker.tasks and not worker.tasks[0].light and worker.tasks[0].account != task.account:
        return False
    if task.light or size < 2:
        return True
    account = task.account
    if any(mine.account == account for mine in worker.tasks):
        return True
    held = sum(
        1
        for other in workers
        if other is not worker and any(mine.account == account for mine in other.tasks)
    )
    return held < size - 1


def spawn(worker: Worker, command: list[str]) -> None:
    """Starts the worker's process running ``command``."""
    protocol = WorkerProtocol(worker)
    worker.protocol = protocol
    # The worker needs none of the service's secrets (database URL, Stripe keys).
    env = {name: os.environ[name] for name in _CHILD_ENV if name in os.environ}
    # what the reactor's spawnProcess does on POSIX, with a reader of larger chunks
    WorkerProcess(
        reactor(),
        command[0],
        command,
        env,
        None,
        protocol,
        None,
        None,
        {0: "w", 1: "r", 2: 2},
    )  # once it says it is ready, it is handed a page that waited, if any


class WorkerReader(ProcessReader):
    """A worker's stdout, read ``READ_SIZE`` bytes at a time.

    Twisted reads a process's output 8 kB at a time, one turn of the reactor loop each: the
    fields of a 32 kB page (38 kB) took 5 turns, with markdown and the main content's text
    (69 kB) 9, each costing the reactor thread as much as the read itself.
    """

    def doRead(self) -> Any:  # noqa: N802 - Twisted's name
        # twisted.internet.fdesc.readFromFD, with a larger read
        try:
            data = os.read(self.fd, READ_SIZE)
        except OSError as exc:
            return None if exc.errno in (errno.EAGAIN, errno.EINTR) else CONNECTION_LOST
        if not data:
            return CONNECTION_DONE
        self.dataReceived(data)
        return None


class WorkerProcess(Process):
    processReaderFactory = WorkerReader


class WorkerProtocol(ProcessProtocol):
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def outReceived(self, data: bytes) -> None:  # noqa: N802
        self.worker.pool.received(self.worker, data)

    def processEnded(self, reason: Any) -> None:  # noqa: N802
        self.worker.pool.ended(self.worker, getattr(reason.value, "signal", None))
