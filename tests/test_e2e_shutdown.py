"""SIGTERM with scrapes in flight: they complete, are settled, and the process exits 0."""

from __future__ import annotations

import signal
import threading
import time

from harness.service import ServiceProcess


def test_sigterm_lets_in_flight_scrapes_finish_and_settle(database_url, site, accounts, tmp_path):
    proc = ServiceProcess(database_url, tmp_path).start()
    account_id, key = accounts.create(credits=10)
    replies = []

    def scrape() -> None:
        replies.append(proc.scrape(key, {"url": site.url("/slow"), "timeout": 30}))

    threads = [threading.Thread(target=scrape) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while accounts.summary(account_id)["held"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert accounts.summary(account_id)["held"] == 3
    code = proc.stop(signal.SIGTERM, timeout=30)
    for t in threads:
        t.join(10)
    assert code == 0
    assert [r.status for r in replies] == [200, 200, 200]
    assert all(r.json["success"] for r in replies)
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (7, 0)
    assert accounts.entries_sum(account_id) == 7
    assert "scrapespy stopped" in proc.log_text()


def test_sigterm_past_the_grace_period_releases_the_holds(database_url, site, accounts, tmp_path):
    proc = ServiceProcess(
        database_url, tmp_path, env={"SCRAPESPY_SHUTDOWN_GRACE_SECONDS": "0.5"}
    ).start()
    account_id, key = accounts.create(credits=10)
    replies = []
    t = threading.Thread(
        target=lambda: replies.append(proc.scrape(key, {"url": site.url("/slow"), "timeout": 30}))
    )
    t.start()
    deadline = time.monotonic() + 10
    while accounts.summary(account_id)["held"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.stop(signal.SIGTERM, timeout=30) == 0
    t.join(10)
    assert replies and replies[0].status == 200
    assert replies[0].json["success"] is False
    assert "shutting down" in replies[0].json["error"]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)
