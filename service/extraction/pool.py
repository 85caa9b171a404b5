"""Extraction in worker processes, so that parsing a page never holds the reactor thread.

Extraction was half of the reactor thread's time per static scrape (py-spy, ``make bench``),
and lexbor holds the GIL for as long as it parses: a hostile page of deeply nested elements
kept the reactor, and every other caller, waiting for seconds. The parent sends each page to
one of ``SCRAPESPY_EXTRACT_WORKERS`` child processes (``python -m service.extraction.pool``) over
its stdin and reads the fields back from its stdout; the reactor only moves bytes. Each worker
holds up to ``PIPELINE`` pages, parsing the first, so that it never waits for the reactor to
read a reply before it has another page to parse.

The frames in both directions, and the worker's side of them, are :mod:`service.extraction.worker`;
the worker process as the parent holds it is :mod:`service.extraction.worker_process`.

A worker that does not answer within the scrape's remaining time (at least ``MIN_SECONDS``), or
that dies, is killed and replaced; its page gets :class:`ExtractionFailed`, which the result
pipeline reports as a failed, unbilled scrape (:mod:`service.extraction.failures`). One past
``SCRAPESPY_EXTRACT_MAX_SECONDS`` first gets :class:`ExtractionTooLarge`, as does a page past the
other bounds of :mod:`service.extraction.bounds`, which the worker checks before parsing; it also
cuts the fields there, so that a padded field never crosses the pipe.

Waiting pages take turns by account, the ones a caller waits on before a job's
(:mod:`service.extraction.turns`); a worker parsing a large page is sent no second one, which
would wait behind it, and which worker may take a page is :func:`.worker_process.fits`.

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

import logging
import signal
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from twisted.internet.defer import Deferred, fail, succeed

from service.extraction.bounds import AnswerBounds, PageTooLarge
from service.extraction.failures import (
    PROCESSING_FAILED,
    PROCESSING_TIMED_OUT,
    DocumentFailed,
    ExtractionFailed,
    ExtractionTooLarge,
    crash_message,
)
from service.extraction.outputs import OutputOptions
from service.extraction.selectors import CompiledSelectors
from service.extraction.split import convert_in_shares, parts_of
from service.extraction.turns import Turns
from service.extraction.worker import (
    FRAME_LENGTH,
    encode_document,
    encode_request,
    extract_within,
    limit_memory,
    serve,
)
from service.extraction.worker_process import Task, Worker, fits, reactor, spawn

log = logging.getLogger(__name__)

MIN_SECONDS = 5.0
RESPAWN_DELAY = 1.0
INLINE_MAX_CHARS = 64 * 1024
INLINE_MAX_TAGS = 2048
# Pages sent to a worker before its reply to the first: it reads the next page as soon as it has
# written a reply, instead of idling until the reactor has read that reply and sent another.
PIPELINE = 2
# A page this large is not followed by a second one in its worker: it may take a while.
PIPELINE_MAX_BYTES = 256 * 1024


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
        self.workers: list[Worker] = []
        self.queue: Turns[Task] = Turns()
        self.stopping = False
        self._gone: Deferred[None] | None = None
        self._kill_timer: Any = None

    def start(self) -> None:
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        worker = Worker(self)
        self.workers.append(worker)
        spawn(worker, self.command)

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
        alone in flight is shared between idle workers (service.extraction.split)."""

        def queue(frame: bytes) -> Deferred[dict[str, Any]]:
            return self._queued(frame, timeout, account, background, document=True)

        def whole() -> Deferred[dict[str, Any]]:
            return queue(encode_document(body, kind, url, selectors, options))

        parts = parts_of(kind, bool(self.queue), self.alone, self.workers, account, self.size)
        if parts < 2:
            return whole()
        return convert_in_shares(queue, whole, body, parts, selectors, options)

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
            Task(
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
        self.dispatch()
        return d

    @staticmethod
    def _small(text: str, options: OutputOptions | None) -> bool:
        """Whether the page parses in milliseconds: small enough to parse in place."""
        return (
            (
                options is None
                or not (options.only_main_content or options.records or options.tracked)
            )
            and len(text) <= INLINE_MAX_CHARS
            and text.count("<") <= INLINE_MAX_TAGS
        )

    def _inline(self) -> bool:
        return self.alone is not None and not self.queue and self.alone()

    def dispatch(self) -> None:
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
                    task = self.queue.take(
                        partial(fits, worker, workers=self.workers, size=self.size)
                    )
                    if task is None:
                        continue
                    worker.tasks.append(task)
                    if len(worker.tasks) == 1:
                        self._clock(worker)
                    worker.protocol.transport.write(task.frame)

    def _clock(self, worker: Worker) -> None:
        """Starts the time of the page the worker parses now (the first of its pages)."""
        task = worker.tasks[0]
        task.timer = reactor().callLater(task.timeout, self._overran, worker)

    def _requeue(self, worker: Worker) -> Task | None:
        """Takes the worker's pages back: the one it was parsing is returned, the pages it had
        not started go back to the front of the queue, in order."""
        if not worker.tasks:
            return None
        first = worker.tasks.popleft()
        self.queue.done(first)
        self.queue.put_back(worker.tasks)
        worker.tasks.clear()
        return first

    def _overran(self, worker: Worker) -> None:
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
        self.dispatch()

    def _retire(self, worker: Worker) -> None:
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

    def received(self, worker: Worker, data: bytes) -> None:
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
        self.dispatch()

    def ended(self, worker: Worker, signal_number: int | None = None) -> None:
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
                task.deferred.errback(
                    DocumentFailed(crash_message(self.bounds.max_memory_mb), "document_unreadable")
                )
            else:
                task.deferred.errback(ExtractionFailed(PROCESSING_FAILED))
        if was_alive and not self.stopping:
            if not worker.ready:
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
            self.dispatch()
            return
        self._fail_queued()  # pages it had not started, on its way out
        if not self.workers and self._gone is not None and not self._gone.called:
            if self._kill_timer is not None and self._kill_timer.active():
                self._kill_timer.cancel()
            self._gone.callback(None)

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


if __name__ == "__main__":
    # The parent drains its scrapes on SIGINT/SIGTERM and then closes this worker's stdin;
    # a signal sent to the whole process group must not kill the worker first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    wire = sys.argv[1] if len(sys.argv) > 1 else None
    worker_bounds = AnswerBounds.from_wire(orjson.loads(wire)) if wire else AnswerBounds()
    limit_memory(worker_bounds.max_memory_mb)
    serve(sys.stdin.buffer, sys.stdout.buffer, worker_bounds)
