"""End to end: ``AsyncScrapespy``, the client's asyncio twin, against the real service.

Each test runs its coroutine on an event loop of its own in a thread of its own (the suite's
main thread belongs to the Twisted reactor's asyncio loop): a scrape to markdown, a batch
waited for with a progress callback and its results walked, a 402 raised at once, a 429
retried after its Retry-After, and a broken job submission retried with one Idempotency-Key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from scrapespy import AsyncJobRef, AsyncScrapespy, InsufficientCredits, JobStatus

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.front import Fault, Front, front_fixture  # noqa: F401  (a fixture)
from tests.test_e2e_batch import add_pages

GRANT = 1000
T = TypeVar("T")


def run(coroutine: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await coroutine()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result(timeout=120)


def test_scrape_answers_markdown(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    key = accounts.create(credits=GRANT)[1]

    async def scenario() -> None:
        async with AsyncScrapespy(api_key=key, base_url=service.base) as client:
            results = await asyncio.gather(
                client.scrape(site.url("/article?async=1"), formats=["markdown"]),
                client.scrape(site.url("/status/404")),
            )
            article, missing = results
            assert article.ok and article.markdown is not None
            assert article.markdown.startswith("# Main heading")
            assert article.credits_charged == 1
            assert missing.error_code == "http_error" and not missing.ok
            assert (await client.account()).balance == GRANT - 1

    run(scenario)


def test_batch_wait_and_results(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    key = accounts.create(credits=GRANT)[1]
    urls = add_pages(site, "/client-async-batch", 4, delay=0.2)
    seen: list[JobStatus] = []

    async def scenario() -> None:
        async with AsyncScrapespy(api_key=key, base_url=service.base) as client:
            job = await client.batch(urls, formats=["markdown"])
            assert isinstance(job, AsyncJobRef) and job.idempotency_key
            final = await job.wait(poll_interval=0.1, timeout=60, progress=seen.append)
            assert final.status == "completed" and final.counts is not None
            assert final.counts.done == 4 and final.credits_charged == 4
            walked = [r async for r in client.job_results(job.id, limit=3)]
            assert [r.url for r in walked] == urls
            assert all(r.markdown for r in walked)
            assert [item.id for item in (await client.jobs()).items] == [job.id]
            assert (await client.usage(limit=2)).next_cursor is not None
            # four charges of 1 (pages settling at the same moment may be listed in either
            # order: an entry's time is its settlement's, taken before the account's lock)
            charges = [e for e in (await client.ledger()).items if e.kind == "scrape"]
            assert sorted(e.balance_after for e in charges) == [
                GRANT - 4,
                GRANT - 3,
                GRANT - 2,
                GRANT - 1,
            ]
            assert (await client.account()).balance == GRANT - 4

    run(scenario)
    assert seen and seen[-1].status == "completed"


def test_errors_and_retries(front: Front, accounts: Accounts, site: TargetSite) -> None:
    _, broke = accounts.create(credits=0)
    _, key = accounts.create(credits=GRANT)
    urls = add_pages(site, "/client-async-idem", 2)
    limited = {"error": "rate limit exceeded for this API key, retry later (in 1 s)"}

    async def scenario() -> None:
        async with AsyncScrapespy(api_key=broke, base_url=front.base) as client:
            with pytest.raises(InsufficientCredits) as raised:
                await client.scrape(site.url("/article"))
            assert raised.value.error_code == "insufficient_credits"
        assert len(front.requests("POST", "/scrape")) == 1
        front.fail_next(
            Fault("answer", 429, {"Retry-After": "1", "X-Error-Code": "rate_limited"}, limited),
            Fault("cut_after"),
        )
        async with AsyncScrapespy(api_key=key, base_url=front.base) as client:
            job = await client.batch(urls)
            sent = front.requests("POST", "/batch")
            assert [s.status for s in sent] == [429, None, 202]
            assert sent[1].at - sent[0].at >= 1.0
            assert {s.headers["idempotency-key"] for s in sent} == {job.idempotency_key}
            assert [item.id for item in (await client.jobs()).items] == [job.id]
            assert (await job.cancel()).id == job.id

    run(scenario)
