"""End to end: instances on one PostgreSQL take over a killed one's page tasks, each task once.

Three instances share two batches; one is killed (SIGKILL) while its pages are being scraped.
The other two both look for the tasks of dead workers every third of
``SCRAPESPY_JOB_STALLED_SECONDS``, often at the same moment. Each of the dead worker's tasks
must be put back by one of them only, and never under a live worker that took it again
meanwhile: a task reset under a live worker ran twice at once, its pages were fetched twice
(and a crawl's per-site bound broken). Billing stayed exact even then (the page's attempt and
its hold), so the test counts the fetches at the site, and the log lines of the takeover.

Run only with ``SCRAPESPY_TEST_DB=postgresql`` (CI).
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own
from tests.test_e2e_batch import batch, billed_scrapes, page_rows, start, wait_finished

pytestmark = pytest.mark.postgres

COST = 1  # a static scrape without a proxy (the default price list)
DELAY = 2.0  # seconds each page takes to answer: the victim dies with pages in flight
PAGES = 31  # pages of each batch: one task each (service.jobs.queue.pages_per_task)
# near the kill: a page served then may have been fetched by the victim, whose result was lost
KILL_MARGIN = 10.0
# the instances: a page task each per page (PAGES < 2 * 2 * in flight), and a short stall
ENV = {"SCRAPESPY_JOB_PAGES_IN_FLIGHT": "8", "SCRAPESPY_JOB_STALLED_SECONDS": "4"}
PUT_BACK = re.compile(r"page task (\d+) of a dead worker is run again")


class Served:
    """When the site served each page: (start, end) of each request, by path."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: dict[str, list[tuple[float, float | None]]] = {}

    def add_pages(self, site: TargetSite, prefix: str, count: int) -> list[str]:
        urls = []
        for n in range(count):
            path = f"{prefix}/{n}"
            body = f"<html><head><title>Page {n}</title></head><body><p>{n}</p></body></html>"

            def route(_h: Any, path: str = path, body: bytes = body.encode()) -> Any:
                with self.lock:
                    spans = self.spans.setdefault(path, [])
                    spans.append((time.monotonic(), None))
                    index = len(spans) - 1
                time.sleep(DELAY)
                with self.lock:
                    spans[index] = (spans[index][0], time.monotonic())
                return 200, {"Content-Type": "text/html; charset=utf-8"}, body

            site.routes[path] = route
            urls.append(site.url(path))
        return urls

    def near(self, moment: float) -> set[str]:
        """The pages being served within ``KILL_MARGIN`` of ``moment``."""
        with self.lock:
            return {
                path
                for path, spans in self.spans.items()
                for start, end in spans
                if start <= moment + KILL_MARGIN and (end is None or end >= moment - KILL_MARGIN)
            }

    def counts(self) -> Counter[str]:
        with self.lock:
            return Counter({path: len(spans) for path, spans in self.spans.items()})


def running_at(accounts: Accounts, job_ids: list[str], instance: ServiceProcess) -> int:
    """Pages of the jobs the instance is running (a page's row names its attempt's process)."""
    pid = f":{instance.process.pid}:" if instance.process else "?"
    return sum(
        row.status == "running" and pid in (row.instance or "")
        for job_id in job_ids
        for row in page_rows(accounts, job_id)
    )


def put_back(log: str) -> list[int]:
    """The tasks an instance put back, from its log lines (JSON, one an entry)."""
    tasks = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        match = PUT_BACK.fullmatch(str(entry.get("msg", ""))) if isinstance(entry, dict) else None
        if match:
            tasks.append(int(match.group(1)))
    return tasks


@pytest.fixture
def own_database(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path)


def test_instances_take_over_a_killed_ones_tasks_each_once(
    own_database: tuple[str, Accounts], site: TargetSite, tmp_path: Path
) -> None:
    database_url, accounts = own_database
    account_id, key = accounts.create(credits=1000)
    served = Served()
    urls = [served.add_pages(site, f"/takeover/{name}", PAGES) for name in ("one", "two")]
    instances = [start(database_url, tmp_path / name, **ENV) for name in ("a", "b", "c")]
    victim, survivors = instances[0], instances[1:]
    try:
        job_ids = [batch(victim, key, {"urls": pages}).json["id"] for pages in urls]
        # the victim dies with pages of its own being scraped
        deadline = time.monotonic() + 60
        while running_at(accounts, job_ids, victim) < 4:
            assert time.monotonic() < deadline, "the victim took no pages"
            time.sleep(0.05)
        victim.stop(signal.SIGKILL)
        killed = time.monotonic()
        found = [wait_finished(survivors[0], key, job_id, timeout=180) for job_id in job_ids]
        logs = [survivor.log_text() for survivor in survivors]
    finally:
        for instance in instances:
            instance.stop()

    # each task of the dead worker put back once, by one instance
    tasks = [task for log in logs for task in put_back(log)]
    assert tasks, "no task was taken over"
    assert sorted(tasks) == sorted(set(tasks)), tasks
    for log in logs:
        assert "Task exception was never retrieved" not in log
    # a page is fetched again only when the victim may have been fetching it when it died
    counts = served.counts()
    twice = {path for path, count in counts.items() if count > 1}
    assert twice <= served.near(killed), sorted(twice - served.near(killed))
    assert max(counts.values()) <= 2, counts.most_common(3)
    assert len(counts) == 2 * PAGES
    # and each page billed once
    for done in found:
        assert done["status"] == "completed"
        assert done["counts"]["done"] == PAGES
        assert done["credits_charged"] == PAGES * COST
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    assert summary["balance"] == 1000 - 2 * PAGES * COST
    assert billed_scrapes(accounts, account_id) == (2 * PAGES, 2 * PAGES * COST)
