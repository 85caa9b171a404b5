"""End to end: several API keys per account, against the real service. Two keys on one account,
one capped: the capped one gets a 402 that names its cap once its month's spending reaches it,
and the other scrapes on; a revoked key is a 401. The keys page in the real Chromium (create,
label, cap, revoke, the new key shown once), its forms' checks over plain HTTP, and the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import SCRAPESPY, call
from service.billing import keys
from tests.dashboard_client import (
    ARTIFACTS,
    NEW_KEY,
    PASSWORD,
    UNAUTHORIZED,
    BrowserThread,
    PublicService,
    member,
    text_of,
)

pytestmark = pytest.mark.long(minutes=1)

KEY = re.compile(r"^spy_[0-9A-Za-z]{38}$")
WHEN = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


@pytest.fixture(scope="module")
def shop(database_url, tmp_path_factory) -> Iterator[PublicService]:
    service = PublicService.start(database_url, tmp_path_factory.mktemp("keys"))
    yield service
    service.stop()


def scrape(shop: PublicService, key: str, url: str) -> Any:
    return call("POST", shop.process.url("/scrape"), {"url": url}, key=key)


def cap_refusal(cap: int, spent: int, cost: int) -> tuple[dict[str, str], str]:
    return (
        {
            "error": f"this API key's monthly cap of {cap} credits is reached ({spent} spent or "
            f"held this month; this request costs {cost}); raise or remove the cap on the "
            "dashboard's API key page, or wait for next month (UTC)"
        },
        "key_cap_reached",
    )


def test_a_cap_stops_its_key_and_not_its_sibling_and_a_revoked_key_is_refused(shop, accounts, site):
    account_id, _ = accounts.create(credits=50)
    run = accounts.database.run_sync
    capped = run(keys.create, account_id, label="capped", cap=3)
    sibling = run(keys.create, account_id, label="sibling")
    article = site.url("/article")

    for _ in range(3):
        reply = scrape(shop, capped, article)
        assert reply.status == 200 and reply.json["success"] is True, reply.body
    fetched = site.count("/article")
    refused = scrape(shop, capped, article)
    assert refused.status == 402 and refused.error_answer == cap_refusal(3, 3, 1)
    assert site.count("/article") == fetched  # nothing fetched
    assert accounts.summary(account_id)["held"] == 0  # nothing held

    for _ in range(2):
        assert scrape(shop, sibling, article).status == 200  # the sibling scrapes on
    assert scrape(shop, capped, article).status == 402
    assert accounts.summary(account_id)["balance"] == 50 - 3 - 2

    spent = {k.label: k.spent_this_month for k in run(keys.listed, account_id)}
    assert spent["capped"] == 3 and spent["sibling"] == 2

    run(keys.set_cap, account_id, run(keys.find, account_id, capped[:12]), 4)
    assert scrape(shop, capped, article).status == 200  # a raised cap: one more credit

    run(keys.revoke, account_id, run(keys.find, account_id, sibling[:12]))
    fetched = site.count("/article")
    gone = scrape(shop, sibling, article)
    assert gone.status == 401 and gone.error_answer == UNAUTHORIZED
    assert site.count("/article") == fetched
    assert accounts.summary(account_id)["balance"] == 50 - 4 - 2


def test_the_only_key_regenerated_works_as_before(shop, accounts, site):
    account_id, old = accounts.create(credits=5)
    new = accounts.database.run_sync(keys.regenerate, account_id)
    assert scrape(shop, old, site.url("/article")).status == 401
    assert scrape(shop, new, site.url("/article")).status == 200


# the keys page's forms over plain HTTP ------------------------------------------------------


def keys_page(client: Any) -> str:
    reply = client.get("/dashboard/key")
    assert reply.status == 200
    return reply.body.decode()


def key_ids(html: str) -> list[int]:
    return [int(found) for found in re.findall(r'<tr id="key-(\d+)">', html)]


def test_the_key_forms_need_their_csrf_token_and_touch_only_the_accounts_keys(shop, accounts):
    client, account_id, _ = member(shop.public, accounts, "keyforms")
    csrf = client.csrf_token()
    made = client.post("/dashboard/keys", {"csrf_token": csrf, "label": "mine-first", "cap": "9"})
    assert made.status == 303 and made.headers["Location"] == "/dashboard/key/new"
    key = NEW_KEY.search(client.get("/dashboard/key/new").body.decode()).group(1)
    (key_id,) = key_ids(keys_page(client))

    for path, fields in (
        ("/dashboard/keys", {"label": "two"}),
        ("/dashboard/key/label", {"key_id": str(key_id), "label": "renamed"}),
        ("/dashboard/key/cap", {"key_id": str(key_id), "remove": "1"}),
        ("/dashboard/key/revoke", {"key_id": str(key_id)}),
    ):
        for token in ({}, {"csrf_token": "forged"}):
            refused = client.post(path, {**fields, **token})
            assert refused.status == 403, path
    (info,) = accounts.database.run_sync(keys.listed, account_id)
    assert (info.label, info.monthly_cap) == ("mine-first", 9)

    bad = client.post(
        "/dashboard/key/cap", {"csrf_token": csrf, "key_id": str(key_id), "cap": "-1"}
    )
    assert bad.status == 400 and "monthly cap: a whole number of credits" in text_of(bad)
    long = client.post("/dashboard/keys", {"csrf_token": csrf, "label": "x" * 101})
    assert long.status == 400 and "label: at most 100 characters" in text_of(long)

    other, other_id, _ = member(shop.public, accounts, "keyforms-other")
    theirs = accounts.database.run_sync(keys.create, other_id, label="theirs-only")
    their_id = accounts.database.run_sync(keys.find, other_id, theirs[:12])
    for path, fields in (
        ("/dashboard/key/label", {"label": "mine"}),
        ("/dashboard/key/cap", {"cap": "0"}),
        ("/dashboard/key/revoke", {}),
        ("/dashboard/key", {}),
    ):
        reply = client.post(path, {"csrf_token": csrf, "key_id": str(their_id), **fields})
        assert reply.status == 404, path
        assert "no such API key on this account" in text_of(reply)
    (their_info,) = accounts.database.run_sync(keys.listed, other_id)
    assert (their_info.label, their_info.monthly_cap) == ("theirs-only", None)
    assert accounts.database.run_sync(keys.authenticate, theirs) is not None
    assert "theirs-only" not in keys_page(client) and "mine-first" not in keys_page(other)
    assert accounts.database.run_sync(keys.authenticate, key) is not None

    # with two keys, "Regenerate" must say which
    client.post("/dashboard/keys", {"csrf_token": csrf, "label": "two"})
    which = client.post("/dashboard/key", {"csrf_token": csrf})
    assert which.status == 400 and "say which one to regenerate" in text_of(which)
    assert accounts.database.run_sync(keys.authenticate, key) is not None


# the keys page in the real Chromium ---------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[BrowserThread]:
    browser = BrowserThread().start()
    yield browser
    browser.stop()


def log_in(browser: Any, public: str, email: str) -> Any:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(20_000)
    page.goto(public + "/dashboard/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(public + "/dashboard")
    return page


def create_key(page: Any, public: str, label: str, cap: str) -> str:
    """The "Create key" form with a label and a cap; the new key is shown once."""
    page.goto(public + "/dashboard/key")
    form = page.locator("#new-key-form")
    form.locator("input[name=label]").fill(label)
    form.locator("input[name=cap]").fill(cap)
    form.get_by_role("button", name="Create key").click()
    page.wait_for_selector("#new-key")
    key = page.inner_text("#new-key")
    page.reload()
    assert page.locator("#new-key").count() == 0 and key not in page.content()
    return key


def listed_keys(page: Any, public: str) -> dict[str, dict[str, str]]:
    """The keys table as shown, by label."""
    page.goto(public + "/dashboard/key")
    shown = {}
    for row in page.locator("#keys tbody tr").all():
        label, prefix, created, used, cap, spent = row.locator("td").all_inner_texts()
        shown[label] = {"prefix": prefix, "created": created, "used": used, "cap": cap}
        shown[label]["spent"] = spent
        shown[label]["id"] = row.get_attribute("id").removeprefix("key-")
    return shown


def phone_overflow(browser: Any, public: str, desktop: Any) -> int:
    """The keys page at a phone's width, signed in as ``desktop``; how far it overflows
    sideways. Screenshots of both go to tests/artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    desktop.goto(public + "/dashboard/key")
    desktop.screenshot(path=str(ARTIFACTS / "dashboard-keys.png"), full_page=True)
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        storage_state=desktop.context.storage_state(),
        is_mobile=True,
        has_touch=True,
    )
    page = context.new_page()
    page.goto(public + "/dashboard/key")
    page.screenshot(path=str(ARTIFACTS / "dashboard-phone-keys.png"), full_page=True)
    overflow: int = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    context.close()
    return overflow


def in_card(page: Any, public: str, key_id: str, button: str, **fields: str) -> str:
    """Fill a key's card's fields and press one of its buttons; returns the page's text."""
    page.goto(public + "/dashboard/key")
    card = page.locator(f"#manage-{key_id}")
    for name, value in fields.items():
        card.locator(f"input[name={name}]").fill(value)
    card.get_by_role("button", name=button, exact=True).click()
    page.wait_for_load_state()
    return page.inner_text("main")


@pytest.mark.browser
def test_keys_are_made_labelled_capped_and_revoked_on_the_dashboard(chromium, shop, accounts, site):
    run, public = chromium.run, shop.public
    _, account_id, email = member(shop.public, accounts, "keysui", credits=100)
    page = run(log_in, chromium.browser, public, email)

    crawler = run(create_key, page, public, "crawler", "2")
    laptop = run(create_key, page, public, "laptop", "")
    assert KEY.match(crawler) and KEY.match(laptop) and crawler != laptop
    shown = run(listed_keys, page, public)
    assert set(shown) == {"crawler", "laptop"}
    assert (shown["crawler"]["cap"], shown["laptop"]["cap"]) == ("2", "none")
    assert shown["crawler"]["prefix"] == crawler[:12] + "…"
    assert shown["crawler"]["used"] == shown["laptop"]["used"] == "never"
    assert WHEN.match(shown["crawler"]["created"])

    article = site.url("/article")
    assert [scrape(shop, crawler, article).status for _ in range(2)] == [200, 200]
    refused = scrape(shop, crawler, article)
    assert refused.status == 402 and refused.error_answer == cap_refusal(2, 2, 1)
    assert scrape(shop, laptop, article).status == 200

    shown = run(listed_keys, page, public)
    assert WHEN.match(shown["crawler"]["used"]) and WHEN.match(shown["laptop"]["used"])
    assert (shown["crawler"]["spent"], shown["laptop"]["spent"]) == ("2", "1")
    assert run(phone_overflow, chromium.browser, public, page) == 0

    run(in_card, page, public, shown["crawler"]["id"], "Remove cap")
    assert scrape(shop, crawler, article).status == 200
    run(in_card, page, public, shown["laptop"]["id"], "Rename", label="old laptop")
    run(in_card, page, public, shown["laptop"]["id"], "Set cap", cap="1")
    shown = run(listed_keys, page, public)
    assert (shown["crawler"]["cap"], shown["old laptop"]["cap"]) == ("none", "1")
    assert scrape(shop, laptop, article).error_answer == cap_refusal(1, 1, 1)

    run(in_card, page, public, shown["old laptop"]["id"], "Revoke key")
    assert set(run(listed_keys, page, public)) == {"crawler"}
    assert scrape(shop, laptop, article).error_answer == UNAUTHORIZED
    assert scrape(shop, crawler, article).status == 200
    assert accounts.summary(account_id)["balance"] == 100 - 5


# the CLI ------------------------------------------------------------------------------------


def cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRAPESPY, *args],
        env={**os.environ, "SCRAPESPY_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_cli_creates_lists_caps_and_revokes_labelled_keys(shop, accounts, site, database_url):
    _, account_id, email = member(shop.public, accounts, "keyscli", credits=10)
    made = cli(database_url, "keys", "create", email, "--label", "nightly job", "--cap", "1")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert KEY.match(key)
    listed = cli(database_url, "key", "list", email, "--json")
    (shown,) = json.loads(listed.stdout)
    assert (shown["label"], shown["prefix"], shown["monthly_cap"]) == ("nightly job", key[:12], 1)
    assert shown["last_used_at"] is None and shown["spent_this_month"] == 0

    assert scrape(shop, key, site.url("/article")).status == 200
    assert scrape(shop, key, site.url("/article")).error_answer == cap_refusal(1, 1, 1)
    assert cli(database_url, "keys", "cap", email, key[:12], "none").returncode == 0
    assert scrape(shop, key, site.url("/article")).status == 200
    (shown,) = json.loads(cli(database_url, "keys", "list", email, "--json").stdout)
    assert shown["spent_this_month"] == 2 and shown["last_used_at"] is not None

    wrong = cli(database_url, "keys", "revoke", email, "spy_nothing")
    assert wrong.returncode == 1 and "no such API key" in wrong.stderr
    assert cli(database_url, "keys", "revoke", email, str(shown["id"])).returncode == 0
    assert scrape(shop, key, site.url("/article")).status == 401
    assert accounts.database.run_sync(keys.listed, account_id) == []


def test_cli_regenerate_keeps_its_one_key_behaviour_and_asks_which_of_several(
    shop, accounts, site, database_url
):
    _, _, email = member(shop.public, accounts, "keysregen", credits=10)

    def regenerate(*more: str) -> str:
        done = cli(database_url, "keys", "regenerate", email, *more)
        assert done.returncode == 0, done.stderr
        assert "the previous key no longer works" in done.stdout
        return done.stdout.strip().splitlines()[-1]

    first = regenerate()  # no key yet: the first
    second = regenerate()  # the only key: replaced
    assert scrape(shop, first, site.url("/article")).status == 401
    assert scrape(shop, second, site.url("/article")).status == 200

    other = cli(database_url, "keys", "create", email, "--label", "other").stdout.split()[-1]
    which = cli(database_url, "keys", "regenerate", email)
    assert which.returncode == 1 and "say which one to regenerate" in which.stderr
    third = regenerate("--key", other[:12])
    assert scrape(shop, other, site.url("/article")).status == 401
    assert scrape(shop, third, site.url("/article")).status == 200
    assert scrape(shop, second, site.url("/article")).status == 200
