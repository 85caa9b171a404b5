"""End to end: ``GET /docs`` from the real service behind its public address, over HTTP and in the
real Chromium, and its examples pasted into bash (curl) and Python against the same service.

The service runs with prices of its own (so the page must show the running configuration's, not
the defaults) and the demo payment provider (so the purchase example answers a checkout URL).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from parsel import Selector

from harness.search_backends import Hit, SearchStandIn
from harness.service import ROOT, Accounts, call
from harness.site import TargetSite
from service.core.errors import ERROR_CODES
from service.reference.examples import JOB_ID, KEY, NOT_CALLED_BY_USERS, TARGET
from service.reference.page import METHODS, anchor_of
from tests.conftest import a_database_of_its_own
from tests.dashboard_client import BrowserThread, PublicService, member

PRICES = {
    "SCRAPESPY_COST_STATIC_NONE": "3",
    "SCRAPESPY_COST_STATIC_DATACENTER": "4",
    "SCRAPESPY_COST_STATIC_RESIDENTIAL": "12",
    "SCRAPESPY_COST_JS_NONE": "7",
    "SCRAPESPY_COST_JS_DATACENTER": "9",
    "SCRAPESPY_COST_JS_RESIDENTIAL": "30",
    "SCRAPESPY_MAP_CREDITS": "2",
}
URL = re.compile(r"https?://[^\s\"'<>)\]]+")
HOME = """<!doctype html><html><head><title>Home of the docs test</title></head><body>
<main><h1>Welcome to the docs test</h1><p>A page the examples scrape.</p>
<a href="/about">About us</a></main></body></html>"""
ABOUT = """<!doctype html><html><head><title>About the docs test</title></head><body>
<main><h1>About us</h1><p>Made for the examples.</p><a href="/">Home</a></main></body></html>"""
FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")
# TOC entries clicked in the browser: each must bring its section to the top of the window
JUMPS = ["post-scrape", "get-jobs-job_id", "get-account", "prices", "error-codes"]


@pytest.fixture(scope="module")
def docs_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    """The examples run jobs: on a database of their own, no instance of other tests (at the
    default prices) takes their pages."""
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("docs-db"))


@pytest.fixture(scope="module")
def accounts(docs_db: tuple[str, Accounts]) -> Accounts:
    return docs_db[1]


@pytest.fixture(scope="module")
def target() -> Iterator[TargetSite]:
    site = TargetSite()
    site.page("/", HOME)
    site.page("/about", ABOUT)
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def backend(target: TargetSite) -> Iterator[SearchStandIn]:
    """The search example's backend: a SearXNG whose results are the target's two pages."""
    web = [Hit(target.url("/"), "Home"), Hit(target.url("/about"), "About")]
    stand_in = SearchStandIn("searxng", {"web": web}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def service(
    docs_db: tuple[str, Accounts],
    tmp_path_factory: pytest.TempPathFactory,
    backend: SearchStandIn,
) -> Iterator[PublicService]:
    started = PublicService.start(
        docs_db[0],
        tmp_path_factory.mktemp("docs"),
        SCRAPESPY_PAYMENTS="demo",
        **backend.env(),
        **PRICES,
    )
    yield started
    started.stop()


def operations(service: PublicService) -> list[tuple[str, str]]:
    paths = call("GET", service.url("/openapi.json")).json["paths"]
    return [(method, path) for path, item in paths.items() for method in METHODS if method in item]


# over HTTP --------------------------------------------------------------------------------------


def test_docs_is_a_cacheable_html_page_with_every_operation_code_and_price(service):
    reply = call("GET", service.url("/docs"))
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in reply.headers["Content-Security-Policy"]
    assert reply.headers["Cache-Control"] == "public, max-age=300"
    page = Selector(text=reply.body.decode())

    for method, path in operations(service):
        heading = " ".join(page.css(f"section#{anchor_of(method, path)} h3 ::text").getall())
        assert method.upper() in heading and path in heading, (method, path)
    for code in ERROR_CODES:
        assert page.css(f"tr#error-{code} code::text").get() == code

    prices = call("GET", service.url("/pricing")).json
    assert prices["costs"]["js"]["residential"] == 30  # the service's own prices, not defaults
    for engine, tiers in prices["costs"].items():
        for tier, credits in tiers.items():
            shown = page.css(f"#price-{engine}-{tier} .credits::text").get()
            assert shown == str(credits), (engine, tier)
    assert page.css("#credits-per-euro::text").get() == f"{prices['credits_per_euro']:,}".replace(
        ",", "\u202f"
    )
    for pack in prices["packs"]:
        assert page.css(f"#pack-{pack} strong::text").get() == pack
    assert page.css("#min-amount::text").get() == str(prices["min_amount_eur"])
    assert page.css("#price-map::text").get() == "2"
    assert page.css("#price-search::text").get() == str(prices["search"]["credits"]) == "1"
    assert page.css("#search-backend::text").get() == "searxng"

    for url in URL.findall(reply.body.decode()):
        assert url.startswith(service.public) or url.startswith(TARGET), url

    again = call("GET", service.url("/docs"), headers={"If-None-Match": reply.headers["ETag"]})
    assert again.status == 304 and again.body == b""


def test_the_pages_assets_are_served_by_the_service_and_cached(service):
    page = Selector(text=call("GET", service.url("/docs")).body.decode())
    assets = page.css("link::attr(href), script::attr(src)").getall()
    assert len(assets) == 3
    types = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
    for address in assets:
        assert address.startswith("/docs/static/")
        reply = call("GET", service.url(address))
        assert reply.status == 200, address
        suffix = re.search(r"\.\w+(?=\?)", address)
        assert suffix and reply.headers["Content-Type"].startswith(types[suffix.group(0)])
        assert reply.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    missing = call("GET", service.url("/docs/static/nothing.js"))
    assert missing.status == 404 and missing.headers["X-Error-Code"] == "not_found"
    slash = call("GET", service.url("/docs/"))
    assert slash.status == 200  # urllib follows the 301 to /docs


def test_the_dashboard_links_to_the_reference(service, accounts):
    signed_out = call("GET", service.url("/dashboard/login")).body.decode()
    assert '<a href="/docs">API reference</a>' in signed_out
    client, _, _ = member(service.public, accounts, "docslink")
    nav = re.search(
        r"<nav aria-label=\"Dashboard\">.*?</nav>", client.get("/dashboard").body.decode(), re.S
    )
    assert nav and 'href="/docs"' in nav.group(0)


# in the browser ----------------------------------------------------------------------------------


def read_docs(browser: Any, public: str) -> dict[str, Any]:
    """Open /docs; what it shows, what went wrong on the way, the TOC's jumps and the examples."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=public)
    page = context.new_page()
    page.set_default_timeout(20_000)
    seen: dict[str, Any] = {"problems": []}
    problems = seen["problems"]
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))
    page.on(
        "response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    page.goto(public + "/docs")
    page.wait_for_load_state("load")
    seen["h1"] = page.locator("h1").inner_text()
    seen["h1_visible"] = page.locator("h1").is_visible()
    seen["sections"] = {
        section.get_attribute("id"): (section.locator("h3").inner_text(), section.is_visible())
        for section in page.locator("section.endpoint").all()
    }
    seen["jumps"] = {}
    for anchor in JUMPS:
        page.locator(f"nav.toc a[href='#{anchor}']").click()
        page.wait_for_url(f"{public}/docs#{anchor}")
        seen["jumps"][anchor] = page.evaluate(
            f"[document.getElementById('{anchor}').getBoundingClientRect().top, window.scrollY]"
        )
    seen["examples"] = {
        code.get_attribute("id"): code.inner_text() for code in page.locator("pre code[id]").all()
    }
    page.locator("#post-scrape").scroll_into_view_if_needed()
    button = page.locator("button[data-copy='#post-scrape-curl']")
    seen["copy_visible"] = button.is_visible()
    button.click()
    page.wait_for_selector("button[data-copy='#post-scrape-curl']:has-text('Copied')")
    seen["copied"] = page.evaluate("navigator.clipboard.readText()")
    context.close()
    return seen


def paste(example: str, key: str, site: TargetSite, job_id: str = "") -> Any:
    """Run an example as a reader would after replacing its placeholders."""
    text = example.replace(KEY, key).replace(TARGET, site.base)
    if job_id:
        text = text.replace(JOB_ID, job_id)
    assert KEY not in text and TARGET not in text and JOB_ID not in text
    if text.startswith("curl "):
        run = subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=90)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)
    run = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    return run.stdout


def wait_job(example: str, key: str, site: TargetSite, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while (job := paste(example, key, site, job_id))["status"] not in FINISHED:
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    found: dict[str, Any] = job
    return found


@pytest.fixture(scope="module")
def chromium() -> Iterator[BrowserThread]:
    browser = BrowserThread().start()
    yield browser
    browser.stop()


@pytest.fixture(scope="module")
def shown(service: PublicService, chromium: BrowserThread) -> dict[str, Any]:
    return chromium.run(read_docs, chromium.browser, service.public)


@pytest.mark.browser
def test_in_chromium_the_page_renders_whole_and_its_contents_jump(service, shown):
    assert shown["problems"] == []
    assert shown["h1"] == "scrapespy API reference" and shown["h1_visible"]
    for method, path in operations(service):
        heading, visible = shown["sections"][anchor_of(method, path)]
        assert heading.split() == [method.upper(), path] and visible, (method, path)
    for anchor, (top, scrolled) in shown["jumps"].items():
        assert scrolled > 0 and 0 <= top <= 80, (anchor, top)
    assert shown["copy_visible"]
    assert shown["copied"].strip() == shown["examples"]["post-scrape-curl"].strip()


@pytest.mark.browser
def test_the_curl_examples_work_when_pasted(service, accounts: Accounts, target, shown):
    account_id, key = accounts.create(credits=1000)
    examples = shown["examples"]
    for method, path in operations(service):
        if (method, path) not in NOT_CALLED_BY_USERS:
            anchor = anchor_of(method, path)
            assert f"{anchor}-curl" in examples and f"{anchor}-python" in examples

    scraped = paste(examples["post-scrape-curl"], key, target)
    assert scraped["success"] is True and scraped["credits_charged"] == 3
    assert "Welcome to the docs test" in scraped["markdown"]

    batch = paste(examples["post-batch-curl"], key, target)
    assert set(batch) == {"id", "status_url"}
    job = wait_job(examples["get-jobs-job_id-curl"], key, target, batch["id"])
    assert job["status"] == "completed" and job["counts"]["done"] == 2
    assert job["credits_charged"] == 6
    assert {r["result"]["title"] for r in job["results"]} == {
        "Home of the docs test",
        "About the docs test",
    }
    listed = paste(examples["get-jobs-curl"], key, target)
    assert batch["id"] in [item["id"] for item in listed["items"]]
    cancelled = paste(examples["delete-jobs-job_id-curl"], key, target, batch["id"])
    assert cancelled["id"] == batch["id"] and cancelled["status"] == "completed"

    crawl = paste(examples["post-crawl-curl"], key, target)
    crawled = wait_job(examples["get-jobs-job_id-curl"], key, target, crawl["id"])
    assert crawled["status"] == "completed" and crawled["kind"] == "crawl"
    assert crawled["counts"]["done"] == 2

    mapped = paste(examples["post-map-curl"], key, target)
    assert target.url("/about") in mapped["urls"] and mapped["error"] is None

    account = paste(examples["get-account-curl"], key, target)
    assert account["account_id"] == account_id
    assert account["balance"] == accounts.entries_sum(account_id) == 1000 - 3 - 6 - 6 - 2
    usage = paste(examples["get-usage-curl"], key, target)
    assert target.url("/") in [row["url"] for row in usage["items"]]
    ledger = paste(examples["get-ledger-curl"], key, target)
    assert "scrape" in [entry["kind"] for entry in ledger["items"]]

    assert (
        paste(examples["get-pricing-curl"], key, target)
        == call("GET", service.url("/pricing")).json
    )
    assert paste(examples["get-healthz-curl"], key, target) == {"status": "ok"}
    bought = paste(examples["post-credits-buy-curl"], key, target)
    assert bought["url"].startswith(service.public + "/payments/demo/checkout/")

    before = accounts.entries_sum(account_id)
    found = paste(examples["post-search-curl"], key, target)
    assert [item["url"] for item in found["web"]] == [target.url("/"), target.url("/about")]
    assert "Welcome to the docs test" in found["web"][0]["page"]["markdown"]
    assert found["credits_charged"] == 1 + 2 * 3  # the search's price, two static pages
    assert accounts.entries_sum(account_id) == before - found["credits_charged"]


@pytest.mark.browser
def test_the_python_examples_work_when_pasted(service, accounts: Accounts, target, shown):
    if not (ROOT / "clients" / "python").is_dir():
        pytest.skip("the Python client (clients/python) is not in this checkout yet")
    account_id, key = accounts.create(credits=1000)
    examples = shown["examples"]

    def run(anchor: str, job_id: str = "") -> str:
        printed: str = paste(examples[f"{anchor}-python"], key, target, job_id)
        return printed

    scraped = run("post-scrape")
    assert scraped.startswith("3 ") and "# Welcome to the docs test" in scraped
    batch = run("post-batch").splitlines()
    assert sorted(batch) == [
        f"{target.url('/')} Home of the docs test",
        f"{target.url('/about')} About the docs test",
    ]
    assert run("post-crawl").startswith("completed ")
    mapped = run("post-map")
    assert mapped.startswith("2 ") and target.url("/about") in mapped

    job_id = call("POST", service.url("/batch"), {"urls": [target.url("/")]}, key=key).json["id"]
    assert run("delete-jobs-job_id", job_id).strip() in ("cancelled", "completed")
    assert run("get-jobs-job_id", job_id).split()[0] in ("cancelled", "completed")
    jobs = run("get-jobs").splitlines()
    assert len(jobs) == 3 and jobs[0].startswith(f"{job_id} batch ")

    balance = accounts.entries_sum(account_id)
    assert balance == 1000 - 3 - 6 - 6 - 2 - jobs_charged(service, key, job_id)
    assert run("get-account").split()[0] == str(balance)
    assert target.url("/about") in run("get-usage")
    assert " scrape -3 " in run("get-ledger")
    assert str(call("GET", service.url("/pricing")).json) == run("get-pricing").strip()
    assert run("get-healthz").strip() == "{'status': 'ok'}"
    assert run("post-credits-buy").startswith(f"pay at {service.public}/payments/demo/checkout/")
    assert run("post-search").splitlines() == [
        f"1 {target.url('/')} 3",
        f"2 {target.url('/about')} 3",
        "7",
    ]


def jobs_charged(service: PublicService, key: str, job_id: str) -> int:
    charged: int = call("GET", service.url(f"/jobs/{job_id}"), key=key).json["credits_charged"]
    return charged
