"""End to end: the local PostgreSQL server stopped and started again under a running batch.

A failover or a minor upgrade takes the database away for a few seconds. The job queue's
worker must come back by itself: the batch that was running finishes, a batch submitted after
the restart runs too, each page is billed once, and meanwhile ``/healthz`` says the job queue is
down (503) and ``POST /scrape`` answers 503 rather than a traceback.

Run only with ``SCRAPESPY_TEST_DB=postgresql``, as root on the server's host (CI): it runs
``pg_ctlcluster``, and the server is started again whatever happens to the test.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own
from tests.test_e2e_batch import add_pages, batch, billed_scrapes, job, start, wait_finished

pytestmark = pytest.mark.postgres

COST = 1  # a static scrape without a proxy (the default price list)
SLOW = 0.4  # seconds each page of the batches takes to answer
PG_CTL_TIMEOUT = 60  # seconds for pg_ctlcluster to stop or start the server


def pg_ctl(action: str) -> None:
    """``pg_ctlcluster`` on the local cluster (the only one: CI's and the dev machine's)."""
    (version,) = os.listdir("/etc/postgresql")
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action],
        check=True,
        capture_output=True,
        timeout=PG_CTL_TIMEOUT,
    )


@contextmanager
def database_stopped() -> Iterator[None]:
    """The server stopped for the block, and started again even when the block fails."""
    pg_ctl("stop")
    try:
        yield
    finally:
        pg_ctl("start")


def until(check: Callable[[], Reply], wanted: Callable[[Reply], bool], timeout: float) -> Reply:
    deadline = time.monotonic() + timeout
    while True:
        reply = check()
        if wanted(reply):
            return reply
        assert time.monotonic() < deadline, (reply.status, reply.body)
        time.sleep(0.2)


def logged(service: ServiceProcess, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in service.log_text():
        assert time.monotonic() < deadline, f"not logged: {text}"
        time.sleep(0.2)


@pytest.fixture
def own_database(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path)


def test_jobs_survive_a_postgresql_restart_and_bill_each_page_once(
    own_database: tuple[str, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    database_url, accounts = own_database
    account_id, key = accounts.create(credits=1000)
    running = add_pages(site, "/pg-restart/running", 24, delay=SLOW)
    later = add_pages(site, "/pg-restart/later", 12, delay=SLOW)
    service = start(database_url, tmp_path / "service")

    def healthz() -> Reply:
        return call("GET", service.url("/healthz"), timeout=10)

    try:
        first = batch(service, key, {"urls": running})
        assert first.status == 202, first.body
        first_id = first.json["id"]
        until(lambda: job(service, key, first_id), lambda r: r.json["counts"]["done"] >= 4, 30)

        with database_stopped():
            # held down until the worker has seen it go: a restart of a second or two may
            # fall between two of its queries
            logged(service, "the job queue's worker stopped", timeout=60)
            down = healthz()
            assert down.status == 503, down.body
            assert "job queue" in down.json["error"]
            scrape = service.scrape(key, {"url": site.url("/article")}, timeout=30)
            assert scrape.status == 503, scrape.body
            assert "unavailable" in scrape.json["error"]
            assert b"Traceback" not in scrape.body

        second = until(
            lambda: batch(service, key, {"urls": later}), lambda r: r.status != 503, timeout=30
        )
        assert second.status == 202, second.body
        # the worker is back once /healthz says so; it did not come back before the fix
        until(healthz, lambda r: r.status == 200, timeout=60)
        assert healthz().json == {"status": "ok"}
        found = [
            wait_finished(service, key, made.json["id"], timeout=90) for made in (first, second)
        ]
        again = service.scrape(key, {"url": site.url("/article")})
        assert again.status == 200 and again.json["success"] is True
        log = service.log_text()
    finally:
        service.stop()

    for done, pages in zip(found, (running, later), strict=True):
        assert done["status"] == "completed"
        assert done["counts"]["done"] == len(pages)
        assert done["credits_charged"] == len(pages) * COST
    billed = len(running) + len(later) + 1  # the pages, and the scrape after the restart
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert summary["balance"] == 1000 - billed * COST
    assert accounts.entries_sum(account_id) == summary["balance"]
    assert billed_scrapes(accounts, account_id) == (billed, billed * COST)
    assert "the job queue's worker is back" in log
