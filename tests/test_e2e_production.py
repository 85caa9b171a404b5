"""Production shape: several instances on one PostgreSQL database, crashes and outages.

These run in the PostgreSQL pass of ``make test`` (``SCRAPESPY_TEST_DB=postgresql``).
"""

from __future__ import annotations

import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy.engine import make_url

from harness.service import Accounts, ServiceProcess
from tests.relay import Relay

pytestmark = pytest.mark.postgres

REDIS_URL = "redis://127.0.0.1:6379/0"


def wait_for(predicate, timeout: float = 20.0, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


@pytest.fixture
def two_instances(database_url, tmp_path):
    env = {
        "SCRAPESPY_REDIS_URL": REDIS_URL,
        "SCRAPESPY_RATE_LIMIT_PER_SECOND": "5",
        "SCRAPESPY_RATE_LIMIT_BURST": "10",
    }
    first = ServiceProcess(database_url, tmp_path / "a", env=env)
    second = ServiceProcess(database_url, tmp_path / "b", env=env)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # started together: the migration lock makes the second wait for the first
    starters = [threading.Thread(target=p.start) for p in (first, second)]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    yield first, second
    first.stop()
    second.stop()


def test_two_instances_never_overdraw_and_share_the_rate_limit(
    two_instances, site, accounts: Accounts
):
    first, second = two_instances
    # ten accounts, each able to pay for 5 of its 20 scrapes; the burst (10) lets 10 per key
    # through at once, so the credits, not the limit, decide
    payers = [accounts.create(credits=5) for _ in range(10)]
    jobs = [(account_id, key) for account_id, key in payers for _ in range(20)]
    random.Random(7).shuffle(jobs)

    def scrape(job):
        account_id, key = job
        instance = random.choice((first, second))
        return account_id, instance.scrape(key, {"url": site.url("/article")})

    with ThreadPoolExecutor(max_workers=32) as pool:
        outcomes = list(pool.map(scrape, jobs))
    assert len(outcomes) == 200
    for account_id, _ in payers:
        statuses = [r.status for a, r in outcomes if a == account_id]
        assert statuses.count(200) == 5, statuses
        assert set(statuses) <= {200, 402, 429}
        summary = accounts.summary(account_id)
        assert summary["balance"] == 0 and summary["held"] == 0
        assert accounts.entries_sum(account_id) == 0

    # the shared limit: one key hammering both instances gets at most burst + rate x elapsed
    _, key = accounts.create(credits=0)
    started = time.monotonic()
    accepted = 0
    for n in range(60):
        reply = (first, second)[n % 2].scrape(key, {"url": site.url("/article")})
        accepted += reply.status != 429
    elapsed = time.monotonic() - started
    assert accepted <= 10 + 5 * elapsed + 1, (accepted, elapsed)
    assert accepted >= 10


def test_a_killed_instance_leaves_no_credits_locked(
    database_url, site, accounts: Accounts, tmp_path
):
    env = {"SCRAPESPY_HOLD_TTL_SECONDS": "3", "SCRAPESPY_SWEEP_INTERVAL_SECONDS": "1"}
    doomed = ServiceProcess(database_url, tmp_path, env=env).start()
    account_id, key = accounts.create(credits=10)

    def in_flight() -> None:
        try:
            doomed.scrape(key, {"url": site.url("/slow"), "timeout": 30}, timeout=30)
        except OSError:
            pass  # the instance dies under it

    threads = [threading.Thread(target=in_flight, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    assert wait_for(lambda: accounts.summary(account_id)["held"] == 4)
    doomed.stop(signal.SIGKILL)
    assert accounts.summary(account_id)["held"] == 4
    survivor = ServiceProcess(database_url, tmp_path, env=env).start()
    try:
        assert wait_for(lambda: accounts.summary(account_id)["held"] == 0, timeout=15)
        summary = accounts.summary(account_id)
        assert summary["balance"] == 10
        assert accounts.entries_sum(account_id) == 10
        # the key still works on the survivor and bills normally
        assert survivor.scrape(key, {"url": site.url("/article")}).json["success"] is True
        assert accounts.summary(account_id)["balance"] == 9
    finally:
        survivor.stop()


def test_database_outage_is_503_and_the_service_recovers(
    database_url, site, accounts: Accounts, tmp_path
):
    url = make_url(database_url)
    relay = Relay(url.host or "127.0.0.1", url.port or 5432).start()
    via_relay = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    env = {"SCRAPESPY_HOLD_TTL_SECONDS": "3", "SCRAPESPY_SWEEP_INTERVAL_SECONDS": "1"}
    proc = ServiceProcess(via_relay, tmp_path, env=env).start()
    try:
        account_id, key = accounts.create(credits=10)
        assert proc.scrape(key, {"url": site.url("/article")}).json["success"] is True

        # an outage before the scrape
        relay.cut()
        reply = proc.scrape(key, {"url": site.url("/article")})
        assert reply.status == 503
        assert reply.error_answer == (
            {"error": "the database is unavailable, retry later"},
            "unavailable",
        )
        relay.restore()
        assert wait_for(lambda: proc.scrape(key, {"url": site.url("/article")}).status == 200)
        balance = accounts.summary(account_id)["balance"]

        # an outage in the middle of a scrape: 503, nothing charged, the hold released later
        outcome = {}
        t = threading.Thread(
            target=lambda: outcome.setdefault("r", proc.scrape(key, {"url": site.url("/slow")})),
            daemon=True,
        )
        t.start()
        assert wait_for(lambda: accounts.summary(account_id)["held"] == 1)
        relay.cut()
        t.join(30)
        assert outcome["r"].status == 503
        assert "database" in outcome["r"].json["error"]
        relay.restore()
        assert wait_for(lambda: accounts.summary(account_id)["held"] == 0, timeout=20)
        assert accounts.summary(account_id)["balance"] == balance
        assert accounts.entries_sum(account_id) == balance
        assert "Traceback" not in outcome["r"].body.decode()
    finally:
        proc.stop()
        relay.cut()
