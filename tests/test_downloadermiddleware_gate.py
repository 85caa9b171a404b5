"""The hold gate on its own: a scrape's request goes past it only once its credits are held."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from middlewares.gate import HoldGateMiddleware, Withdrawn
from service import ledger
from service.config import Config
from service.engine import SHUTTING_DOWN, EngineBridge
from service.jobs import JOB, ScrapeJob
from spiders.feed import FeedSpider

URL = "http://127.0.0.1:1/page"


def request(job: ScrapeJob | None) -> Request:
    return Request(URL, meta={} if job is None else {JOB: job})


def pending() -> ScrapeJob:
    job = ScrapeJob(url=URL)
    job.cleared = None  # as EngineBridge.enter leaves it while the hold is on its way
    return job


def test_an_open_gate_and_a_request_without_a_job_pass_at_once():
    gate = HoldGateMiddleware()
    assert gate.process_request(request(ScrapeJob(url=URL))) is None
    assert gate.process_request(request(None)) is None  # robots.txt, scrapy shell


def test_a_shut_gate_refuses_at_once():
    job = pending()
    job.decide(False)
    with pytest.raises(Withdrawn):
        HoldGateMiddleware().process_request(request(job))


@pytest_twisted.ensureDeferred
async def test_a_request_waits_until_its_hold_is_in():
    job = pending()
    waiting = HoldGateMiddleware().process_request(request(job))
    assert waiting is not None
    passed = deferred_from_coro(waiting)
    assert not passed.called  # nothing goes on while the hold is on its way
    job.decide(True)
    assert await passed is None


@pytest_twisted.ensureDeferred
async def test_a_request_refused_while_it_waits_goes_no_further():
    job = pending()
    passed = deferred_from_coro(HoldGateMiddleware().process_request(request(job)))
    job.decide(False)
    with pytest.raises(Withdrawn):
        await passed


def test_the_spider_drops_a_withdrawn_request_and_reports_any_other_failure():
    spider = FeedSpider()
    job = ScrapeJob(url=URL)
    withdrawn = Failure(Withdrawn("refused"))
    withdrawn.request = request(job)  # type: ignore[attr-defined]
    assert spider.failed(withdrawn) == []
    other = Failure(ConnectionRefusedError("refused"))
    other.request = request(job)  # type: ignore[attr-defined]
    assert [item.job for item in spider.failed(other)] == [job]


class Database:
    """Records what the bridge hands the database threads."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def run_hot(self, fn: Any, *args: Any) -> Deferred[None]:
        self.calls.append((fn, *args))
        return succeed(None)


def test_a_hold_that_comes_in_after_the_answer_is_released_and_its_request_withdrawn():
    # The service's shutdown answered a scrape whose hold was still on its way.
    database = Database()
    bridge = EngineBridge(Config.from_env({}), database)  # type: ignore[arg-type]
    job = pending()
    bridge._abandon(job, SHUTTING_DOWN)  # what drain() does with a scrape not yet finished
    assert database.calls == []  # it held nothing yet
    job.account_id, job.hold_id = 7, 42
    bridge.clear(job)
    assert [(fn, hold_id) for fn, hold_id, _ in database.calls] == [(ledger.release, 42)]
    assert job.cleared is False  # withdrawn: a request left waiting would hold the engine open
    assert bridge._watchdogs == {}
