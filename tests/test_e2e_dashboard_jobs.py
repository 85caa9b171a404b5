"""End to end: the dashboard's jobs pages against the real service, scraping the local site.

Over plain HTTP (tests.dashboard_client.WebClient): a batch made through the API is listed with
its counts, credits and progress, its page shows each URL's result (the same JSON as
``GET /jobs/{id}``) a page at a time, Cancel needs the form's CSRF token and stops the job, and
another account's job is a 404 everywhere. In the real Chromium: the whole journey by clicks.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import Accounts, call
from harness.site import TargetSite
from tests.dashboard_client import (
    PASSWORD,
    BrowserThread,
    PublicService,
    WebClient,
    member,
    new_key,
    text_of,
)
from tests.test_e2e_batch import add_pages

FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")
# seconds each page of a job meant to be cancelled takes: 30 pages, two at a time, last a minute,
# longer than a busy machine takes to log in and reach the Cancel button (at 1 s, the job
# completed first on a loaded machine and its page never showed "cancelled")
SLOW = 4.0


@pytest.fixture(scope="module")
def service(database_url, tmp_path_factory) -> Iterator[PublicService]:
    # two pages at a time: a job of slow pages runs long enough to be cancelled
    started = PublicService.start(
        database_url, tmp_path_factory.mktemp("dashboard-jobs"), SCRAPESPY_JOB_PAGES_IN_FLIGHT="2"
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[BrowserThread]:
    browser = BrowserThread().start()
    yield browser
    browser.stop()


def make_batch(service: PublicService, key: str, urls: list[str]) -> str:
    reply = call("POST", service.url("/batch"), {"urls": urls}, key=key)
    assert reply.status == 202, reply.body
    return str(reply.json["id"])


def api_job(service: PublicService, key: str, job_id: str, query: str = "") -> dict[str, Any]:
    reply = call("GET", service.url(f"/jobs/{job_id}{query}"), key=key)
    assert reply.status == 200, reply.body
    found: dict[str, Any] = reply.json
    return found


def wait_finished(service: PublicService, key: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while (found := api_job(service, key, job_id))["status"] not in FINISHED:
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    return found


def cell(reply_text: str, row_id: str, name: str) -> str:
    """The text of a row's cell of class ``name``, from the page's HTML."""
    row = re.search(rf'<tr id="{re.escape(row_id)}".*?</tr>', reply_text, re.S)
    assert row, f"no row {row_id}"
    found = re.search(rf'class="[^"]*\b{name}\b[^"]*"[^>]*>(.*?)</td>', row.group(0), re.S)
    assert found, f"no {name} in row {row_id}"
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).strip()


def summary_of(reply_text: str) -> dict[str, str]:
    return {
        name: html.unescape(re.sub(r"<[^>]+>", "", value)).strip()
        for name, value in re.findall(
            r'<(?:dd|span) id="job-([a-z]+)"[^>]*>(.*?)</(?:dd|span)>', reply_text, re.S
        )
    }


def test_a_batch_is_listed_with_its_progress_and_its_results_page_by_page(
    service: PublicService, accounts: Accounts, site: TargetSite
) -> None:
    client, account_id, _ = member(service.public, accounts, "jobs", credits=500)
    key = new_key(client)
    empty = client.get("/dashboard/jobs")
    assert empty.status == 200 and "No jobs yet" in text_of(empty)
    urls = add_pages(site, "/dash-jobs", 54) + [site.url("/missing-page")]
    job_id = make_batch(service, key, urls)
    done = wait_finished(service, key, job_id)
    assert done["status"] == "completed"
    assert done["counts"] == {"done": 54, "failed": 1, "blocked": 0, "pending": 0, "skipped": 0}

    listing = client.get("/dashboard/jobs")
    assert listing.status == 200
    assert "Content-Security-Policy" in listing.headers
    page = listing.body.decode()
    row = f"job-{job_id}"
    assert cell(page, row, "job-status") == "completed"
    assert [cell(page, row, f"job-{n}") for n in ("done", "failed", "blocked", "pending")] == [
        "54",
        "1",
        "0",
        "0",
    ]
    assert cell(page, row, "job-credits") == str(done["credits_charged"]) == "54"
    assert "55 / 55" in cell(page, row, "job-progress")
    assert f'href="/dashboard/jobs/{job_id}"' in page
    assert 'http-equiv="refresh"' not in page  # nothing runs: nothing to watch
    assert '<a href="/dashboard/jobs" aria-current="page">Jobs</a>' in page

    first = client.get(f"/dashboard/jobs/{job_id}")
    assert first.status == 200
    shown = first.body.decode()
    assert summary_of(shown) == {
        "kind": "batch",
        "status": "completed",
        "progress": "55 / 55",
        "done": "54",
        "failed": "1",
        "blocked": "0",
        "pending": "0",
        "skipped": "0",
        "credits": "54",
    }
    assert "Cancel job" not in shown  # a finished job has nothing to cancel
    assert "page 1 of 2" in text_of(first)
    # each page's URL, status, credits and title, as the API has them
    api = api_job(service, key, job_id, "?limit=55")["results"]
    for result in api[:50]:
        row = f"page-{result['index']}"
        assert cell(shown, row, "page-status") == result["status"] == "done"
        assert cell(shown, row, "page-credits") == str(result["credits"]) == "1"
        assert cell(shown, row, "page-title").startswith(result["result"]["title"])
    assert "page-54" not in shown
    second = client.get(f"/dashboard/jobs/{job_id}?page=2")
    later = second.body.decode()
    assert [int(n) for n in re.findall(r'<tr id="page-(\d+)"', later)] == list(range(50, 55))
    assert cell(later, "page-54", "page-status") == "failed"
    assert cell(later, "page-54", "page-credits") == "0"
    assert "404" in cell(later, "page-54", "page-result")
    # a result's JSON, whole, is what GET /jobs/{id} answers for it
    for index in (0, 54):
        reply = client.get(f"/dashboard/jobs/{job_id}/results/{index}.json")
        assert reply.status == 200
        assert reply.headers["Content-Type"] == "application/json"
        assert json.loads(reply.body) == api[index]["result"]
    # the JSON shown in the page is the same answer (its bulky fields shortened)
    shown_json = re.search(r'<tr id="page-3".*?<pre class="json">(.*?)</pre>', shown, re.S)
    assert shown_json
    assert json.loads(html.unescape(shown_json.group(1)))["url"] == urls[3]
    assert accounts.summary(account_id)["balance"] == 500 - 54


def test_cancel_needs_the_forms_token_and_stops_the_job(
    service: PublicService, accounts: Accounts, site: TargetSite
) -> None:
    client, account_id, _ = member(service.public, accounts, "jobcancel", credits=500)
    key = new_key(client)
    job_id = make_batch(service, key, add_pages(site, "/dash-slow", 30, delay=SLOW))
    running = client.get(f"/dashboard/jobs/{job_id}").body.decode()
    assert "Cancel job" in running and 'http-equiv="refresh"' in running
    assert summary_of(running)["status"] in ("queued", "running")

    for fields in ({}, {"csrf_token": "forged"}):
        refused = client.post(f"/dashboard/jobs/{job_id}/cancel", fields)
        assert refused.status == 403
    assert api_job(service, key, job_id)["status"] in ("queued", "running")

    # pages finished before the cancel
    counts = api_job(service, key, job_id)["counts"]
    finished = counts["done"] + counts["failed"] + counts["blocked"]
    cancelled = client.post(f"/dashboard/jobs/{job_id}/cancel", {"csrf_token": client.csrf_token()})
    assert cancelled.status == 303
    assert cancelled.headers["Location"] == f"/dashboard/jobs/{job_id}"
    found = wait_finished(service, key, job_id)
    assert found["status"] == "cancelled"
    # the pages not yet started are skipped (how many had started depends on the machine)
    assert 0 < found["counts"]["skipped"] <= 30 - finished
    shown = client.get(f"/dashboard/jobs/{job_id}").body.decode()
    assert summary_of(shown)["status"] == "cancelled"
    assert summary_of(shown)["credits"] == str(found["credits_charged"])
    assert "Cancel job" not in shown
    # the running pages settled as scrapes do: the balance moved by what the job charged
    deadline = time.monotonic() + 30
    while accounts.summary(account_id)["held"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    settled = api_job(service, key, job_id)
    while settled["counts"]["pending"]:  # the pages that were running store their results
        assert time.monotonic() < deadline
        time.sleep(0.2)
        settled = api_job(service, key, job_id)
    assert sum(settled["counts"].values()) == 30  # every page accounted for
    assert accounts.summary(account_id)["balance"] == 500 - settled["credits_charged"]


def test_another_accounts_job_is_not_found_anywhere_in_the_dashboard(
    service: PublicService, accounts: Accounts, site: TargetSite
) -> None:
    owner, _, _ = member(service.public, accounts, "jobowner", credits=500)
    key = new_key(owner)
    job_id = make_batch(service, key, add_pages(site, "/dash-owned", 20, delay=SLOW))
    stranger, _, _ = member(service.public, accounts, "jobstranger", credits=500)
    assert job_id not in stranger.get("/dashboard/jobs").body.decode()
    for path in (f"/dashboard/jobs/{job_id}", f"/dashboard/jobs/{job_id}/results/0.json"):
        reply = stranger.get(path)
        assert reply.status == 404
        assert "No such" in text_of(reply) and "dash-owned" not in reply.body.decode()
    refused = stranger.post(
        f"/dashboard/jobs/{job_id}/cancel", {"csrf_token": stranger.csrf_token()}
    )
    assert refused.status == 404
    assert api_job(service, key, job_id)["status"] in ("queued", "running")
    # and signed out, the pages ask to sign in first
    for path in ("/dashboard/jobs", f"/dashboard/jobs/{job_id}"):
        reply = WebClient(service.public).get(path)
        assert reply.status == 303 and reply.headers["Location"] == "/dashboard/login"
    assert owner.post(f"/dashboard/jobs/{job_id}/cancel", {"csrf_token": owner.csrf_token()})
    assert wait_finished(service, key, job_id)["status"] == "cancelled"


# the real browser ------------------------------------------------------------------------------


def browse_jobs(
    browser: Any, public: str, email: str, done_id: str, slow_id: str
) -> dict[str, Any]:
    """Log in, open Jobs from the navigation, read both jobs' rows, open the finished one and
    expand a result, then open the slow one and press Cancel."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    seen: dict[str, Any] = {"errors": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.goto(public + "/dashboard/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(public + "/dashboard")
    page.get_by_role("navigation").get_by_role("link", name="Jobs").click()
    page.wait_for_url(public + "/dashboard/jobs")
    seen["done_row"] = page.inner_text(f"#job-{done_id}")
    seen["slow_status"] = page.inner_text(f"#job-{slow_id} .job-status")
    seen["progress"] = page.get_attribute(f"#job-{done_id} progress", "value")

    page.click(f"#job-{done_id} a")
    page.wait_for_url(public + f"/dashboard/jobs/{done_id}")
    seen["status"] = page.inner_text("#job-status")
    seen["title"] = page.inner_text("#page-0 .page-title")
    json_box = page.locator("#page-0 pre.json")
    seen["json_hidden"] = not json_box.is_visible()
    page.locator("#page-0 summary").click()
    seen["json_shown"] = json_box.is_visible()
    seen["json"] = json_box.inner_text()

    page.goto(public + f"/dashboard/jobs/{slow_id}")
    page.get_by_role("button", name="Cancel job").click()
    page.wait_for_selector("#job-status[data-status=cancelled]")
    seen["after_cancel"] = page.inner_text("#job-status")
    seen["cancel_left"] = page.get_by_role("button", name="Cancel job").count()
    context.close()
    return seen


@pytest.mark.browser
def test_in_chromium_a_batch_is_listed_opened_and_another_cancelled(
    service: PublicService, accounts: Accounts, site: TargetSite, chromium: BrowserThread
) -> None:
    client, _, email = member(service.public, accounts, "jobsbrowser", credits=500)
    key = new_key(client)
    urls = add_pages(site, "/browser-jobs", 6)
    done_id = make_batch(service, key, urls)
    assert wait_finished(service, key, done_id)["status"] == "completed"
    slow_id = make_batch(service, key, add_pages(site, "/browser-slow", 30, delay=SLOW))

    seen = chromium.run(browse_jobs, chromium.browser, service.public, email, done_id, slow_id)
    assert "completed" in seen["done_row"] and "6 / 6" in seen["done_row"]
    assert seen["progress"] == "6"
    assert seen["slow_status"] in ("queued", "running")
    assert seen["status"] == "completed"
    assert seen["title"] == "Page 0"
    assert seen["json_hidden"] and seen["json_shown"]
    assert json.loads(seen["json"])["url"] == urls[0]
    assert seen["after_cancel"] == "cancelled" and seen["cancel_left"] == 0
    assert api_job(service, key, slow_id)["status"] == "cancelled"
    assert seen["errors"] == []  # the CSP refused nothing the page needs
