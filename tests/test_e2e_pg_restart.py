"""End to end: a PostgreSQL server stopped and started again under running batches.

A failover or a minor upgrade takes the database away for a few seconds. The job queue's
worker must come back by itself: the batch that was running finishes, a batch submitted after
the restart runs too, each page is billed once, and meanwhile ``/healthz`` says the job queue is
down (503) and ``POST /scrape`` answers 503 rather than a traceback. A restart while pages are
being scraped (their claims and holds made before it, their results stored after it) loses no
page either: a page whose task failed on the database runs again once it answers. A monitor's
run that came due while the database was down is made once when it is back.

Run only with ``SCRAPESPY_TEST_DB=postgresql`` (CI): each test starts a PostgreSQL server of
its own (harness.pg_cluster), never the machine's, which other test runs share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.monitor_clock import START, Clock
from harness.pg_cluster import Cluster
from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from tests import test_e2e_monitors as monitors
from tests.test_e2e_batch import (
    JOBS_ENV,
    add_pages,
    batch,
    billed_scrapes,
    job,
    start,
    wait_finished,
)

pytestmark = [pytest.mark.postgres, pytest.mark.long(minutes=2)]

COST = 1  # a static scrape without a proxy (the default price list)
SLOW = 0.4  # seconds each page of the batches takes to answer
OUTAGE = 1.0  # seconds the server is away in the mid-scrape test
GATE_TIMEOUT = 120  # seconds the mid-scrape test's pages wait for its restart, at most


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
def own_server() -> Iterator[tuple[Cluster, Accounts]]:
    """A PostgreSQL server of the test's own, and the accounts of its database."""
    cluster = Cluster().start()
    try:
        accounts = Accounts(cluster.url)
        yield cluster, accounts
        accounts.close()
    finally:
        cluster.remove()


def test_jobs_survive_a_postgresql_restart_and_bill_each_page_once(
    own_server: tuple[Cluster, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    cluster, accounts = own_server
    account_id, key = accounts.create(credits=1000)
    running = add_pages(site, "/pg-restart/running", 24, delay=SLOW)
    later = add_pages(site, "/pg-restart/later", 12, delay=SLOW)
    service = start(cluster.url, tmp_path / "service")

    def healthz() -> Reply:
        return call("GET", service.url("/healthz"), timeout=10)

    try:
        first = batch(service, key, {"urls": running})
        assert first.status == 202, first.body
        first_id = first.json["id"]
        until(lambda: job(service, key, first_id), lambda r: r.json["counts"]["done"] >= 4, 30)

        cluster.stop()
        try:
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
        finally:
            cluster.start()

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


class Serving:
    """Pages held at the site until :attr:`gate` opens (then each answers after ``delay``),
    and those being served at this moment (the scrapes in flight)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: set[str] = set()
        self.gate = threading.Event()

    def add_pages(self, site: TargetSite, prefix: str, count: int, delay: float) -> list[str]:
        urls = []
        for n in range(count):
            path = f"{prefix}/{n}"
            body = f"<html><head><title>Page {n}</title></head><body><p>{n}</p></body></html>"

            def route(_h: Any, path: str = path, body: bytes = body.encode()) -> Any:
                with self.lock:
                    self.now.add(path)
                try:
                    self.gate.wait(GATE_TIMEOUT)
                    time.sleep(delay)
                finally:
                    with self.lock:
                        self.now.discard(path)
                return 200, {"Content-Type": "text/html; charset=utf-8"}, body

            site.routes[path] = route
            urls.append(site.url(path))
        return urls

    def serving(self) -> int:
        with self.lock:
            return len(self.now)


def test_a_restart_while_pages_are_scraped_loses_none_and_bills_each_once(
    own_server: tuple[Cluster, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    """The server stopped while pages are mid-scrape (claimed and held before it), and started
    again a moment later: the pages in flight end while it is away, their results cannot be
    stored, and their tasks fail. Before the fix procrastinate's worker could not record those
    tasks' ends (a connection the server had closed) and left them ``doing`` under itself, a
    live worker, which no recovery takes: the batch stayed ``running`` with pages never done,
    or the log said ``Task exception was never retrieved`` (issue 43)."""
    cluster, accounts = own_server
    account_id, key = accounts.create(credits=1000)
    serving = Serving()
    # one page a task (service.jobs.queue.pages_per_task), its worker's slots all taken
    running = serving.add_pages(site, "/pg-mid-scrape/running", 15, delay=0.5)
    later = add_pages(site, "/pg-mid-scrape/later", 12)
    service = start(cluster.url, tmp_path / "service")
    try:
        first = batch(service, key, {"urls": running})
        assert first.status == 202, first.body
        # as many pages in flight as the instance scrapes at once, held at the site
        deadline = time.monotonic() + 60
        while serving.serving() < int(JOBS_ENV["SCRAPESPY_JOB_PAGES_IN_FLIGHT"]):
            assert time.monotonic() < deadline, "the batch's pages are not being scraped"
            time.sleep(0.05)
        cluster.stop()  # as in a failover: the pages in flight end while the server is away
        serving.gate.set()
        time.sleep(OUTAGE)
        cluster.start()
        time.sleep(2)
        second = until(
            lambda: batch(service, key, {"urls": later}), lambda r: r.status != 503, timeout=30
        )
        assert second.status == 202, second.body
        found = [
            wait_finished(service, key, made.json["id"], timeout=180) for made in (first, second)
        ]
        log = service.log_text()
    finally:
        serving.gate.set()
        service.stop()

    for done, pages in zip(found, (running, later), strict=True):
        assert done["status"] == "completed", done
        assert done["counts"]["done"] == len(pages)
        assert done["credits_charged"] == len(pages) * COST
    billed = len(running) + len(later)
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert summary["balance"] == 1000 - billed * COST
    assert accounts.entries_sum(account_id) == summary["balance"]
    assert billed_scrapes(accounts, account_id) == (billed, billed * COST)
    assert "Task exception was never retrieved" not in log


def test_a_monitor_s_run_due_while_postgresql_is_down_is_made_once_after(
    own_server: tuple[Cluster, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    """A run comes due while the database is away: the ticks that cannot reach it make nothing;
    the first that can makes the run, once, and the one after it keeps to the schedule."""
    cluster, accounts = own_server
    account_id, key = accounts.create(credits=10)
    page = monitors.Changing(site, "/monitored-pg-restart")
    clock = Clock(tmp_path / "now")
    service = monitors.start(cluster.url, tmp_path / "service", clock)
    try:
        made = monitors.create(service, key, {"url": page.url, "schedule": 300}).json
        monitors.finished_checks(service, key, made["id"], 1)
        cluster.stop()
        try:
            logged(service, "the job queue's worker stopped", timeout=60)
            clock.advance(300)  # due while the database is down
            logged(service, "could not run the due monitors", timeout=60)
        finally:
            cluster.start()
        monitors.finished_checks(service, key, made["id"], 2, timeout=120)
        clock.advance(300)
        found = monitors.finished_checks(service, key, made["id"], 3, timeout=120)
        monitors.settle_ticks()
        assert len(monitors.checks(service, key, made["id"])) == 3 and page.fetches == 3
        assert [check["status"] for check in found] == ["completed"] * 3
        assert [check["scheduled_for"] for check in found] == [
            monitors.at(START + 300 * n) for n in range(3)
        ]
    finally:
        service.stop()
    assert monitors.charged(accounts, account_id) == (3, 3)
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (7, 0)
