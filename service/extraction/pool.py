"""Extraction in worker processes, so that parsing a page never holds the reactor thread.

Extraction was half of the reactor thread's time per static scrape (py-spy, ``make bench``),
and lexbor holds the GIL for as long as it parses: a hostile page of deeply nested elements
kept the reactor, and every other caller, waiting for seconds. The parent sends each page to
one of ``SCRAPESPY_EXTRACT_WORKERS`` child processes (``python -m service.extraction.pool``) over
its stdin and reads the fields back from its stdout; the reactor only moves bytes. Each worker
holds up to ``PIPELINE`` pages, parsing the first, so that it never waits for the reactor to
read a reply before it has another page to parse.

The frames in both directions, and the worker's side of them, are
:mod:`service.extraction.worker`.

A worker that does not answer within the scrape's remaining time (at least
``MIN_SECONDS``), or that dies, is killed and replaced; its page gets
:class:`ExtractionFailed`, which the result pipeline reports as a failed, unbilled scrape. One
past ``SCRAPESPY_EXTRACT_MAX_SECONDS`` first gets :class:`ExtractionTooLarge`, as does a page past
the other bounds of :mod:`service.extraction.bounds`, which the worker checks before parsing;
it also cuts the fields there, so that a padded field never crosses the pipe.

Waiting pages take turns by account, the ones a caller waits on before a job's
(:mod:`service.extraction.turns`); a worker parsing a large page is sent no second one, which
would wait behind it. Turns alone still let one account hold every worker: six pages that stay
under every bound, each a few seconds of a worker, kept another caller's small page waiting
8.4 to 10 s (5 ms alone). So an account's pages hold at most all workers but one, and a page
waits behind another account's page at a worker only when that one is light. A light page is
one that would be parsed in place (``INLINE_MAX_CHARS``, ``INLINE_MAX_TAGS``, no main content,
no ``json.selectors``: milliseconds): it may take that last worker, so that a lone caller's
ordinary pages still use them all; only long ones are held to the others.

A small page (``INLINE_MAX_CHARS``, ``INLINE_MAX_TAGS``) is parsed right here when the pool's
``alone`` says no other scrape is in flight: a worker then protects no other caller, and the
round trip to it (two process wake-ups, the page and its fields through pipes) cost as much as
the parse itself at concurrency 1. Within those bounds the worst nesting parses in about 11 ms;
under concurrency, and for larger pages, the workers parse. The main content
(``only_main_content``) is always found in a worker: on a small page of nested elements within
those bounds it took 90 to 125 ms, where whole-page markdown and HTML took 7 to 14 ms. So are
``json.selectors``: lxml cannot stop an XPath query, and ``//i[count(//i[count(//i) > 0]) > 0]``
on 900 elements held the reactor thread 12.6 s when it ran here; in a worker the time limit
ends it (a ``too_large`` failure, unbilled).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.main import CONNECTION_DONE, CONNECTION_LOST
from twisted.internet.process import Process, ProcessReader
from twisted.internet.protocol import ProcessProtocol

from service.extraction.bounds import AnswerBounds, PageTooLarge
from service.extraction.documents import PDF
from service.extraction.outputs import OutputOptions
from service.extraction.selectors import CompiledSelectors
from service.extraction.split import convert_in_shares
from service.extraction.turns import Turns
from service.extraction.worker import (
    FRAME_LENGTH,
    encode_document,
    encode_request,
    extract_within,
    limit_memory,
    serve,
)

log = logging.getLogger(__name__)

MIN_SECONDS = 5.0
RESPAWN_DELAY = 1.0
PROCESSING_FAILED = "the page could not be processed"
PROCESSING_TIMED_OUT = "the page took too long to process"
INLINE_MAX_CHARS = 64 * 1024
INLINE_MAX_TAGS = 2048
# A pipe's capacity on Linux: a reply is read in one turn of the reactor loop, not in 8 kB ones.
READ_SIZE = 64 * 1024
# Pages sent to a worker before its reply to the first: it reads the next page as soon as it has
# written a reply, instead of idling until the reactor has read that reply and sent another.
PIPELINE = 2
# A page this large is not followed by a second one in its worker: it may take a while.
PIPELINE_MAX_BYTES = 256 * 1024
# Idle workers a PDF is shared between at most (service.extraction.split): one a core.
SHARES = max(1, os.cpu_count() or 1)


_CHILD_ENV = ("PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "VIRTUAL_ENV", "TMPDIR")


def reactor() -> Any:
    """The running reactor (installed by the service's entry points, service.core.reactor)."""
    from twisted.internet import reactor as installed

    return installed


class ExtractionFailed(Exception):
    """The page could not be extracted: its worker timed out or died."""


class ExtractionTooLarge(ExtractionFailed, PageTooLarge):
    """The page is past a bound of service.extraction.bounds: a ``too_large`` failure."""


class DocumentFailed(ExtractionFailed):
    """A document the worker refused (service.extraction.documents); ``code`` says why."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Task:
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
class _Worker:
    pool: ExtractionPool
    born: float = field(default_factory=time.monotonic)
    protocol: Any = None
    # the page it is parsing first, then the one it reads next (at most ``PIPELINE``)
    tasks: deque[_Task] = field(default_factory=deque)
    buffer: bytearray = field(default_factory=bytearray)
    alive: bool = True
    # it has said so with an empty frame, once started: a page's time starts only then, not
    # while the worker still imports (seconds on a busy machine)
    ready: bool = False


class ExtractionPool:
    """Worker processes fed ``PIPELINE`` pages at a time each; pages wait their account's turn
    when all are busy."""

    def __init__(
        self,
        workers: int,
        command: list[str] | None = None,
        alone: Callable[[], bool] | None = None,
        bounds: AnswerBounds | None = None,
    ) -> None:
        self.size = workers
        self.alone = alone
        self.bounds = bounds or AnswerBounds()
        self.command = command or [
            sys.executable,
            "-m",
            "service.extraction.pool",
            orjson.dumps(self.bounds.to_wire()).decode(),
        ]
        self.workers: list[_Worker] = []
        self.queue: Turns[_Task] = Turns()
        self.stopping = False
        self._gone: Deferred[None] | None = None
        self._kill_timer: Any = None

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        worker = _Worker(self)
        protocol = _WorkerProtocol(worker)
        worker.protocol = protocol
        # The worker needs none of the service's secrets (database URL, Stripe keys).
        env = {name: os.environ[name] for name in _CHILD_ENV if name in os.environ}
        self.workers.append(worker)
        # what the reactor's spawnProcess does on POSIX, with a reader of larger chunks
        _WorkerProcess(
            reactor(),
            self.command[0],
            self.command,
            env,
            None,
            protocol,
            None,
            None,
            {0: "w", 1: "r", 2: 2},
        )  # once it says it is ready, it is handed a page that waited, if any

    def extract(
        self,
        text: str,
        url: str,
        selectors: CompiledSelectors | None,
        timeout: float,
        options: OutputOptions | None = None,
        account: int | None = None,
        background: bool = False,
    ) -> Deferred[dict[str, Any]]:
        """A Deferred firing with the fields of ``text`` (and the outputs ``options`` asks
        for), or failing with ExtractionFailed (ExtractionTooLarge past the bounds). The page
        waits for ``account``'s turn; ``background``: no caller waits on it (a job's page)."""
        small = self._small(text, options)
        if small and self._inline():
            try:
                return succeed(extract_within(text, url, selectors, options, self.bounds))
            except PageTooLarge as exc:
                return fail(ExtractionTooLarge(str(exc)))
            except Exception as exc:  # extract does not raise; a bug must not lose the scrape
                log.warning("extraction failed: %s", exc.__class__.__name__)
                return fail(ExtractionFailed(PROCESSING_FAILED))
        frame = encode_request(text, url, selectors, options)
        return self._queued(frame, timeout, account, background, light=small)

    def convert(
        self,
        body: bytes,
        kind: str,
        url: str,
        selectors: CompiledSelectors | None,
        timeout: float,
        options: OutputOptions | None = None,
        account: int | None = None,
        background: bool = False,
    ) -> Deferred[dict[str, Any]]:
        """:meth:`extract` for a document's bytes (service.extraction.documents): always in a
        worker, as even a small PDF may take long; fails with :class:`DocumentFailed` too. A PDF
        that finds workers idle is shared between them (service.extraction.split)."""

        def whole() -> Deferred[dict[str, Any]]:
            frame = encode_document(body, kind, url, selectors, options)
            return self._queued(frame, timeout, account, background, document=True)

        parts = self._shares(account) if kind == PDF else 1
        if parts < 2:
            return whole()

        def queue(frame: bytes) -> Deferred[dict[str, Any]]:
            return self._queued(frame, timeout, account, background, document=True)

        return convert_in_shares(queue, whole, body, parts, selectors, options)

    def _shares(self, account: int | None) -> int:
        """How many workers may convert a PDF together now: the idle ones, when nothing waits,
        one a core, and the account still held to all workers but one."""
        if self.queue:
            return 1
        idle = held = 0
        for worker in self.workers:
            if not worker.tasks:
                idle += worker.alive and worker.ready
            elif any(task.account == account for task in worker.tasks):
                held += 1
        return min(idle, SHARES, self.size - 1 - held)

    def _queued(
        self,
        frame: bytes,
        timeout: float,
        account: int | None,
        background: bool,
        document: bool = False,
        light: bool = False,
    ) -> Deferred[dict[str, Any]]:
        d: Deferred[dict[str, Any]] = Deferred()
        left = max(timeout, MIN_SECONDS)
        capped = self.bounds.max_seconds < left
        self.queue.append(
            _Task(
                frame,
                self.bounds.max_seconds if capped else left,
                d,
                account=account,
                background=background,
                document=document,
                capped=capped,
                light=light,
            )
        )
        self._dispatch()
        return d

    @staticmethod
    def _small(text: str, options: OutputOptions | None) -> bool:
        """Whether the page parses in milliseconds: small enough to parse in place."""
        return (
            (options is None or not (options.only_main_content or options.records))
            and len(text) <= INLINE_MAX_CHARS
            and text.count("<") <= INLINE_MAX_TAGS
        )

    def _inline(self) -> bool:
        return self.alone is not None and not self.queue and self.alone()

    def _fits(self, worker: _Worker, task: _Task) -> bool:
        """Whether ``task`` may go to ``worker`` now: not behind another account's long page,
        and not to an account's last worker unless it is light."""
        if worker.tasks and not worker.tasks[0].light and worker.tasks[0].account != task.account:
            return False
        if task.light or self.size < 2:
            return True
        account = task.account
        if any(mine.account == account for mine in worker.tasks):
            return True
        held = sum(
            1
            for other in self.workers
            if other is not worker and any(mine.account == account for mine in other.tasks)
        )
        return held < self.size - 1

    def _dispatch(self) -> None:
        # an idle worker first, then a second page to each busy one
        for depth in range(1, PIPELINE + 1):
            for worker in self.workers:
                if not self.queue:
                    return
                if (
                    worker.alive
                    and worker.ready
                    and len(worker.tasks) < depth
                    and (not worker.tasks or len(worker.tasks[0].frame) <= PIPELINE_MAX_BYTES)
                ):
                    task = self.queue.take(partial(self._fits, worker))
                    if task is None:
                        continue
                    worker.tasks.append(task)
                    if len(worker.tasks) == 1:
                        self._clock(worker)
                    worker.protocol.transport.write(task.frame)

    def _clock(self, worker: _Worker) -> None:
        """Starts the time of the page the worker parses now (the first of its pages)."""
        task = worker.tasks[0]
        task.timer = reactor().callLater(task.timeout, self._overran, worker)

    def _requeue(self, worker: _Worker) -> _Task | None:
        """Takes the worker's pages back: the one it was parsing is returned, the pages it had
        not started go back to the front of the queue, in order."""
        if not worker.tasks:
            return None
        first = worker.tasks.popleft()
        self.queue.done(first)
        self.queue.put_back(worker.tasks)
        worker.tasks.clear()
        return first

    def _overran(self, worker: _Worker) -> None:
        task = self._requeue(worker)
        log.warning("an extraction worker overran its page's time; replacing it")
        self._retire(worker)
        if task is not None and task.capped:
            task.deferred.errback(
                ExtractionTooLarge(
                    f"the page took longer than {self.bounds.max_seconds:g} s to process "
                    "(SCRAPESPY_EXTRACT_MAX_SECONDS)"
                )
            )
        elif task is not None:
            task.deferred.errback(ExtractionFailed(PROCESSING_TIMED_OUT))
        self._dispatch()

    def _retire(self, worker: _Worker) -> None:
        if not worker.alive:
            return
        worker.alive = False
        if worker in self.workers:
            self.workers.remove(worker)
        try:
            worker.protocol.transport.signalProcess("KILL")
        except Exception:  # it has already gone
            pass
        if not self.stopping:
            self._spawn()

    def received(self, worker: _Worker, data: bytes) -> None:
        worker.buffer += data
        while len(worker.buffer) >= FRAME_LENGTH.size:
            (size,) = FRAME_LENGTH.unpack_from(worker.buffer)
            if len(worker.buffer) < FRAME_LENGTH.size + size:
                return
            body = bytes(worker.buffer[FRAME_LENGTH.size : FRAME_LENGTH.size + size])
            del worker.buffer[: FRAME_LENGTH.size + size]
            if not worker.ready:  # its first frame: started, it reads pages now
                worker.ready = True
                continue
            if not worker.tasks:
                continue
            task = worker.tasks.popleft()
            self.queue.done(task)
            task.timer.cancel()
            fields = orjson.loads(body)
            exhausted = fields.pop("exhausted", False)
            if exhausted:
                # out of memory, it exits after this reply: the pages it has not started go to
                # a fresh worker (service.extraction.worker.limit_memory)
                self.queue.put_back(worker.tasks)
                worker.tasks.clear()
                self._retire(worker)
            elif worker.tasks:
                self._clock(worker)
            if "too_large" in fields:
                task.deferred.errback(ExtractionTooLarge(fields["too_large"]))
            elif "refused" in fields:
                task.deferred.errback(DocumentFailed(fields["refused"], fields["code"]))
            elif "error" in fields and len(fields) == 1:
                log.warning("extraction failed in a worker: %s", fields["error"])
                task.deferred.errback(ExtractionFailed(PROCESSING_FAILED))
            else:
                task.deferred.callback(fields)
            if exhausted:
                break
        self._dispatch()

    def ended(self, worker: _Worker, signal_number: int | None = None) -> None:
        task = self._requeue(worker)
        was_alive = worker.alive
        worker.alive = False
        if worker in self.workers:
            self.workers.remove(worker)
        if task is not None:
            task.timer.cancel()
            if task.document and signal_number is not None:
                # pdfium aborts when an allocation fails: past the worker's memory, most likely
                log.warning("an extraction worker died of signal %d on a document", signal_number)
                task.deferred.errback(DocumentFailed(self._crashed(), "document_unreadable"))
            else:
                task.deferred.errback(ExtractionFailed(PROCESSING_FAILED))
        if was_alive and not self.stopping:
            if time.monotonic() - worker.born < RESPAWN_DELAY:
                # one that cannot even start would otherwise be started again in a tight loop
                log.error(
                    "an extraction worker exited as it started; retrying in %g s", RESPAWN_DELAY
                )
                reactor().callLater(RESPAWN_DELAY, self._respawn)
                if not any(other.ready for other in self.workers):
                    self._fail_queued()  # no worker can take them: the callers hear it now
            else:
                log.warning("an extraction worker exited; starting another")
                self._spawn()
        if not self.stopping:
            self._dispatch()
            return
        self._fail_queued()  # pages it had not started, on its way out
        if not self.workers and self._gone is not None and not self._gone.called:
            if self._kill_timer is not None and self._kill_timer.active():
                self._kill_timer.cancel()
            self._gone.callback(None)

    def _crashed(self) -> str:
        limit = self.bounds.max_memory_mb
        return "the document could not be converted: its converter stopped " + (
            f"(it needs more than the {limit} MiB of memory an extraction worker may use, "
            "SCRAPESPY_EXTRACT_MAX_MEMORY_MB, or the file crashed it)"
            if limit
            else "(the file crashed it)"
        )

    def _respawn(self) -> None:
        if not self.stopping and len(self.workers) < self.size:
            self._spawn()

    def stop(self, grace: float = 5.0) -> Deferred[None]:
        """Close the workers' input, so each exits after its page; fires once all are gone.

        Pages still queued fail; a worker still running after ``grace`` seconds is killed.
        """
        self.stopping = True
        self._fail_queued()
        gone: Deferred[None] = Deferred()
        if not self.workers:
            gone.callback(None)
            return gone
        self._gone = gone
        for worker in list(self.workers):
            transport = worker.protocol.transport
            if transport is not None:
                transport.closeStdin()
        self._kill_timer = reactor().callLater(grace, self._kill_all)
        return gone

    def _fail_queued(self) -> None:
        while self.queue:
            self.queue.popleft().deferred.errback(ExtractionFailed(PROCESSING_FAILED))

    def _kill_all(self) -> None:
        for worker in list(self.workers):
            try:
                worker.protocol.transport.signalProcess("KILL")
            except Exception:  # already gone
                pass


class _WorkerReader(ProcessReader):
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


class _WorkerProcess(Process):
    processReaderFactory = _WorkerReader


class _WorkerProtocol(ProcessProtocol):
    def __init__(self, worker: _Worker) -> None:
        self.worker = worker

    def outReceived(self, data: bytes) -> None:  # noqa: N802
        self.worker.pool.received(self.worker, data)

    def processEnded(self, reason: Any) -> None:  # noqa: N802
        self.worker.pool.ended(self.worker, getattr(reason.value, "signal", None))


if __name__ == "__main__":
    # The parent drains its scrapes on SIGINT/SIGTERM and then closes this worker's stdin;
    # a signal sent to the whole process group must not kill the worker first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    wire = sys.argv[1] if len(sys.argv) > 1 else None
    worker_bounds = AnswerBounds.from_wire(orjson.loads(wire)) if wire else AnswerBounds()
    limit_memory(worker_bounds.max_memory_mb)
    serve(sys.stdin.buffer, sys.stdout.buffer, worker_bounds)
