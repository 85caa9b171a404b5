"""End to end: deploy/haproxy.cfg in front of two instances on one PostgreSQL, on 127.0.0.1.

The file is the recipe's own, with only what Docker gives it replaced: the instances' addresses
(two ``server`` lines for the ``server-template`` that Docker's DNS fills) and the port it
listens on. Its health checks, its retry of a request whose connection failed, its balancing
and its refusal of ``/metrics`` are what the test runs. An instance killed with SIGKILL costs
the callers nothing: the next scrapes are all answered, by the other, and billed once.

Run only with ``SCRAPESPY_TEST_DB=postgresql`` (CI), and where ``haproxy`` is installed
(``make test`` installs it).
"""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.balancer import start_haproxy
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed"),
]

# what deploy/compose.yaml gives an API instance, less what only matters in a container
ENV = {
    "SCRAPESPY_JOB_PAGES_IN_FLIGHT": "2",
    "SCRAPESPY_TRUST_X_FORWARDED_FOR": "1",
    "SCRAPESPY_SESSION_SECRET": "the same on every instance",
    "SCRAPESPY_EXTRACT_WORKERS": "1",
}
COST = 1  # a static scrape without a proxy (the default price list)


@pytest.fixture
def fleet(
    database_url: str, tmp_path: Path
) -> Iterator[tuple[list[ServiceProcess], str, Accounts]]:
    """Two instances, and the base URL of HAProxy in front of them."""
    made = a_database_of_its_own(database_url, tmp_path)
    url, accounts = next(made)
    instances: list[ServiceProcess] = []
    proxy = None
    try:
        for n in range(2):
            (tmp_path / f"i{n}").mkdir()
            instances.append(ServiceProcess(url, tmp_path / f"i{n}", env=ENV).start())
        ports = [int(p.base.rsplit(":", 1)[1]) for p in instances]
        proxy, base = start_haproxy(ports, tmp_path)
        yield instances, base, accounts
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        for instance in instances:
            instance.stop()
        next(made, None)


def scrapes_answered_by(instance: ServiceProcess) -> int:
    return sum(1 for e in instance.access_entries() if e.get("path") == "/scrape")


def answered_by(instance: ServiceProcess, request_ids: set[str]) -> set[str]:
    """Those of these requests the instance's access log names, once its output has caught up."""
    deadline = time.monotonic() + 30
    while True:
        seen = {e.get("request_id") for e in instance.access_entries()} & request_ids
        if seen == request_ids or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_a_killed_instance_costs_the_callers_nothing(
    fleet: tuple[list[ServiceProcess], str, Accounts], site: TargetSite
) -> None:
    instances, base, accounts = fleet
    account_id, key = accounts.create(credits=1000)
    page = {"url": site.url("/article")}

    def scrape() -> str:
        reply = call("POST", f"{base}/scrape", page, key=key)
        assert reply.status == 200, reply.body
        assert reply.json["success"] is True, reply.json["error"]
        # HAProxy sends header names in lower case, as HTTP allows
        return {k.lower(): v for k, v in reply.headers.items()}["x-request-id"]

    # both instances take scrapes: the balancer found and checked them
    deadline = time.monotonic() + 60
    done = 0
    while not all(scrapes_answered_by(i) for i in instances):
        assert time.monotonic() < deadline, "the scrapes never reached both instances"
        scrape()
        done += 1
    assert call("GET", f"{base}/metrics").status == 404
    assert call("GET", instances[0].url("/metrics")).status == 200

    victim, survivor = instances
    assert victim.process is not None
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait(10)
    after: set[str] = set()
    for _ in range(10):  # at once: the checks have not yet seen it die
        after.add(scrape())
        done += 1
    assert answered_by(survivor, after) == after
    assert accounts.summary(account_id)["balance"] == 1000 - done * COST
