"""End to end: the Python client (clients/python, ``scrapespy``) against the real service.

What a caller of the client sees: typed results of real scrapes, jobs (batch, crawl, wait with
progress, every result across cursors, listing, cancel), maps and account reads, with fields a
newer service adds kept; the API's messages and error codes in typed exceptions, and no
request at all without a key. And the README's three lines print markdown. What the client
retries is in tests/test_client_retries.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from scrapespy import (
    AuthenticationError,
    InvalidRequest,
    JobStatus,
    NotFound,
    ScrapeFailed,
    ScrapeResult,
    Scrapespy,
    ScrapespyError,
    WaitTimeout,
)
from scrapespy.models import Link, Timings

from harness.service import ROOT, Accounts, ServiceProcess
from harness.site import TargetSite
from tests.front import Front, front_fixture  # noqa: F401  (a fixture)
from tests.test_e2e_batch import add_pages

GRANT = 1000


def client_of(service: ServiceProcess | Front, key: str, **kwargs: Any) -> Scrapespy:
    return Scrapespy(api_key=key, base_url=service.base, **kwargs)


def new_client(service: ServiceProcess, accounts: Accounts, credits: int = GRANT) -> Scrapespy:
    return client_of(service, accounts.create(credits=credits)[1])


def test_the_readme_snippet_prints_markdown(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    snippet = re.search(r"```python\n(.*?)```", readme, re.S)
    assert snippet is not None
    code = snippet.group(1)
    assert len(code.strip().splitlines()) == 3
    assert "https://example.com/" in code
    env = {
        **os.environ,
        "SCRAPESPY_API_KEY": accounts.create(credits=GRANT)[1],
        "SCRAPESPY_URL": service.base,
    }
    ran = subprocess.run(
        [sys.executable, "-c", code.replace("https://example.com/", site.url("/article"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("# Main heading\n")
    assert "Lead paragraph with **bold** text." in ran.stdout


def test_scrape_answers_a_typed_result_with_markdown(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    with new_client(service, accounts) as client:
        result = client.scrape(
            site.url("/article"),
            formats=["markdown", "html"],
            only_main_content=True,
            selectors={"items": "#items li::text"},
        )
        assert isinstance(result, ScrapeResult)
        assert result.ok and result.success and not result.blocked
        assert result.raise_for_failure() is result
        assert result.status_code == 200 and result.engine == "static"
        assert result.title == "The Article"
        assert result.meta["description"] == "An article for tests"
        assert result.headings["h2"] == ["First section", "Second section"]
        assert isinstance(result.links[0], Link)
        assert site.url("/docs/page2.html") in [link.href for link in result.links]
        assert result.extracted == {"items": ["One", "Two"]}
        assert result.markdown is not None and result.markdown.startswith("# Main heading")
        assert result.html is not None and "<script" not in result.html
        assert result.raw_html is None and result.screenshot is None
        assert result.attempts is None and result.actions is None
        assert result.error is None and result.error_code is None
        assert result.tier_used == "none" and result.cached is False
        assert isinstance(result.timings, Timings) and result.timings.connect is not None
        assert result.credits_charged == 1
        assert result.credits_remaining == GRANT - 1
        assert client.account().balance == GRANT - 1
    # what a newer service may add (a field, an engine, a code) is kept, never an error
    newer = {**result.model_dump(), "engine": "quantum", "error_code": "new_code", "rank": 7}
    later = ScrapeResult.model_validate(newer)
    assert later.engine == "quantum" and later.model_extra == {"rank": 7}
    assert JobStatus.model_validate({"id": "j", "status": "paused", "eta": 3}).model_extra == {
        "eta": 3
    }


def test_a_failed_scrape_is_returned_and_raise_for_failure_raises_it(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    with new_client(service, accounts) as client:
        result = client.scrape(site.url("/status/404"))
        assert not result.ok and result.success is False
        assert result.status_code == 404 and result.error_code == "http_error"
        assert result.error == "the target answered HTTP 404"
        assert result.credits_charged == 0
        with pytest.raises(ScrapeFailed) as raised:
            result.raise_for_failure()
        assert raised.value.error_code == "http_error"
        assert raised.value.message == "the target answered HTTP 404"
        assert raised.value.result is result
        assert client.account().balance == GRANT


def test_a_bad_request_raises_invalid_request_with_the_apis_message(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    with new_client(service, accounts) as client:
        with pytest.raises(InvalidRequest) as raised:
            client.scrape(site.url("/article"), timeout=500)
        assert raised.value.status_code == 400
        assert raised.value.error_code == "invalid_request"
        assert "'timeout'" in raised.value.message
        assert raised.value.body["error"] == raised.value.message
        with pytest.raises(InvalidRequest, match="unknown field 'colour'"):
            client.scrape(site.url("/article"), colour="blue")
        with pytest.raises(NotFound) as missing:
            client.job("no-such-job")
        assert missing.value.error_code == "not_found"


def test_a_key_is_needed_before_anything_is_sent(
    front: Front, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCRAPESPY_API_KEY", raising=False)
    with pytest.raises(ScrapespyError, match="SCRAPESPY_API_KEY"):
        Scrapespy(base_url=front.base)
    monkeypatch.setenv("SCRAPESPY_API_KEY", "spy_not-a-key")
    monkeypatch.setenv("SCRAPESPY_URL", front.base)
    with Scrapespy() as client, pytest.raises(AuthenticationError) as raised:
        client.account()
    assert raised.value.status_code == 401 and raised.value.error_code == "unauthorized"
    assert raised.value.message == "API key (X-API-Key header) is missing or invalid"
    assert [seen.headers["x-api-key"] for seen in front.seen] == ["spy_not-a-key"]


def test_batch_and_wait_report_progress_to_a_callback(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    urls = add_pages(site, "/client-batch", 3, delay=0.3)
    seen: list[JobStatus] = []
    with new_client(service, accounts) as client:
        job = client.batch(urls, formats=["markdown"])
        assert job.status_url is not None and job.status_url.endswith(f"/jobs/{job.id}")
        final = job.wait(poll_interval=0.1, timeout=60, progress=seen.append)
        assert final.status == "completed" and final.finished
        assert final.counts is not None and final.counts.done == 3
        assert final.credits_charged == 3
        assert [page.url for page in final.results] == urls
        assert all(page.result and page.result.markdown for page in final.results)
        assert seen[-1].status == "completed" and seen[-1].progress.endswith("3 credits")
        states = [(s.status, s.counts) for s in seen]
        assert all(a != b for a, b in zip(states, states[1:], strict=False))  # each a change
        assert client.account().balance == GRANT - 3


def test_wait_prints_progress_and_times_out(
    service: ServiceProcess,
    accounts: Accounts,
    site: TargetSite,
    capsys: pytest.CaptureFixture[str],
) -> None:
    urls = add_pages(site, "/client-print", 2, delay=0.2)
    with new_client(service, accounts) as client:
        job = client.batch(urls)
        client.wait(job.id, poll_interval=0.1, timeout=60, progress=True)
        assert f"job {job.id}: completed, 2/2 pages (done 2, failed 0, blocked 0), 2 credits" in (
            capsys.readouterr().err.splitlines()
        )
        slow = add_pages(site, "/client-wait-slow", 2, delay=3)
        late = client.batch(slow)
        with pytest.raises(WaitTimeout):
            late.wait(poll_interval=0.1, timeout=0.5)
        late.cancel()


def test_job_results_walk_every_cursor(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    urls = add_pages(site, "/client-cursor", 5)
    urls.append(site.url("/status/404"))
    with new_client(service, accounts) as client:
        job = client.batch(urls)
        job.wait(poll_interval=0.1, timeout=60)
        first = client.job(job.id, limit=2)
        assert len(first.results) == 2 and first.next_cursor is not None
        results = list(client.job_results(job.id, limit=2))
        assert [r.url for r in results] == urls
        assert [r.ok for r in results] == [True] * 5 + [False]
        assert results[-1].error_code == "http_error"


def test_jobs_listing_and_cancel(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    urls = add_pages(site, "/client-cancel", 20, delay=1.0)
    with new_client(service, accounts) as client:
        done = client.batch(add_pages(site, "/client-listed", 1))
        job = client.batch(urls)
        listed = client.jobs()
        assert [item.id for item in listed.items] == [job.id, done.id]
        assert all(item.kind == "batch" for item in listed.items)
        assert client.jobs(limit=1).next_cursor is not None
        cancelled = client.cancel(job.id)
        assert cancelled.status == "cancelled" and cancelled.results == []
        final = client.wait(job.id, poll_interval=0.1, timeout=60)
        assert final.status == "cancelled"
        assert final.counts is not None and final.counts.skipped > 0
        assert final.credits_charged == final.counts.done


def test_crawl_and_map(service: ServiceProcess, accounts: Accounts, site: TargetSite) -> None:
    def page(title: str, *links: str) -> str:
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{anchors}</body>"

    site.page("/client-site/", page("Home", "/client-site/a", "/client-site/b"))
    site.page("/client-site/a", page("A", "/client-site/b", "/client-site/deep"))
    site.page("/client-site/b", page("B"))
    site.page("/client-site/deep", page("Deep"))
    start = site.url("/client-site/")
    rules: dict[str, Any] = {"include_paths": ["^/client-site/"], "sitemap": "skip"}
    with new_client(service, accounts) as client:
        found = client.map(start, **rules)
        assert found.error is None and found.error_code is None
        assert set(found.urls) == {start, site.url("/client-site/a"), site.url("/client-site/b")}
        assert found.count == 3
        job = client.crawl(start, max_depth=1, formats=["markdown"], **rules)
        final = job.wait(poll_interval=0.1, timeout=60)
        assert final.kind == "crawl" and final.status == "completed"
        titles = sorted(r.title or "" for r in client.job_results(job.id))
        assert titles == ["A", "B", "Home"]
        assert client.account().balance == GRANT - 1 - 3  # the map and three pages


def test_account_usage_and_ledger(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    with new_client(service, accounts, credits=50) as client:
        client.scrape(site.url("/article?usage=1"))
        client.scrape(site.url("/status/404"))
        account = client.account()
        assert (account.balance, account.held, account.available) == (49, 0, 49)
        assert account.residential_trials_left == 10 and not account.residential_unlocked
        assert account.rate_limits is not None and account.rate_limits.scrape is not None
        usage = client.usage()
        assert [(row.url, row.credits) for row in usage.items] == [
            (site.url("/status/404"), 0),
            (site.url("/article?usage=1"), 1),
        ]
        page = client.usage(limit=1)
        assert len(page.items) == 1 and page.next_cursor is not None
        rest = client.usage(limit=1, cursor=page.next_cursor)
        assert rest.items[0].id == usage.items[1].id
        assert client.usage(since=datetime.now(UTC) + timedelta(hours=1)).items == []
        ledger = client.ledger()
        assert [(e.kind, e.amount, e.balance_after) for e in ledger.items] == [
            ("scrape", -1, 49),
            ("grant", 50, 50),
        ]
        assert ledger.items[0].reference == usage.items[1].reference
        assert client.ledger(since=datetime.now(UTC).date(), limit=1).next_cursor is not None
