"""The hold gate: a scrape's request waits here, before anything can touch the network, until
its credits are held.

The engine bridge hands a request to the engine while the key lookup and the hold are still on
their way to the database (:meth:`service.engine.EngineBridge.enter`), so that the engine's
scheduling of the request and the database's round trip overlap. The request's job says whether
it may pass (``job.cleared``): None while the hold is on its way, True once the hold is in and
the job knows who pays (:meth:`~service.engine.EngineBridge.clear`), False when the request was
refused (401, 402, 403, 503) and must go no further (:meth:`~service.engine.EngineBridge.
withdraw`). A refused request ends in :class:`Withdrawn`, which the feed spider drops: no item,
no bill, no metrics.

This middleware must come before every other one that does something for a request (robots.txt
fetches, the proxy choice, the download): it is first in ``DOWNLOADER_MIDDLEWARES``. Requests
without a job (robots.txt, ``scrapy shell``) pass straight through.

    DOWNLOADER_MIDDLEWARES = {"middlewares.gate.HoldGateMiddleware": 10}
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future

from service.jobs import JOB, ScrapeJob

if TYPE_CHECKING:
    from scrapy import Request

WITHDRAWN = "the request was refused before its credits were held"


class Withdrawn(IgnoreRequest):
    """The API request was refused before its credits were held; nothing was fetched."""


class HoldGateMiddleware:
    def process_request(self, request: Request) -> Coroutine[Any, Any, None] | None:
        job: ScrapeJob | None = request.meta.get(JOB)
        if job is None or job.cleared:
            return None  # a plain function, so an open gate costs no coroutine
        if job.cleared is False:
            raise Withdrawn(WITHDRAWN)
        return self._wait(job)

    @staticmethod
    async def _wait(job: ScrapeJob) -> None:
        if not await maybe_deferred_to_future(job.wait_cleared()):
            raise Withdrawn(WITHDRAWN)
