"""The extraction workers (service.extraction.pool): real child processes on the test's reactor."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.task import deferLater

from harness.pages import article
from service.extraction import compile_selectors, extract
from service.extraction import pool as extract_pool
from service.extraction.outputs import OutputOptions
from service.extraction.pool import (
    PROCESSING_FAILED,
    PROCESSING_TIMED_OUT,
    ExtractionFailed,
    ExtractionPool,
)

PAGE_URL = "http://example.com/news/article.html"
# Deep enough that lexbor takes a good while on it: the page a hostile target would serve.
HOSTILE = "<html><body>" + "<div>" * 60_000 + "x" + "</div>" * 60_000 + "</body></html>"


@pytest.fixture
def pool():
    started = ExtractionPool(1)
    started.start()
    yield started
    if not started.stopping:
        pytest_twisted.blockon(started.stop())


def worker_pid(pool: ExtractionPool) -> int:
    return int(pool.workers[0].protocol.transport.pid)


@pytest_twisted.ensureDeferred
async def test_a_worker_gives_what_extract_gives_here(pool):
    page = article(3)
    selectors = compile_selectors({"heads": "h2::text", "srcs": "img ::attr(src)", "p": "p"})
    fields = await pool.extract(page, PAGE_URL, selectors, 10)
    assert fields == extract(page, PAGE_URL, selectors)
    assert len(fields["links"]) > 100 and fields["extracted"]["heads"]


@pytest_twisted.ensureDeferred
async def test_a_small_page_is_parsed_here_when_no_other_scrape_is_in_flight():
    idle = ExtractionPool(1, alone=lambda: True)  # never started: no worker could answer
    page = article(4)
    d = idle.extract(page, PAGE_URL, None, 10)
    assert d.called, "a worker was asked"
    assert await d == extract(page, PAGE_URL)
    assert not idle.queue
    markdown = idle.extract(page, PAGE_URL, None, 10, OutputOptions(frozenset({"markdown"})))
    assert markdown.called and (await markdown)["markdown"]


@pytest_twisted.ensureDeferred
async def test_pages_go_to_the_workers_under_concurrency_and_when_they_are_large():
    others_in_flight = ExtractionPool(1, alone=lambda: False)
    alone = ExtractionPool(1, alone=lambda: True)
    many_tags = "<html><body>" + "<p>x</p>" * 1500 + "</body></html>"  # 3,000 tags, 12 KB
    waiting = [
        others_in_flight.extract(article(4), PAGE_URL, None, 10),
        # the main content of a small page of nested elements can take 100 ms: never here
        alone.extract(article(4), PAGE_URL, None, 10, OutputOptions(only_main_content=True)),
        alone.extract(many_tags, PAGE_URL, None, 10),
        alone.extract("<p>" + "x" * 70_000, PAGE_URL, None, 10),
    ]
    assert not any(d.called for d in waiting)
    assert len(others_in_flight.queue) == 1 and len(alone.queue) == 3
    for stopped in (others_in_flight, alone):
        await stopped.stop()
    for d in waiting:
        with pytest.raises(ExtractionFailed):
            await d


@pytest_twisted.ensureDeferred
async def test_pages_queue_when_the_worker_is_busy_and_all_are_answered(pool):
    pages = [article(i) for i in range(12)]
    results = [await d for d in [pool.extract(p, PAGE_URL, None, 10) for p in pages]]
    assert [r["title"] for r in results] == [extract(p, PAGE_URL)["title"] for p in pages]


@pytest_twisted.ensureDeferred
async def test_a_page_that_overruns_fails_and_the_worker_is_replaced(pool, monkeypatch):
    monkeypatch.setattr(extract_pool, "MIN_SECONDS", 0.05)
    first = worker_pid(pool)
    hostile = pool.extract(HOSTILE, PAGE_URL, None, 0.05)
    # sent to the same worker behind it: its time starts when the worker starts on it
    behind = pool.extract(article(5), PAGE_URL, None, 10)
    assert len(pool.workers[0].tasks) == 2
    with pytest.raises(ExtractionFailed, match=PROCESSING_TIMED_OUT):
        await hostile
    assert (await behind)["title"] == extract(article(5), PAGE_URL)["title"]
    monkeypatch.setattr(extract_pool, "MIN_SECONDS", 5.0)
    fields = await pool.extract(article(1), PAGE_URL, None, 10)
    assert fields["title"]
    assert worker_pid(pool) != first


@pytest_twisted.ensureDeferred
async def test_a_worker_that_dies_fails_its_page_and_is_replaced(pool):
    first = worker_pid(pool)
    pending = pool.extract(HOSTILE, PAGE_URL, None, 30)
    behind = pool.extract(article(6), PAGE_URL, None, 30)
    await deferLater(reactor, 0.2, lambda: None)
    os.kill(first, signal.SIGKILL)
    with pytest.raises(ExtractionFailed, match=PROCESSING_FAILED):
        await pending
    # the page it had not started goes to its replacement
    assert (await behind)["title"] == extract(article(6), PAGE_URL)["title"]
    fields = await pool.extract(article(2), PAGE_URL, None, 10)
    assert fields["title"]
    assert worker_pid(pool) != first


@pytest_twisted.ensureDeferred
async def test_stop_lets_the_workers_exit(pool):
    pid = worker_pid(pool)
    await pool.stop()
    assert pool.workers == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_worker_reports_a_bad_request_instead_of_dying():
    reply = extract_pool.answer(b"not a request")
    assert reply[4:] == b'{"error":"ValueError"}'


@pytest_twisted.ensureDeferred
async def test_a_worker_that_cannot_start_is_retried_once_a_second_not_in_a_loop():
    broken = ExtractionPool(1, command=[sys.executable, "-c", "raise SystemExit(3)"])
    spawned = []
    real_spawn = broken._spawn

    def counting_spawn() -> None:
        spawned.append(1)
        real_spawn()

    broken._spawn = counting_spawn  # type: ignore[method-assign]
    broken.start()
    await deferLater(reactor, 2.5, lambda: None)
    await broken.stop()
    # the first start, then about one retry a second
    assert 2 <= len(spawned) <= 4
