"""The item pipelines' order: the settlement is on its way while the page is parsed.

A unit test of the pipelines on their own, with a stand-in database that records what is sent
and answers when told; the end-to-end tests (test_e2e_scrape) show the billing on a real one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro, ensure_awaitable
from scrapy.utils.misc import load_object
from twisted.internet import reactor
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import deferLater
from twisted.python.failure import Failure

from pipelines.result import ResultPipeline
from service.billing import ledger
from service.browser.failures import BrowserError
from service.core.schemas import checked_scrape
from service.scrape.meta import ORDER
from service.scrape.order import ScrapeItem, ScrapeOrder
from service.scrape.scrapy_settings import ITEM_PIPELINES, default_settings
from spiders.feed import (
    MOBILE_USER_AGENT,
    FeedSpider,
    item_for_failure,
    item_for_response,
    request_for,
)

PAGE = b"<html><head><title>Parsed</title></head><body><h1>Hi</h1></body></html>"


class Crawler:
    stats = None
    settings = Settings(default_settings())

    def __init__(self, database: Any):
        self.scrapespy_database = database


class Database:
    """Records each settlement when it is sent; ``answer`` makes the database reply."""

    reactor_calls = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], str | None]] = []
        self.pending: list[Deferred[Any]] = []
        self.item: ScrapeItem | None = None

    def call(self, statement: str, params: dict[str, Any]) -> Deferred[Any]:
        assert self.item is not None
        title = self.item.result.title  # what was parsed when this went out
        self.sent.append((statement, params, title))
        d: Deferred[Any] = Deferred()
        self.pending.append(d)
        return d

    def run_hot(self, fn: Any, hold_id: int, **params: Any) -> Deferred[Any]:
        return self.call(fn.__name__, {"hold_id": hold_id, **params})

    def run(self, fn: Any, *args: Any) -> Deferred[Any]:
        self.sent.append((fn.__name__, {"args": args}, None))
        return succeed(1)  # the credits given back

    def answer(self, row: Any) -> None:
        self.pending.pop().callback(row)


class ThreadedDatabase(Database):
    """SQLite's way: the settlement runs on a database thread (service.db.Database.run_hot)."""

    reactor_calls = False


def pipelines(database: Database | None) -> list[Any]:
    """The service's item pipelines, in their order; without a database, those that need none."""
    stages = []
    for path, _ in sorted(ITEM_PIPELINES.items(), key=lambda pair: pair[1]):
        try:
            stages.append(load_object(path).from_crawler(Crawler(database)))
        except NotConfigured:  # billing needs the service's database
            continue
    return stages


def item_for(order: ScrapeOrder) -> ScrapeItem:
    request = Request(order.url, meta={ORDER: order})
    return item_for_response(HtmlResponse(order.url, status=200, body=PAGE, request=request))


async def chain(stages: list[Any], item: ScrapeItem) -> ScrapeItem:
    """What Scrapy's item pipeline manager does with an item (``_process_chain``)."""
    for stage in stages:
        item = await ensure_awaitable(stage.process_item(item))
    return item


def through(stages: list[Any], item: ScrapeItem) -> Deferred[ScrapeItem]:
    return deferred_from_coro(chain(stages, item))


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await deferLater(reactor, 0, lambda: None)


async def billed_scrape_under_way(
    database: Database,
) -> tuple[ScrapeOrder, ScrapeItem, Deferred[ScrapeItem]]:
    """A scrape holding 7 (1 credit) whose page arrived, left to go through the pipelines."""
    order = ScrapeOrder(url="http://example.com/", hold_id=7, account_id=3, costs={"none": 1})
    item = database.item = item_for(order)
    answered = through(pipelines(database), item)
    await turns()
    return order, item, answered


@pytest_twisted.ensureDeferred
async def test_the_settlement_is_sent_before_the_page_is_parsed_and_awaited_before_the_answer():
    database = Database()
    order, item, answered = await billed_scrape_under_way(database)

    [(statement, params, title_when_sent)] = database.sent
    assert statement == "pg_settle"
    assert (params["hold_id"], params["cost"], params["success"]) == (7, 1, True)
    assert title_when_sent is None, "the settlement waited for the parse"
    assert item.result.title == "Parsed", "the parse waited for the settlement"
    assert not answered.called, "the answer did not wait for the settlement"
    database.answer((1, False, True, 99))
    assert await answered is item and item.charged == 1
    assert params["elapsed_ms"] == item.result.elapsed_ms  # the billing basis, as answered


@pytest_twisted.ensureDeferred
async def test_a_capture_for_a_scrape_the_watchdog_answered_first_is_given_back():
    database = Database()
    order, item, answered = await billed_scrape_under_way(database)
    timed_out = replace(item.result, success=False, error="timed out after 20 s")
    assert order.finish(timed_out)  # what service.scrape.engine's watchdog does
    database.answer((1, False, True, 99))  # the capture was already on its way
    assert await answered is item and item.charged == 0
    assert database.sent[-1] == ("refund", {"args": (7, "timed out after 20 s")}, None)


@pytest_twisted.ensureDeferred
async def test_the_answer_billed_for_is_claimed_so_a_late_watchdog_cannot_replace_it():
    database = Database()
    order, item, answered = await billed_scrape_under_way(database)
    database.answer((1, False, True, 99))
    assert await answered is item and item.charged == 1
    timed_out = replace(item.result, success=False, error="timed out after 20 s")
    assert not order.claim(timed_out)  # the watchdog, firing now, answers nothing
    assert order.finish(item.result) and order.answer is item.result


@pytest_twisted.ensureDeferred
async def test_on_sqlite_a_scrape_answered_otherwise_first_sends_no_settlement():
    # the caller went away (service.scrape.engine released the hold): the late page settles nothing
    database = ThreadedDatabase()
    order = ScrapeOrder(url="http://example.com/", hold_id=7, account_id=3, costs={"none": 1})
    item = database.item = item_for(order)
    result_stage, *later_stages = pipelines(database)
    result_stage.process_item(item)
    gone = replace(item.result, success=False, error="the caller went away")
    assert order.claim(gone)
    assert await through(later_stages, item) is item
    assert database.sent == []
    assert (item.charged, item.result.credits_charged) == (0, 0)
    assert not order.finish(item.result)


@pytest_twisted.ensureDeferred
async def test_a_batch_page_leaves_its_settlement_to_the_batch_on_the_final_outcome():
    # service.jobs.batches settles it with the page's result, in one call (migration 0017)
    database = Database()
    order = ScrapeOrder(url="http://example.com/", hold_id=7, account_id=3, costs={"none": 2})
    order.settle_later = True
    item = database.item = item_for(order)
    assert await through(pipelines(database), item) is item
    assert database.sent == []  # nothing settled here
    assert order.to_settle is not None
    cost, consume_trial, usage = order.to_settle
    assert (cost, consume_trial, item.charged, item.result.credits_charged) == (2, False, 2, 2)
    assert (usage.account_id, usage.success, usage.elapsed_ms) == (3, True, item.result.elapsed_ms)


@pytest_twisted.ensureDeferred
async def test_on_sqlite_the_settlement_waits_for_the_parse():
    # its database thread shares the GIL with the parse: nothing would travel meanwhile
    database = ThreadedDatabase()
    order, item, answered = await billed_scrape_under_way(database)
    [(statement, params, title_when_sent)] = database.sent
    assert (statement, params["cost"], title_when_sent) == ("settle", 1, "Parsed")
    assert not answered.called
    database.answer(ledger.Settlement(1, False, True))
    assert await answered is item and item.charged == 1


@pytest_twisted.ensureDeferred
async def test_without_a_database_the_page_is_still_parsed():
    item = await through(pipelines(None), item_for(ScrapeOrder(url="http://example.com/")))
    assert item.result.title == "Parsed" and item.result.success is True
    assert item.page is None and item.settlement is None


def test_the_screenshot_the_browser_left_is_answered_as_base64():
    order = ScrapeOrder(url="http://example.com/", engine="js", formats=frozenset({"screenshot"}))
    request = request_for(order, FeedSpider())
    assert request.meta["scrapespy_screenshot"] == {"full_page": False}
    png = b"\x89PNG\r\n\x1a\nnot really an image"
    request.meta["scrapespy_screenshot_png"] = png
    response = HtmlResponse(order.url, body=b"<title>t</title>", request=request)
    item = ResultPipeline().process_item(item_for_response(response))
    assert item.result.screenshot == "iVBORw0KGgpub3QgcmVhbGx5IGFuIGltYWdl"  # type: ignore[attr-defined]
    plain = request_for(replace(order, formats=frozenset()), FeedSpider())
    assert "scrapespy_screenshot" not in plain.meta


def asked(**body: Any) -> ScrapeOrder:
    request, compiled = checked_scrape({"url": "http://example.com/", **body})
    return ScrapeOrder.asked(request, compiled)


BROWSER_KEYS = ("scrapespy_wait_for", "scrapespy_actions", "scrapespy_device", "scrapespy_cookies")
STEPS = [
    {"type": "click", "selector": "#more"},
    {"type": "click", "selector": ".tab", "all": True},
    {"type": "wait_for", "selector": "#list li"},
    {"type": "type", "selector": "#q", "text": "shoes"},
    {"type": "press", "key": "Enter"},
    {"type": "scroll", "direction": "down", "amount": 800},
    {"type": "scroll", "to": "bottom", "direction": None},
    {"type": "wait", "ms": 300},
    {"type": "screenshot"},
    {"type": "evaluate", "script": "document.title"},
]


def test_a_js_job_hands_the_browser_its_steps_device_and_cookies_in_the_requests_meta():
    order = asked(
        engine="js",
        wait_for={"selector": "#prices", "ms": None},
        actions=STEPS,
        device="mobile",
        headers={"X-Greeting": "hi"},
        cookies=[{"name": "a", "value": "1"}, {"name": "b", "value": "2", "path": "/x"}],
    )
    request = request_for(order, FeedSpider())
    meta = request.meta
    assert meta["scrapespy_wait_for"] == {"selector": "#prices"}
    assert meta["scrapespy_actions"] == [
        {"type": "click", "selector": "#more", "all": False},
        {"type": "click", "selector": ".tab", "all": True},
        {"type": "wait_for", "selector": "#list li"},
        {"type": "type", "selector": "#q", "text": "shoes"},
        {"type": "press", "key": "Enter"},
        {"type": "scroll", "direction": "down", "amount": 800},
        {"type": "scroll", "to": "bottom"},
        {"type": "wait", "ms": 300},
        {"type": "screenshot", "full_page": False},
        {"type": "evaluate", "script": "document.title"},
    ]
    assert meta["scrapespy_device"] == "mobile"
    assert meta["scrapespy_cookies"] == [
        {"name": "a", "value": "1"},
        {"name": "b", "value": "2", "path": "/x"},
    ]
    assert request.headers.get("X-Greeting") == b"hi"
    # the browser's mobile context has its own phone; the cookies go into its context, not a jar
    assert request.headers.get("User-Agent") is None and request.cookies == {}
    assert request_for(asked(engine="js", wait_for={"ms": 1500}), FeedSpider()).meta[
        "scrapespy_wait_for"
    ] == {"ms": 1500}


def test_a_plain_request_carries_nothing_more():
    for engine in ("static", "js"):
        request = request_for(asked(engine=engine), FeedSpider())
        assert not set(BROWSER_KEYS) & set(request.meta)
        assert request.cookies == {} and not request.headers


def test_a_static_job_sends_the_cookies_from_its_own_jar_and_a_phones_user_agent():
    order = asked(device="mobile", cookies=[{"name": "a", "value": "1", "domain": "example.com"}])
    request = request_for(order, FeedSpider())
    assert request.cookies == [{"name": "a", "value": "1", "domain": "example.com"}]
    assert request.meta["cookiejar"] == order.id
    assert request.headers.get("User-Agent") == MOBILE_USER_AGENT.encode()
    assert not set(BROWSER_KEYS) & set(request.meta)
    own = request_for(asked(device="mobile", headers={"user-agent": "Mine/1"}), FeedSpider())
    assert own.headers.getlist("User-Agent") == [b"Mine/1"]


OUTCOMES = [
    {"index": 0, "type": "click", "ok": True, "elapsed_ms": 12},
    {"index": 1, "type": "evaluate", "ok": True, "elapsed_ms": 3},
]


def test_the_steps_outcomes_the_browser_left_are_answered_on_a_success():
    order = asked(engine="js", actions=STEPS[:1] + STEPS[-1:], formats=["markdown"])
    request = request_for(order, FeedSpider())
    request.meta["scrapespy_action_outcomes"] = OUTCOMES
    request.meta["scrapespy_action_results"] = [{"index": 1, "type": "evaluate", "value": "t"}]
    response = HtmlResponse(order.url, body=PAGE, request=request)
    result = ResultPipeline().process_item(item_for_response(response)).result
    answer = orjson.loads(orjson.dumps(result))
    assert answer["success"] is True
    assert answer["actions"] == OUTCOMES
    assert answer["action_results"] == [{"index": 1, "type": "evaluate", "value": "t"}]
    assert list(answer)[-3:] == ["actions", "action_results", "markdown"]


def test_a_failed_step_is_answered_with_the_outcomes_so_far_and_its_error():
    order = asked(engine="js", actions=STEPS[:2])
    request = request_for(order, FeedSpider())
    failed = {"index": 1, "type": "click", "ok": False, "elapsed_ms": 5000, "error": "no match"}
    request.meta["scrapespy_action_outcomes"] = [OUTCOMES[0], failed]
    message = 'action 1 (click) failed: no element matches ".tab" within the timeout'
    failure = Failure(BrowserError(message))
    failure.request = request  # type: ignore[attr-defined]
    result = ResultPipeline().process_item(item_for_failure(failure)).result
    answer = orjson.loads(orjson.dumps(result))
    assert (answer["success"], answer["error"]) == (False, message)
    assert answer["actions"] == [OUTCOMES[0], failed] and answer["action_results"] == []
    # the browser reported nothing (it failed before the steps): empty lists, not absent
    nothing = request_for(order, FeedSpider())
    failure.request = nothing  # type: ignore[attr-defined]
    answer = orjson.loads(
        orjson.dumps(ResultPipeline().process_item(item_for_failure(failure)).result)
    )
    assert (answer["actions"], answer["action_results"]) == ([], [])
