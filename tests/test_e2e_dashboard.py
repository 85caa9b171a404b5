"""End to end: the dashboard in the real Chromium (Playwright), against the real service on a
real port with the demo payment provider.

Screenshots of the main pages, at a desktop and at a phone width, go to tests/artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import call
from service.billing import accounts as accounts_module
from service.billing.passwords import hash_password
from tests.dashboard_client import (
    ARTIFACTS,
    PAGES,
    PASSWORD,
    UNAUTHORIZED,
    BrowserThread,
    PublicService,
    grant,
    new_email,
)

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
KEY = re.compile(r"^spy_[0-9A-Za-z]{38}$")


@pytest.fixture(scope="module")
def shop(database_url, tmp_path_factory) -> Iterator[PublicService]:
    service = PublicService.start(
        database_url, tmp_path_factory.mktemp("dashboard"), SCRAPESPY_PAYMENTS="demo"
    )
    yield service
    service.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[BrowserThread]:
    browser = BrowserThread().start()
    yield browser
    browser.stop()


def number(text: str) -> int:
    return int(text.replace("\u202f", "").replace(",", "").strip())


# browser steps: each runs on the browser's thread ----------------------------------------------


def open_page(
    browser: Any, public: str, viewport: dict[str, int], state: Any = None, **options: Any
) -> Any:
    context = browser.new_context(viewport=viewport, storage_state=state, **options)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=public)
    page = context.new_page()
    page.set_default_timeout(20_000)
    return page


def snap(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def sign_up(page: Any, public: str, email: str) -> None:
    page.goto(public + "/")
    assert page.url == public + "/dashboard/login"
    page.get_by_role("link", name="Sign up").click()
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=password_confirm]", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(public + "/dashboard")


def figures(page: Any, public: str) -> dict[str, str]:
    page.goto(public + "/dashboard")
    shown = {}
    for name in ("balance", "available", "held", "trials", "key-prefix"):
        locator = page.locator(f"#{name}")
        if locator.count():
            shown[name] = locator.inner_text()
    return shown


def make_key(page: Any, public: str, button: str, shot: str) -> tuple[str, str, str]:
    """Press Create/Regenerate; returns (key shown, key copied by the button, warning).
    Then reloads the page, as someone unsure would: the key is not shown again."""
    page.goto(public + "/dashboard")
    page.get_by_role("navigation").get_by_role("link", name="API key").click()
    page.get_by_role("button", name=button).click()
    page.wait_for_selector("#new-key")
    shown = page.inner_text("#new-key")
    warning = page.inner_text(".notice.warning")
    snap(page, shot)
    page.get_by_role("button", name="Copy").click()
    page.wait_for_selector("text=Copied to the clipboard.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert page.url == public + "/dashboard/key/new"
    page.reload()
    assert page.locator("#new-key").count() == 0 and shown not in page.content()
    assert "already shown" in page.inner_text("#already-shown")
    assert page.get_by_role("button", name="Regenerate key").count() == 1
    return shown, copied, warning


def try_outputs(page: Any, public: str, key: str, url: str) -> dict[str, Any]:
    """Try a js scrape that asks for markdown of the main content and a screenshot."""
    page.goto(public + "/dashboard/try")
    page.fill("input[name=api_key]", key)
    page.fill("input[name=url]", url)
    page.select_option("select[name=engine]", "js")
    for box in ("format_markdown", "format_screenshot", "only_main_content"):
        page.check(f"input[name={box}]")
    page.get_by_role("button", name="Scrape").click()
    page.wait_for_selector("#result")
    snap(page, "try-it-outputs")
    image = page.locator("#result-screenshot")
    return {
        "status": page.inner_text("#result-status"),
        "cost": page.inner_text("#result-cost"),
        "json": page.inner_text("#result-json"),
        "markdown": page.inner_html("#result-markdown"),
        "image": image.evaluate("img => [img.complete, img.naturalWidth, img.naturalHeight]"),
        "ticked": page.is_checked("input[name=format_markdown]"),
    }


def usage_rows(page: Any, public: str) -> list[list[str]]:
    page.goto(public + "/dashboard/usage")
    snap(page, "usage")
    return [row.locator("td").all_inner_texts() for row in page.locator("#usage tbody tr").all()]


def ledger_rows(page: Any, public: str) -> list[list[str]]:
    page.goto(public + "/dashboard/ledger")
    snap(page, "ledger")
    return [row.locator("td").all_inner_texts() for row in page.locator("#ledger tbody tr").all()]


def try_it(page: Any, public: str, key: str, url: str) -> dict[str, Any]:
    page.goto(public + "/dashboard/try")
    page.fill("input[name=api_key]", key)
    page.fill("input[name=url]", url)
    page.fill("textarea[name=selectors]", "heading = h1::text")
    page.get_by_role("button", name="Scrape").click()
    page.wait_for_selector("#result")
    snap(page, "try-it")
    return {
        "status": page.inner_text("#result-status"),
        "cost": page.inner_text("#result-cost"),
        "balance": page.inner_text("#result-balance"),
        "json": page.inner_text("#result-json"),
        "key_field": page.input_value("input[name=api_key]"),
        "html": page.content(),
    }


def buy_pack(page: Any, public: str, pack: str) -> dict[str, str]:
    page.goto(public + "/dashboard/credits")
    snap(page, "credits")
    page.get_by_role("button", name=f"Buy {pack} EUR").click()
    page.wait_for_url(re.compile(r".*/payments/demo/checkout/demo_[\w-]+$"))
    checkout = page.url
    snap(page, "demo-checkout")
    page.get_by_role("button", name="Confirm payment").click()
    page.wait_for_url(re.compile(r".*/dashboard/credits/return\?session_id=demo_[\w-]+$"))
    snap(page, "purchase-return")
    return {
        "checkout": checkout,
        "return": page.url,
        "status": page.get_attribute("#purchase-status", "data-status"),
        "message": page.inner_text("#purchase-status"),
        "balance": page.inner_text("#balance"),
    }


def every_page(page: Any, public: str, extra: list[str]) -> dict[str, str]:
    seen = {}
    for path in [f"/dashboard{p}" for p in PAGES] + extra:
        page.goto(public + path)
        seen[path] = page.content()
    seen["/dashboard/usage.csv"] = page.context.request.get(public + "/dashboard/usage.csv").text()
    return seen


def phone_pages(page: Any, public: str) -> dict[str, int]:
    """Screenshots at a phone's width; returns how far each page overflows it sideways."""
    overflow = {}
    for path, name in [
        ("", "overview"),
        ("/usage", "usage"),
        ("/key", "key"),
        ("/credits", "credits"),
    ]:
        page.goto(public + "/dashboard" + path)
        snap(page, f"phone-{name}")
        overflow[name] = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    return overflow


def storage_state(page: Any) -> Any:
    return page.context.storage_state()


# the journey -----------------------------------------------------------------------------------


def test_a_user_signs_up_makes_a_key_scrapes_regenerates_and_buys_credits(
    chromium, shop, site, accounts
):
    run, public = chromium.run, shop.public
    email = new_email("journey")
    page = run(open_page, chromium.browser, public, DESKTOP)

    run(sign_up, page, public, email)
    assert run(figures, page, public) == {
        "balance": "0",
        "available": "0",
        "held": "0",
        "trials": "10",
    }
    run(snap, page, "overview-new-account")

    shown, copied, warning = run(make_key, page, public, "Create key", "key-created")
    assert KEY.match(shown) and copied == shown
    assert "only time it is shown" in warning
    key = copied
    assert run(figures, page, public)["key-prefix"] == key[:12] + "…"

    account_id = grant(accounts, email, 100)
    reply = call("POST", shop.process.url("/scrape"), {"url": site.url("/article")}, key=key)
    assert reply.status == 200 and reply.json["success"] is True, reply.body
    assert number(run(figures, page, public)["balance"]) == 99
    run(snap, page, "overview")

    rows = run(usage_rows, page, public)
    assert len(rows) == 1
    when, url, engine, asked, used, status, success, blocked, elapsed, credits = rows[0]
    assert (url, engine, asked, used, status) == (
        site.url("/article"),
        "static",
        "none",
        "none",
        "200",
    )
    assert (success, blocked, credits) == ("yes", "no", "1")
    assert number(elapsed) == reply.json["elapsed_ms"]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", when)

    tried = run(try_it, page, public, key, site.url("/article"))
    assert tried["status"] == "200" and tried["cost"] == "Charged: 1 credit."
    assert number(tried["balance"]) == 98
    assert '"title": "The Article"' in tried["json"] and '"Main heading"' in tried["json"]
    assert tried["key_field"] == "" and key not in tried["html"]

    entries = run(ledger_rows, page, public)
    assert [(kind, amount, after) for _, kind, amount, after, _ in entries] == [
        ("scrape", "−1", "98"),
        ("scrape", "−1", "99"),
        ("grant", "+100", "100"),
    ]

    shown, new_key, warning = run(make_key, page, public, "Regenerate key", "key-regenerated")
    assert KEY.match(new_key) and new_key == shown and new_key != key
    assert "previous key has stopped working" in warning
    assert (
        call(
            "POST", shop.process.url("/scrape"), {"url": site.url("/article")}, key=key
        ).error_answer
        == UNAUTHORIZED
    )
    again = call("POST", shop.process.url("/scrape"), {"url": site.url("/article")}, key=new_key)
    assert again.status == 200 and again.json["success"] is True

    bought = run(buy_pack, page, public, "10")
    assert bought["checkout"].startswith(public + "/payments/demo/checkout/demo_")
    assert bought["status"] == "paid"
    assert "10\u202f000 credits have arrived" in bought["message"]
    assert number(bought["balance"]) == 97 + 10_000
    assert number(run(figures, page, public)["balance"]) == 10_097
    assert accounts.summary(account_id)["balance"] == 10_097
    assert accounts.entries_sum(account_id) == 10_097

    # neither key is on any page now, the purchase's return page and the CSV included
    seen = run(every_page, page, public, [bought["return"].removeprefix(public)])
    assert len(seen) == len(PAGES) + 2
    for path, html in seen.items():
        assert key not in html and new_key not in html, path
        assert key[4:20] not in html and new_key[4:20] not in html, path
    assert site.url("/article") in seen["/dashboard/usage.csv"]

    phone = run(
        open_page,
        chromium.browser,
        public,
        PHONE,
        run(storage_state, page),
        is_mobile=True,
        has_touch=True,
    )
    overflow = run(phone_pages, phone, public)
    assert overflow == {"overview": 0, "usage": 0, "key": 0, "credits": 0}


def without_javascript(page: Any, public: str, email: str, site_url: str) -> dict[str, Any]:
    """Log in, make a key, try a scrape and buy a pack with scripts switched off."""
    page.goto(public + "/dashboard/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(public + "/dashboard")
    page.goto(public + "/dashboard/key")
    page.get_by_role("button", name="Create key").click()
    key = page.inner_text("#new-key")
    copy_hidden = page.locator("button[data-copy]").is_hidden()
    page.goto(public + "/dashboard/try")
    page.fill("input[name=api_key]", key)
    page.fill("input[name=url]", site_url)
    page.get_by_role("button", name="Scrape").click()
    cost = page.inner_text("#result-cost")
    page.goto(public + "/dashboard/credits")
    page.get_by_role("button", name="Buy 50 EUR").click()
    page.get_by_role("button", name="Confirm payment").click()
    page.wait_for_url(re.compile(r".*/dashboard/credits/return\?session_id=demo_[\w-]+$"))
    status = page.get_attribute("#purchase-status", "data-status")
    page.goto(public + "/dashboard/usage")
    bars = page.locator("svg.chart rect.charged").count()
    return {"key": key, "copy_hidden": copy_hidden, "cost": cost, "status": status, "bars": bars}


def test_the_dashboard_works_without_javascript(chromium, shop, site, accounts):
    email = new_email("nojs")
    account_id = accounts.database.run_sync(
        accounts_module.create, email, trials=10, password_hash=hash_password(PASSWORD)
    )
    grant(accounts, email, 10)
    page = chromium.run(
        open_page, chromium.browser, shop.public, DESKTOP, java_script_enabled=False
    )
    done = chromium.run(without_javascript, page, shop.public, email, site.url("/article"))
    assert KEY.match(done["key"]) and done["copy_hidden"]  # the copy button needs a script
    assert done["cost"] == "Charged: 1 credit."
    assert done["status"] == "paid" and done["bars"] == 30
    assert accounts.summary(account_id)["balance"] == 10 - 1 + 50_000


def test_try_it_renders_the_markdown_and_shows_the_screenshot(chromium, shop, site, accounts):
    run, public = chromium.run, shop.public
    email = new_email("outputs")
    page = run(open_page, chromium.browser, public, DESKTOP)
    run(sign_up, page, public, email)
    _, key, _ = run(make_key, page, public, "Create key", "key-for-outputs")
    grant(accounts, email, 100)

    tried = run(try_outputs, page, public, key, site.url("/article"))
    assert tried["status"] == "200" and tried["cost"] == "Charged: 5 credits."
    # rendered, not shown as source: a heading and a list, links made absolute
    assert tried["markdown"].startswith("<h1>Main heading</h1>")
    assert "<h2>First section</h2>" in tried["markdown"]
    assert "<li>One</li>" in tried["markdown"]
    assert "# First section" not in tried["markdown"]
    assert "script text must not appear" not in tried["markdown"]
    assert tried["image"] == [True, 1366, 654]  # the desktop identity's page
    assert "a base64 PNG of" in tried["json"] and '"markdown":' in tried["json"]
    assert tried["ticked"] is True
