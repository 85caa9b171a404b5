"""End to end: what the Python client retries, and what it never does, against the real service.

429 and 503 are retried after their Retry-After: the service's own rate limit and capacity bound
(a service of one scrape at a time, one a second per key), and a real HTTP front on 127.0.0.1
(tests.front) that answers one of them itself; past ``max_retries`` the typed error is raised. A
402 is raised at once, with nothing charged. A job submission whose answer was lost is retried
with the same Idempotency-Key, and the service made one job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from scrapespy import InsufficientCredits, RateLimited

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.front import Fault, Front, front_fixture  # noqa: F401  (a fixture)
from tests.test_client import GRANT, client_of
from tests.test_e2e_batch import add_pages


def test_a_402_is_raised_at_once_and_never_retried(
    front: Front, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=0)
    with client_of(front, key) as client, pytest.raises(InsufficientCredits) as raised:
        client.scrape(site.url("/article"))
    assert raised.value.status_code == 402
    assert raised.value.error_code == "insufficient_credits"
    assert raised.value.message.startswith("insufficient credits: this request costs 1 credits")
    assert len(front.requests("POST", "/scrape")) == 1
    assert accounts.entries_sum(account_id) == 0


def test_a_503_is_retried_after_its_retry_after(
    front: Front, accounts: Accounts, site: TargetSite
) -> None:
    unavailable = {"error": "the service is at capacity, retry later"}
    headers = {"Retry-After": "1", "X-Error-Code": "unavailable"}
    front.fail_next(Fault("answer", 503, headers, unavailable))
    with client_of(front, accounts.create(credits=GRANT)[1]) as client:
        result = client.scrape(site.url("/article"))
    assert result.ok and result.credits_charged == 1
    first, second = front.requests("POST", "/scrape")
    assert (first.status, second.status) == (503, 200)
    assert second.at - first.at >= 1.0


def test_retries_end_with_the_typed_error(
    front: Front, accounts: Accounts, site: TargetSite
) -> None:
    limited = {"error": "rate limit exceeded for this API key, retry later (in 1 s)"}
    headers = {"Retry-After": "1", "X-Error-Code": "rate_limited"}
    front.fail_next(*[Fault("answer", 429, headers, limited)] * 2)
    with client_of(front, accounts.create(credits=GRANT)[1], max_retries=1) as client:
        with pytest.raises(RateLimited) as raised:
            client.scrape(site.url("/article"))
    assert raised.value.retry_after == 1.0 and raised.value.error_code == "rate_limited"
    assert [seen.status for seen in front.requests("POST", "/scrape")] == [429, 429]


@pytest.fixture(scope="module")
def narrow(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A service of one scrape at a time, and one scrape a second per key."""
    env = {
        "SCRAPESPY_RATE_LIMIT_PER_SECOND": "1",
        "SCRAPESPY_RATE_LIMIT_BURST": "1",
        "SCRAPESPY_MAX_CONCURRENT_SCRAPES": "1",
    }
    proc = ServiceProcess(database_url, tmp_path_factory.mktemp("narrow"), env=env).start()
    yield proc
    proc.stop()


def test_the_services_429_is_retried_after_its_retry_after(
    narrow: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    ahead = Front(narrow.base)
    try:
        with client_of(ahead, accounts.create(credits=GRANT)[1]) as client:
            first = client.scrape(site.url("/article?rate=1"))
            second = client.scrape(site.url("/article?rate=2"))
        assert first.ok and second.ok
        seen = ahead.requests("POST", "/scrape")
        assert [s.status for s in seen] == [200, 429, 200]
        assert seen[1].answer_headers is not None
        asked = int(seen[1].answer_headers["Retry-After"])
        assert seen[2].at - seen[1].at >= asked
    finally:
        ahead.stop()


def test_the_services_503_at_capacity_is_retried(
    narrow: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    released = threading.Event()

    def slow(_h: Any) -> tuple[int, dict[str, str], bytes]:
        # held until the other caller has been turned away at least once (not for a fixed
        # 1.5 s, which a busy machine could spend before the other call even arrived)
        released.wait(60)
        return 200, {"Content-Type": "text/html"}, b"<html><title>slow</title></html>"

    def release_once_refused() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(s.status == 503 for s in ahead.requests("POST", "/scrape")):
                break
            time.sleep(0.02)
        released.set()

    site.routes["/client-slow"] = slow
    ahead = Front(narrow.base)
    other_key = accounts.create(credits=GRANT)[1]
    try:
        with client_of(narrow, accounts.create(credits=GRANT)[1]) as busy:
            occupier = threading.Thread(target=busy.scrape, args=(site.url("/client-slow"),))
            occupier.start()
            deadline = time.monotonic() + 60
            while site.count("/client-slow") == 0 and time.monotonic() < deadline:
                time.sleep(0.02)  # the one scrape's place is taken
            releaser = threading.Thread(target=release_once_refused)
            releaser.start()
            with client_of(ahead, other_key) as client:
                result = client.scrape(site.url("/article?capacity=1"))
            releaser.join()
            occupier.join()
        assert result.ok
        seen = ahead.requests("POST", "/scrape")
        assert seen[0].status == 503 and seen[0].answer_headers is not None
        assert seen[0].answer_headers["Retry-After"] == "1"
        assert seen[1].at - seen[0].at >= 1.0
        assert seen[-1].status == 200
    finally:
        released.set()
        ahead.stop()


def test_a_job_submission_is_retried_with_one_idempotency_key_and_made_once(
    front: Front, accounts: Accounts, site: TargetSite
) -> None:
    urls = add_pages(site, "/client-idem", 2)
    unavailable = {"error": "the database is unavailable, retry later"}
    front.fail_next(
        Fault("answer", 503, {"X-Error-Code": "unavailable"}, unavailable), Fault("cut_after")
    )
    with client_of(front, accounts.create(credits=GRANT)[1]) as client:
        job = client.batch(urls)
        sent = front.requests("POST", "/batch")
        assert len(sent) == 3
        assert {s.headers["idempotency-key"] for s in sent} == {job.idempotency_key}
        assert sent[1].status is None  # the service made the job; the answer was lost
        assert sent[2].answer_headers is not None
        assert sent[2].answer_headers.get("Idempotent-Replayed") == "true"
        assert [item.id for item in client.jobs().items] == [job.id]
        final = job.wait(poll_interval=0.2, timeout=60)
        assert final.counts is not None and final.counts.done == 2
        mine = client.batch(urls, idempotency_key="client-test-key")
        assert mine.idempotency_key == "client-test-key"
        assert front.requests("POST", "/batch")[-1].headers["idempotency-key"] == "client-test-key"
