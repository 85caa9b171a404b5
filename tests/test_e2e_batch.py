"""End to end: ``POST /batch`` and ``/jobs`` on the real service, scraping the local site.

Each result is what ``POST /scrape`` answers for its URL, the ledger is exact (what the job
charged is the sum of its successful pages' prices, and the balance moved by that much), a
failing URL is a failed page and unbilled, a cancel stops the job and leaves no hold, a job that
runs out of credits stops at a balance of zero, an account never sees another's job, an
``Idempotency-Key`` replays the first answer, and a ``kill -9`` mid-job loses no page and bills
none twice (on PostgreSQL with two instances sharing the job's pages).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.billing import keys
from service.db.tables import job_pages, jobs, usage
from tests.conftest import BACKEND, a_database_of_its_own

pytestmark = pytest.mark.long(minutes=1)

COST = 1  # a static scrape without a proxy (the default price list)
FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")
SLOW = 0.4  # seconds each /jobs-slow/ page takes to answer

JOBS_ENV = {
    "SCRAPESPY_JOB_PAGES_IN_FLIGHT": "4",
    "SCRAPESPY_MAX_JOBS_PER_ACCOUNT": "2",
    "SCRAPESPY_JOB_STALLED_SECONDS": "4",
}


class InFlight:
    """How many of a set of pages the site was serving at once, at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *_: Any) -> None:
        with self.lock:
            self.now -= 1


def add_pages(
    site: TargetSite,
    prefix: str,
    count: int,
    delay: float = 0.0,
    in_flight: InFlight | None = None,
    gate: threading.Event | None = None,
) -> list[str]:
    """``count`` pages of their own under ``prefix``, each taking ``delay`` seconds (or, with
    ``gate``, answering once it is set, a minute at most)."""
    urls = []
    served = in_flight or InFlight()
    for n in range(count):
        path = f"{prefix}/{n}"
        body = (
            f"<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1>"
            f'<p>Text of page {n}.</p><a href="/article">next</a></body></html>'
        ).encode()

        def route(_h: Any, body: bytes = body) -> tuple[int, dict[str, str], bytes]:
            with served:
                if gate is not None:
                    gate.wait(60)
                time.sleep(delay)
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body

        site.routes[path] = route
        urls.append(site.url(path))
    return urls


def start(database_url: str, workdir: Path, **env: str) -> ServiceProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    return ServiceProcess(database_url, workdir, env={**JOBS_ENV, **env}).start()


@pytest.fixture(scope="module")
def jobs_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("jobs-db"))


@pytest.fixture(scope="module")
def accounts(jobs_db: tuple[str, Accounts]) -> Accounts:
    return jobs_db[1]


@pytest.fixture
def own_database(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path)


@pytest.fixture(scope="module")
def jobs_service(
    jobs_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(jobs_db[0], tmp_path_factory.mktemp("jobs"))
    yield proc
    proc.stop()


def batch(service: ServiceProcess, key: str, body: Any, **headers: str) -> Reply:
    return call("POST", service.url("/batch"), body, key=key, headers=headers)


def job(service: ServiceProcess, key: str, job_id: str, query: str = "") -> Reply:
    return call("GET", service.url(f"/jobs/{job_id}{query}"), key=key)


def wait_finished(
    service: ServiceProcess, key: str, job_id: str, timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        reply = job(service, key, job_id)
        assert reply.status == 200, reply.body
        found: dict[str, Any] = reply.json
        if found["status"] in FINISHED and found["counts"]["pending"] == 0:
            return found
        summary = {name: found[name] for name in ("status", "counts", "credits_charged")}
        assert time.monotonic() < deadline, f"the job did not finish: {summary}"
        time.sleep(0.2)


def all_results(service: ServiceProcess, key: str, job_id: str) -> list[dict[str, Any]]:
    """Every result, following next_cursor, two at a time (so that the walk is tested)."""
    results: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = job(service, key, job_id, query).json
        results += page["results"]
        cursor = page["next_cursor"]
        if cursor is None:
            return results


def without_timing(result: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in result.items() if name not in ("elapsed_ms", "timings")}


def test_batch_results_are_single_scrapes_and_the_ledger_is_exact(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/jobs-exact", 20)
    failing = site.url("/status/404")
    reply = batch(jobs_service, key, {"urls": [*urls, failing], "formats": ["markdown"]})
    assert reply.status == 202, reply.body
    assert set(reply.json) == {"id", "status_url"}
    assert reply.json["status_url"].endswith(f"/jobs/{reply.json['id']}")
    found = wait_finished(jobs_service, key, reply.json["id"])
    assert found["status"] == "completed"
    assert found["counts"] == {"done": 20, "failed": 1, "blocked": 0, "pending": 0, "skipped": 0}
    assert found["credits_charged"] == 20 * COST

    results = all_results(jobs_service, key, reply.json["id"])
    assert [r["index"] for r in results] == list(range(21))
    assert [r["url"] for r in results] == [*urls, failing]
    for entry in results[:20]:
        assert (entry["status"], entry["credits"]) == ("done", COST)
        single = jobs_service.scrape(key, {"url": entry["url"], "formats": ["markdown"]}).json
        assert list(entry["result"]) == list(single)  # the same fields, in the same order
        assert without_timing(entry["result"]) == without_timing(single)
    failed = results[20]
    assert (failed["status"], failed["credits"]) == ("failed", 0)
    assert failed["result"]["success"] is False and failed["result"]["status_code"] == 404

    # the batch charged 20, the 20 single scrapes 20 more; nothing is held; entries sum up
    summary = accounts.summary(account_id)
    assert summary["balance"] == 100 - 40 * COST
    assert summary["held"] == 0
    assert accounts.entries_sum(account_id) == summary["balance"]
    listed = call("GET", jobs_service.url("/jobs"), key=key).json
    assert [item["id"] for item in listed["items"]] == [reply.json["id"]]


def test_a_bad_url_is_a_400_naming_its_index_and_nothing_is_stored(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    reply = batch(jobs_service, key, {"urls": [site.url("/article"), "ftp://example.com/x"]})
    assert reply.status == 400
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert "'urls[1]'" in reply.json["error"]
    bad_option = batch(jobs_service, key, {"urls": [site.url("/article")], "engine": "warp"})
    assert bad_option.status == 400 and "'engine'" in bad_option.json["error"]
    assert batch(jobs_service, key, {"urls": []}).status == 400
    too_many = batch(jobs_service, key, {"urls": [site.url("/article")] * 1001})
    assert too_many.status == 400 and "'urls'" in too_many.json["error"]
    listed = call("GET", jobs_service.url("/jobs"), key=key).json
    assert listed == {"items": [], "next_cursor": None}


def test_another_accounts_job_is_a_404(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, owner = accounts.create(credits=10)
    _, other = accounts.create(credits=10)
    reply = batch(jobs_service, owner, {"urls": [site.url("/article")]})
    job_id = reply.json["id"]
    for method in ("GET", "DELETE"):
        seen = call(method, jobs_service.url(f"/jobs/{job_id}"), key=other)
        assert seen.status == 404 and seen.headers["X-Error-Code"] == "not_found"
    assert call("GET", jobs_service.url("/jobs"), key=other).json["items"] == []
    assert call("GET", jobs_service.url(f"/jobs/{job_id}")).status == 401
    assert wait_finished(jobs_service, owner, job_id)["status"] == "completed"


def test_cancel_stops_the_job_and_releases_every_hold(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    in_flight = InFlight()
    urls = add_pages(site, "/jobs-cancel", 40, delay=SLOW, in_flight=in_flight)
    job_id = batch(jobs_service, key, {"urls": urls}).json["id"]
    deadline = time.monotonic() + 30
    while job(jobs_service, key, job_id).json["counts"]["done"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    cancelled = call("DELETE", jobs_service.url(f"/jobs/{job_id}"), key=key)
    assert cancelled.status == 200 and cancelled.json["status"] == "cancelled"
    found = wait_finished(jobs_service, key, job_id)
    assert found["status"] == "cancelled"
    counts = found["counts"]
    assert counts["skipped"] > 0 and counts["done"] + counts["skipped"] == 40
    time.sleep(1)  # nothing more is scraped after the pages in flight
    fetched = sum(site.count(f"/jobs-cancel/{n}") for n in range(40))
    assert fetched == counts["done"]
    # never more pages of jobs at once than SCRAPESPY_JOB_PAGES_IN_FLIGHT, and that many
    assert in_flight.most == int(JOBS_ENV["SCRAPESPY_JOB_PAGES_IN_FLIGHT"])
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert found["credits_charged"] == counts["done"] * COST == 100 - summary["balance"]


def test_a_page_waiting_for_a_slot_when_its_job_is_cancelled_is_skipped_unbilled(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    # The job's first pages hold every slot (SCRAPESPY_JOB_PAGES_IN_FLIGHT), their answers
    # held by the site; the pages claimed after them wait for a slot, held, not started.
    account_id, key = accounts.create(credits=100)
    slots = int(JOBS_ENV["SCRAPESPY_JOB_PAGES_IN_FLIGHT"])
    in_flight, gate = InFlight(), threading.Event()
    urls = add_pages(site, "/jobs-waiting", 40, in_flight=in_flight, gate=gate)
    job_id = batch(jobs_service, key, {"urls": urls}).json["id"]
    try:
        deadline = time.monotonic() + 60
        while in_flight.now < slots:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cancelled = call("DELETE", jobs_service.url(f"/jobs/{job_id}"), key=key)
        assert cancelled.status == 200 and cancelled.json["status"] == "cancelled"
    finally:
        gate.set()
    found = wait_finished(jobs_service, key, job_id)  # no page of it in flight any more
    assert (found["counts"]["done"], found["counts"]["skipped"]) == (slots, 40 - slots)
    assert sum(site.count(f"/jobs-waiting/{n}") for n in range(40)) == slots
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert found["credits_charged"] == slots * COST == 100 - summary["balance"]


def test_a_job_that_runs_out_of_credits_stops_at_zero(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=5)
    urls = add_pages(site, "/jobs-broke", 12)
    job_id = batch(jobs_service, key, {"urls": urls}).json["id"]
    found = wait_finished(jobs_service, key, job_id)
    assert found["status"] == "insufficient_credits"
    assert "insufficient credits" in found["error"]
    assert found["counts"]["done"] == 5 and found["counts"]["skipped"] == 7
    assert found["credits_charged"] == 5
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (0, 0)
    assert accounts.entries_sum(account_id) == 0


def test_a_job_whose_key_is_revoked_fails_and_bills_only_its_done_pages(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    other_key = accounts.database.run_sync(keys.create, account_id, label="reader")
    urls = add_pages(site, "/jobs-revoked", 30, delay=SLOW)
    job_id = batch(jobs_service, key, {"urls": urls}).json["id"]
    deadline = time.monotonic() + 30
    while job(jobs_service, other_key, job_id).json["counts"]["done"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    key_id = accounts.database.run_sync(keys.authenticate, key).key_id
    accounts.database.run_sync(keys.revoke, account_id, key_id)
    found = wait_finished(jobs_service, other_key, job_id)  # the account's other key sees it
    assert found["status"] == "failed"
    assert found["error"] == (
        "the API key that made this job was revoked; its remaining pages were not scraped"
    )
    counts = found["counts"]
    assert counts["skipped"] > 0 and counts["done"] + counts["skipped"] == 30
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert found["credits_charged"] == counts["done"] * COST == 100 - summary["balance"]


def test_too_many_jobs_at_once_is_a_429(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    urls = add_pages(site, "/jobs-limit", 10, delay=SLOW)
    first = batch(jobs_service, key, {"urls": urls}).json["id"]
    second = batch(jobs_service, key, {"urls": urls}).json["id"]
    third = batch(jobs_service, key, {"urls": urls})
    assert third.status == 429 and third.headers["X-Error-Code"] == "too_many_jobs"
    for job_id in (first, second):
        call("DELETE", jobs_service.url(f"/jobs/{job_id}"), key=key)
        wait_finished(jobs_service, key, job_id)
    assert batch(jobs_service, key, {"urls": urls[:1]}).status == 202


def test_idempotent_retries_answer_the_first_call_and_charge_once(
    jobs_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    body = {"url": site.url("/article")}
    first = jobs_service.scrape(key, body, headers={"Idempotency-Key": "scrape-1"})
    again = jobs_service.scrape(key, body, headers={"Idempotency-Key": "scrape-1"})
    assert first.status == again.status == 200
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert accounts.summary(account_id)["balance"] == 100 - COST
    # the first call says what it cost; the replay that it cost nothing, and the balance now
    assert (first.headers["X-Credits-Charged"], first.headers["X-Credits-Remaining"]) == (
        str(COST),
        str(100 - COST),
    )
    assert (again.headers["X-Credits-Charged"], again.headers["X-Credits-Remaining"]) == (
        "0",
        str(100 - COST),
    )
    other = jobs_service.scrape(
        key, {"url": site.url("/redirect")}, headers={"Idempotency-Key": "scrape-1"}
    )
    assert other.status == 422 and other.headers["X-Error-Code"] == "idempotency_conflict"

    urls = add_pages(site, "/jobs-idem", 3)
    made = batch(jobs_service, key, {"urls": urls}, **{"Idempotency-Key": "batch-1"})
    replayed = batch(jobs_service, key, {"urls": urls}, **{"Idempotency-Key": "batch-1"})
    assert made.status == replayed.status == 202
    assert replayed.json == made.json
    wait_finished(jobs_service, key, made.json["id"])
    listed = call("GET", jobs_service.url("/jobs"), key=key).json["items"]
    assert [item["id"] for item in listed] == [made.json["id"]]
    assert accounts.summary(account_id)["balance"] == 100 - 4 * COST
    # a retry while the first call still runs is told so, and then gets its answer
    slow = {"url": site.url("/slow")}
    with ThreadPoolExecutor(1) as pool:
        fetched = site.count("/slow")
        running = pool.submit(jobs_service.scrape, key, slow, headers={"Idempotency-Key": "slow-1"})
        # the first call is under way once its page is asked for (which then takes 4 s): no
        # guess at how long a busy machine takes to get there
        deadline = time.monotonic() + 30
        while site.count("/slow") == fetched:
            assert time.monotonic() < deadline, "the first call never fetched its page"
            time.sleep(0.02)
        early = jobs_service.scrape(key, slow, headers={"Idempotency-Key": "slow-1"})
        assert early.status == 409 and early.headers["X-Error-Code"] == "idempotency_in_progress"
        assert early.headers["Retry-After"] == "1"
        first_slow = running.result(timeout=30)
    late = jobs_service.scrape(key, slow, headers={"Idempotency-Key": "slow-1"})
    assert (late.status, late.body) == (first_slow.status, first_slow.body)
    assert accounts.summary(account_id)["balance"] == 100 - 5 * COST
    # keys are per account: another account's same key is its own first call
    _, stranger = accounts.create(credits=10)
    theirs = jobs_service.scrape(stranger, body, headers={"Idempotency-Key": "scrape-1"})
    assert theirs.status == 200 and "Idempotent-Replayed" not in theirs.headers


def page_rows(accounts: Accounts, job_id: str) -> list[Any]:
    def read(conn: Any) -> list[Any]:
        return list(
            conn.execute(
                select(job_pages.c.status, job_pages.c.instance, job_pages.c.attempt)
                .join(jobs, jobs.c.seq == job_pages.c.job_seq)
                .where(jobs.c.public_id == job_id)
            ).all()
        )

    return accounts.database.run_sync(read)


def billed_scrapes(accounts: Accounts, account_id: int) -> tuple[int, int]:
    """(usage rows that charged, credits they charged) of the account."""

    def read(conn: Any) -> tuple[int, int]:
        row = conn.execute(
            select(func.count(), func.coalesce(func.sum(usage.c.credits), 0)).where(
                usage.c.account_id == account_id, usage.c.credits > 0
            )
        ).one()
        return int(row[0]), int(row[1])

    return accounts.database.run_sync(read)


def done_by(accounts: Accounts, job_id: str, instance: ServiceProcess, timeout: float = 30) -> None:
    """Waits until ``instance`` has finished a page of the job (a page's row names the instance
    of its attempt: host, pid, token)."""
    pid = f":{instance.process.pid}:"
    deadline = time.monotonic() + timeout
    while not any(
        row.status == "done" and pid in (row.instance or "") for row in page_rows(accounts, job_id)
    ):
        assert time.monotonic() < deadline, "the second instance took none of the job's pages"
        time.sleep(0.05)


def kill_mid_job(
    victim: ServiceProcess, watcher: ServiceProcess, key: str, job_id: str, done: int
) -> None:
    deadline = time.monotonic() + 30
    while job(watcher, key, job_id).json["counts"]["done"] < done:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    victim.stop(signal.SIGKILL)


def assert_exact(accounts: Accounts, account_id: int, found: dict[str, Any], total: int) -> None:
    assert found["status"] == "completed"
    assert found["counts"]["done"] == total
    assert found["credits_charged"] == total * COST
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert summary["balance"] == 1000 - total * COST
    assert billed_scrapes(accounts, account_id) == (total, total * COST)


def test_a_kill_mid_job_loses_no_page_and_bills_none_twice(
    own_database: tuple[str, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    """One instance, killed with SIGKILL mid-job and started again on the same database."""
    database_url, accounts = own_database
    account_id, key = accounts.create(credits=1000)
    urls = add_pages(site, "/jobs-kill", 24, delay=SLOW)
    first = start(database_url, tmp_path / "a")
    try:
        job_id = batch(first, key, {"urls": urls}).json["id"]
        kill_mid_job(first, first, key, job_id, done=4)
    finally:
        first.stop()
    again = start(database_url, tmp_path / "b")
    try:
        found = wait_finished(again, key, job_id, timeout=90)
    finally:
        again.stop()
    assert any(row.attempt > 1 for row in page_rows(accounts, job_id))  # taken over
    assert_exact(accounts, account_id, found, 24)


@pytest.mark.postgres
def test_two_instances_share_a_batch_and_take_over_a_killed_ones_pages(
    own_database: tuple[str, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    assert BACKEND == "postgresql"
    database_url, accounts = own_database
    account_id, key = accounts.create(credits=1000)
    urls = add_pages(site, "/jobs-shared", 40, delay=SLOW)
    one = start(database_url, tmp_path / "one")
    # the instance that stores a job cuts it into tasks, about two for each page it may have in
    # flight (job_queue.pages_per_task): stored by ``two`` with 8 in flight, the job has 20
    # tasks, more than ``one``'s worker takes at once (8), so both get some, whichever wakes first
    two = start(database_url, tmp_path / "two", SCRAPESPY_JOB_PAGES_IN_FLIGHT="8")
    try:
        job_id = batch(two, key, {"urls": urls}).json["id"]
        done_by(accounts, job_id, two)  # it takes a share of the pages
        kill_mid_job(two, one, key, job_id, done=12)
        found = wait_finished(one, key, job_id, timeout=60)
    finally:
        one.stop()
        two.stop()
    rows = page_rows(accounts, job_id)
    instances = {row.instance for row in rows}
    assert len(instances) == 2, instances  # both scraped some of its pages
    assert any(row.attempt > 1 for row in rows)  # pages of the killed one were taken over
    assert_exact(accounts, account_id, found, 40)
