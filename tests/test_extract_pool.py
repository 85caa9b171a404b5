"""The extraction workers (service.extraction.pool): real child processes on the test's reactor."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.defer import ensureDeferred
from twisted.internet.task import deferLater

from harness.pages import article
from service.extraction import compile_selectors, extract, split, worker
from service.extraction import pool as extract_pool
from service.extraction.bounds import AnswerBounds
from service.extraction.documents import PDF, convert
from service.extraction.failures import (
    PROCESSING_FAILED,
    PROCESSING_TIMED_OUT,
    DocumentFailed,
    ExtractionFailed,
    ExtractionTooLarge,
)
from service.extraction.outputs import OutputOptions
from service.extraction.pool import ExtractionPool
from tests.test_e2e_documents import CHROMIUM, PRINT

PAGE_URL = "http://example.com/news/article.html"
# Deep enough that lexbor takes a good while on it: the page a hostile target would serve.
HOSTILE = "<html><body>" + "<div>" * 60_000 + "x" + "</div>" * 60_000 + "</body></html>"
# Without the parse bounds, which would refuse HOSTILE at once: these tests need a slow page.
UNBOUNDED = AnswerBounds(max_depth=10**9, max_elements=10**9, max_seconds=600)


async def ready(pool: ExtractionPool) -> ExtractionPool:
    """``pool`` once each worker has said it is ready (the time of a page sent to a worker
    starts when it starts on it, not while it still imports)."""
    while not pool.workers or not all(worker.ready for worker in pool.workers):
        await deferLater(reactor, 0.05, lambda: None)
    return pool


@pytest.fixture
def pool():
    one = ExtractionPool(1, bounds=UNBOUNDED)
    one.start()
    pytest_twisted.blockon(ensureDeferred(ready(one)))
    yield one
    if not one.stopping:
        pytest_twisted.blockon(one.stop())


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
    monkeypatch.setattr(extract_pool, "PIPELINE_MAX_BYTES", 10**9)
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
    reply = worker.answer(b"not a request")
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
    waiting = broken.extract("<p>" + "x" * 70_000, PAGE_URL, None, 30)
    # no worker can take it: it fails, rather than wait for one
    with pytest.raises(ExtractionFailed, match=PROCESSING_FAILED):
        await waiting
    await deferLater(reactor, 2.5, lambda: None)
    await broken.stop()
    # the first start, then about one retry a second
    assert 2 <= len(spawned) <= 4


# Nested deep enough to take a worker a while (lexbor's parse of nesting is quadratic: a second
# or two alone, 25 s beside two CPU hogs at twice this depth), and too large to be sent to a
# worker behind another page (its text makes it so, at no cost to the parse).
SLOW = "<html><body>" + "<div>" * 15_000 + "x" * 200_000 + "</div>" * 15_000 + "</body></html>"


def finishing_order(pool: ExtractionPool, pages: list[tuple[str, str, int, bool]]) -> list:
    """Queues each (name, page, account, background) in order; the Deferreds, and the list
    of the names in the order their pages were answered."""
    order: list[str] = []
    waits = []
    for name, page, account, background in pages:
        # time enough on a busy machine: the order is what these tests are about
        d = pool.extract(page, PAGE_URL, None, 120, account=account, background=background)
        d.addBoth(lambda result, name=name: order.append(name) or result)
        waits.append(d)
    return [waits, order]


@pytest_twisted.ensureDeferred
async def test_an_account_with_many_slow_pages_does_not_hold_another_accounts_page(pool):
    waits, order = finishing_order(
        pool,
        [("a1", SLOW, 1, False), ("a2", SLOW, 1, False), ("a3", SLOW, 1, False)]
        + [("b", article(1), 2, False)],
    )
    for d in waits:
        await d
    # in one queue b came after every page of a; by turns it comes after the one being parsed
    assert order == ["a1", "b", "a2", "a3"]


@pytest_twisted.ensureDeferred
async def test_a_callers_page_goes_before_a_jobs_pages(pool):
    waits, order = finishing_order(
        pool,
        [("job1", SLOW, 1, True), ("job2", SLOW, 1, True), ("job3", SLOW, 3, True)]
        + [("scrape", article(2), 1, False)],
    )
    for d in waits:
        await d
    assert order[:2] == ["job1", "scrape"]
    assert sorted(order[2:]) == ["job2", "job3"]


@pytest_twisted.ensureDeferred
async def test_a_page_past_the_time_bound_is_too_large_and_its_worker_replaced():
    pool = ExtractionPool(1, bounds=AnswerBounds(max_depth=10**9, max_seconds=2.0))
    pool.start()
    try:
        first = worker_pid(pool)
        with pytest.raises(ExtractionTooLarge, match="SCRAPESPY_EXTRACT_MAX_SECONDS"):
            await pool.extract(HOSTILE, PAGE_URL, None, 60)
        # the replacement worker starts first: on a busy machine its imports alone take seconds
        assert (await pool.extract(article(1), PAGE_URL, None, 60))["title"]
        assert worker_pid(pool) != first
    finally:
        await pool.stop()


@pytest_twisted.ensureDeferred
async def test_a_page_nested_past_the_depth_bound_is_refused_before_it_is_parsed():
    pool = ExtractionPool(1)  # the default bounds
    pool.start()
    try:
        first = worker_pid(pool)
        with pytest.raises(ExtractionTooLarge, match="SCRAPESPY_EXTRACT_MAX_DEPTH"):
            await pool.extract(HOSTILE, PAGE_URL, None, 20)
        assert worker_pid(pool) == first  # refused, not killed after a long parse
        # an ordinary page with more tags than the depth bound is parsed as before
        page = "<html><body>" + article(40) * 6 + "<ul>" + "<li><b>item</b>" * 500 + "</ul>"
        assert page.count("<") > AnswerBounds().max_depth
        assert await pool.extract(page, PAGE_URL, None, 10) == extract(page, PAGE_URL)
    finally:
        await pool.stop()


@pytest_twisted.ensureDeferred
async def test_a_worker_cuts_long_fields_and_names_them():
    pool = ExtractionPool(1, bounds=AnswerBounds(field_chars=100, text_chars=1000))
    pool.start()
    try:
        page = (
            f"<html><head><title>{'t' * 5000}</title>"
            f'<meta name="description" content="{"d" * 500}"></head>'
            f"<body><h1>short</h1><p>{'w ' * 3000}</p></body></html>"
        )
        options = OutputOptions(frozenset({"markdown"}))
        fields = await pool.extract(page, PAGE_URL, None, 10, options)
        assert fields["title"] == "t" * 100
        assert fields["meta"]["description"] == "d" * 100
        assert fields["headings"] == {"h1": ["short"]}
        assert len(fields["text"]) == 1000 and len(fields["markdown"]) == 1000
        assert fields["truncated"] == ["title", "meta", "text", "markdown"]
        # an ordinary page is not touched, and says nothing of it
        plain = "<html><head><title>A title</title></head><body><p>Text.</p></body></html>"
        assert "truncated" not in await pool.extract(plain, PAGE_URL, None, 10)
    finally:
        await pool.stop()


@pytest_twisted.ensureDeferred
async def test_an_answer_past_its_bound_is_too_large():
    pool = ExtractionPool(1, bounds=AnswerBounds(answer_bytes=4096))
    pool.start()
    try:
        page = "<html><body>" + "<a href='/x'>link</a>" * 1000 + "</body></html>"
        with pytest.raises(ExtractionTooLarge, match="SCRAPESPY_MAX_ANSWER_BYTES"):
            await pool.extract(page, PAGE_URL, None, 10)
    finally:
        await pool.stop()


@pytest_twisted.ensureDeferred
async def test_an_account_with_long_pages_leaves_a_worker_to_the_others():
    two = ExtractionPool(2, bounds=UNBOUNDED)
    two.start()
    try:
        waits, order = finishing_order(
            two,
            [("a1", SLOW, 1, False), ("a2", SLOW, 1, False), ("a3", SLOW, 1, False)]
            + [("b", article(1), 2, False)],
        )
        for d in waits:
            await d
        # a held both workers, and b waited for one of them to finish a page
        assert order[0] == "b", order
    finally:
        await two.stop()


@pytest_twisted.ensureDeferred
async def test_a_lone_accounts_light_pages_use_every_worker():
    two = ExtractionPool(2, bounds=UNBOUNDED)
    two.start()
    try:
        await ready(two)
        waits = [two.extract(article(1), PAGE_URL, None, 30, account=1) for _ in range(4)]
        assert all(worker.tasks for worker in two.workers)
        for d in waits:
            assert (await d)["title"]
    finally:
        await two.stop()


@pytest.fixture(scope="module")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """An article printed by Chromium over several pages: paragraphs cross page breaks."""
    out = tmp_path_factory.mktemp("pdf")
    (out / "article.html").write_text(article(2) + article(3))
    subprocess.run([sys.executable, "-c", PRINT, str(out), CHROMIUM], check=True, timeout=120)
    return (out / "article.pdf").read_bytes()


async def started(size: int) -> ExtractionPool:
    pool = ExtractionPool(size, bounds=UNBOUNDED)
    pool.start()
    return await ready(pool)


@pytest_twisted.ensureDeferred
async def test_an_idle_pool_shares_a_pdf_between_workers_and_joins_it_as_one(long_pdf):
    markdown = OutputOptions(frozenset({"markdown"}))
    alone = convert(long_pdf, PDF, None, frozenset({"markdown"}), UNBOUNDED.document_pages)
    assert alone["document"]["pages"] >= 4
    pool = await started(3)
    try:
        d = pool.convert(long_pdf, PDF, PAGE_URL, None, 30, markdown, account=1)
        busy = [worker for worker in pool.workers if worker.tasks]
        # two of the three workers take a share; the account leaves the third to the others
        assert len(busy) == min(2, split.SHARES), busy
        assert await d == alone
    finally:
        await pool.stop()


@pytest_twisted.ensureDeferred
async def test_a_pdf_shared_between_workers_fails_as_the_whole_would(long_pdf):
    pool = await started(3)
    try:
        with pytest.raises(DocumentFailed) as refused:
            await pool.convert(b"%PDF-1.7\n" + b"garbage " * 100, PDF, PAGE_URL, None, 30)
        assert refused.value.code == "document_unreadable"
        # past the document's page bound: too_large, as one worker says it
        few = ExtractionPool(3, bounds=AnswerBounds(document_pages=2, max_seconds=600))
        few.start()
        try:
            with pytest.raises(ExtractionTooLarge, match="over the limit of 2"):
                await few.convert(long_pdf, PDF, PAGE_URL, None, 30)
        finally:
            await few.stop()
    finally:
        await pool.stop()
