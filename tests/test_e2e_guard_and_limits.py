"""End to end with the production defaults that matter: the egress guard on, a tight rate limit."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from service.egress.addresses import BLOCKED_MESSAGE


@pytest.fixture(scope="module")
def guarded(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("guarded"),
        env={
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "0",
            "SCRAPESPY_RATE_LIMIT_PER_SECOND": "2",
            "SCRAPESPY_RATE_LIMIT_BURST": "3",
        },
    ).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "127.1",
        "2130706433",
        "0x7f000001",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "017700000001",
    ],
)
def test_private_targets_are_refused_in_every_form(
    guarded, site: TargetSite, accounts: Accounts, host
):
    account_id, key = accounts.create(credits=10)
    before = sum(site.hits.values())
    reply = guarded.scrape(key, {"url": f"http://{host}:{site.port}/article"})
    assert reply.status == 200
    result = reply.json
    assert result["success"] is False
    assert "not allowed" in result["error"], result["error"]
    assert result["error"] == BLOCKED_MESSAGE
    assert sum(site.hits.values()) == before
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)


def test_rate_limit_is_429_with_retry_after(guarded, site: TargetSite, accounts: Accounts):
    _, key = accounts.create(credits=0)
    _, other = accounts.create(credits=0)
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda _: guarded.scrape(key, {"url": "http://x.test/"}), range(8)))
    limited = [r for r in replies if r.status == 429]
    # 402s are the requests let through (no credits): at most the burst, plus what the rate refills
    assert len(limited) >= 4
    for reply in limited:
        assert int(reply.headers["Retry-After"]) >= 1
        assert "retry later" in reply.json["error"]
        assert reply.headers["X-Error-Code"] == "rate_limited"
    # the limit is per key: another key is not affected
    assert guarded.scrape(other, {"url": "http://x.test/"}).status == 402
