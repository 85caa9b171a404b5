"""A PDF converted by several idle extraction workers at once.

Alone, a PDF's conversion was most of its scrape's time, on one core while the other idled
(docs/decisions/0033-extraction-workers-and-pdf-shares.md). When a PDF is the only scrape in flight
and workers are idle, the pool sends it to several of them, as many as :func:`parts_of` says
(under concurrency the cores are busy anyway, and sharing costs about a tenth more CPU): each
measures the lines of its equal run of pages
(:func:`service.extraction.documents.pdf_part`), and one more task joins the shares into
paragraphs, headings and fields exactly as one worker's whole conversion does (the paragraphs
cross page breaks, so the join needs every page's lines). A share that fails fails the document
as the whole conversion would have. A share past a bound (the answer's: dense text on many
pages, whose measured lines are larger than its markdown) gives way to a whole conversion in one
worker, which fails past a bound of the document's own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.python.failure import Failure

from service.extraction.bounds import PageTooLarge
from service.extraction.documents import PDF
from service.extraction.outputs import OutputOptions
from service.extraction.selectors import CompiledSelectors
from service.extraction.worker import encode_join, encode_part
from service.extraction.worker_process import Worker

Queue = Callable[[bytes], "Deferred[dict[str, Any]]"]
# Idle workers a PDF is shared between at most: one a core.
SHARES = max(1, os.cpu_count() or 1)


def parts_of(
    kind: str,
    queued: bool,
    alone: Callable[[], bool] | None,
    workers: list[Worker],
    account: int | None,
    size: int,
) -> int:
    """How many shares a document is converted in: one unless it is a PDF and it is the only
    scrape in flight (no page ``queued`` for a worker, and ``alone`` says so when the pool has
    it); then as many as :func:`shares` allows."""
    busy = queued or (alone is not None and not alone())
    return 1 if kind != PDF or busy else shares(workers, account, size, SHARES)


def shares(workers: list[Worker], account: int | None, size: int, most: int) -> int:
    """How many workers may convert a PDF together now (nothing waits): the idle ones, at most
    ``most``, and the account still held to all workers but one."""
    idle = held = 0
    for worker in workers:
        if not worker.tasks:
            idle += worker.alive and worker.ready
        elif any(task.account == account for task in worker.tasks):
            held += 1
    return min(idle, most, size - 1 - held)


def convert_in_shares(
    queue: Queue,
    whole: Callable[[], Deferred[dict[str, Any]]],
    body: bytes,
    parts: int,
    selectors: CompiledSelectors | None,
    options: OutputOptions | None,
) -> Deferred[dict[str, Any]]:
    """The fields of the PDF ``body`` converted in ``parts`` shares, each sent by ``queue``
    (which puts a document frame in the pool's queue); ``whole`` converts it in one worker."""
    shares = [queue(encode_part(body, part, parts)) for part in range(parts)]
    gathered = DeferredList(shares, consumeErrors=True)

    def joined(results: list[tuple[bool, Any]]) -> Deferred[dict[str, Any]]:
        for ok, outcome in results:
            if ok:
                continue
            if outcome.check(PageTooLarge):
                # its lines may be past the answer's bound where the markdown is not; a
                # document past a bound fails the whole conversion too, at the same check
                return whole()
            return _failed(outcome)
        return queue(encode_join([outcome for _, outcome in results], selectors, options))

    return gathered.addCallback(joined)


def _failed(failure: Failure) -> Deferred[dict[str, Any]]:
    d: Deferred[dict[str, Any]] = Deferred()
    d.errback(failure)
    return d
