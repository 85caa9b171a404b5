"""``serve --workers 2``: two processes share one socket and stop together on SIGTERM."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

from harness.service import ServiceProcess, paused


def pids_served(proc: ServiceProcess) -> set[int]:
    """The processes that answered (each writes its answers' access lines)."""
    return {entry["pid"] for entry in proc.access_entries()}


def test_two_workers_share_the_socket(database_url, site, accounts, tmp_path):
    proc = ServiceProcess(database_url, tmp_path, args=("--workers", "2")).start()
    try:
        # both workers must be up before the load: wait for two listening lines
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum("scrapespy listening on" in line for line in proc.output) >= 2:
                break
            time.sleep(0.1)
        account_id, key = accounts.create(credits=100)
        with ThreadPoolExecutor(max_workers=16) as pool:
            replies = list(
                pool.map(lambda _: proc.scrape(key, {"url": site.url("/article")}), range(60))
            )
        assert all(r.status == 200 and r.json["success"] for r in replies)
        deadline = time.monotonic() + 30
        while not (served_by := pids_served(proc)) and time.monotonic() < deadline:
            time.sleep(0.05)
        # the kernel may have given every connection to one process: stopped, it leaves the
        # next one to the other, which shares the socket
        stopped = next(iter(served_by))
        with paused(stopped):
            reply = proc.scrape(key, {"url": site.url("/article")})
        assert reply.status == 200 and reply.json["success"]
        assert accounts.summary(account_id)["balance"] == 39
        deadline = time.monotonic() + 30
        while len(pids := pids_served(proc)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pids) == 2, pids
    finally:
        assert proc.stop(signal.SIGTERM, timeout=60) == 0
