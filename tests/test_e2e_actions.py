"""End to end for the js engine's steps: wait_for, actions, device, headers and cookies, asked
through ``POST /scrape`` of the real service, rendered in the real Chromium, on real local pages
(the pages of tests/test_browser_actions.py), and billed or not as the caller would see it."""

from __future__ import annotations

import base64

import pytest

from harness.service import Accounts
from harness.site import TargetSite
from tests.test_browser_actions import (
    COOKIE_WALL,
    INFINITE,
    LOAD_MORE,
    SEARCH,
    echo,
    phones_only,
    results,
)

pytestmark = [pytest.mark.browser, pytest.mark.engine]

JS_PRICE = 5
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/e2e-act/load-more", LOAD_MORE.replace("/act/more-items", "/e2e-act/more-items"))
    site.page("/e2e-act/more-items", '["item 3", "item 4"]', **{"Content-Type": "application/json"})
    site.page("/e2e-act/search", SEARCH.replace("/act/results", "/e2e-act/results"))
    site.routes["/e2e-act/results"] = results
    site.page("/e2e-act/infinite", INFINITE.replace("/act/more-items", "/e2e-act/more-items"))
    site.page("/e2e-act/cookie-wall", COOKIE_WALL)
    site.routes["/e2e-act/phones-only"] = phones_only
    site.routes["/e2e-act/echo"] = echo
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def js(url: str, **fields: object) -> dict[str, object]:
    return {"url": url, "engine": "js", "timeout": 15, **fields}


def test_load_more_then_wait_for_arrives_with_each_step_reported_and_billed_once(
    service, pages, accounts, paying
):
    account_id, key = paying
    reply = service.scrape(
        key,
        js(
            pages.url("/e2e-act/load-more"),
            actions=[
                {"type": "click", "selector": "#more"},
                {"type": "wait_for", "selector": "li:nth-child(4)"},
                {"type": "evaluate", "script": "document.querySelectorAll('li').length"},
                {"type": "screenshot"},
            ],
        ),
    )
    result = reply.json
    assert reply.status == 200 and result["success"] is True, result
    assert "item 4" in result["text"]
    steps = [(a["index"], a["type"], a["ok"]) for a in result["actions"]]
    assert steps == [
        (0, "click", True),
        (1, "wait_for", True),
        (2, "evaluate", True),
        (3, "screenshot", True),
    ]
    assert all(isinstance(a["elapsed_ms"], int) for a in result["actions"])
    evaluated, shot = result["action_results"]
    assert evaluated == {"index": 2, "type": "evaluate", "value": 4}
    assert shot["index"] == 3 and base64.b64decode(shot["screenshot"]).startswith(PNG_SIGNATURE)
    assert accounts.summary(account_id)["balance"] == 100 - JS_PRICE


def test_a_search_form_an_infinite_list_and_a_cookie_wall(service, pages, paying):
    _, key = paying
    searched = service.scrape(
        key,
        js(
            pages.url("/e2e-act/search"),
            actions=[
                {"type": "type", "selector": "#q", "text": "blue shoes"},
                {"type": "press", "key": "Enter"},
                {"type": "wait_for", "selector": "#found"},
            ],
            wait_for={"selector": "#q"},  # before the steps: the form is there
        ),
    ).json
    assert searched["success"] is True, searched
    assert searched["title"] == "Results" and "results for blue shoes" in searched["text"]

    scrolled = service.scrape(
        key,
        js(
            pages.url("/e2e-act/infinite"),
            actions=[
                {"type": "scroll", "to": "bottom"},
                {"type": "wait_for", "selector": "#row-20"},
            ],
        ),
    ).json
    assert scrolled["success"] is True and "row 20" in scrolled["text"], scrolled

    walled = service.scrape(
        key,
        js(pages.url("/e2e-act/cookie-wall"), actions=[{"type": "click", "selector": "#accept"}]),
    ).json
    assert walled["success"] is True and "the article itself" in walled["text"], walled
    assert "We use cookies" not in walled["text"]


def test_a_failed_step_is_named_listed_and_not_billed(service, pages, accounts, paying):
    account_id, key = paying
    reply = service.scrape(
        key,
        js(
            pages.url("/e2e-act/load-more"),
            timeout=5,
            actions=[
                {"type": "click", "selector": "#more"},
                {"type": "click", "selector": "#no-such-button"},
                {"type": "scroll", "to": "bottom"},
            ],
        ),
    )
    result = reply.json
    assert reply.status == 200 and result["success"] is False
    assert result["error"].startswith("action 1 (click) failed"), result["error"]
    assert [(a["index"], a["ok"]) for a in result["actions"]] == [(0, True), (1, False)]
    assert "#no-such-button" in result["actions"][1]["error"]
    assert accounts.summary(account_id) == {**accounts.summary(account_id), "balance": 100}
    assert accounts.summary(account_id)["held"] == 0


def test_a_script_that_throws_is_named_and_not_billed(service, pages, accounts, paying):
    account_id, key = paying
    result = service.scrape(
        key,
        js(pages.url("/e2e-act/load-more"), actions=[{"type": "evaluate", "script": "nope.x"}]),
    ).json
    assert result["success"] is False
    assert result["error"].startswith("action 0 (evaluate) failed: the script threw"), result
    assert accounts.summary(account_id)["balance"] == 100


def test_a_phone_sees_the_phone_page_and_a_desktop_does_not(service, pages, paying):
    _, key = paying
    phone = service.scrape(key, js(pages.url("/e2e-act/phones-only"), device="mobile")).json
    desk = service.scrape(key, js(pages.url("/e2e-act/phones-only"))).json
    assert "content for phones" in phone["text"] and "phone layout" in phone["text"], phone
    assert "please use your phone" in desk["text"] and "desktop layout" in desk["text"], desk


def test_headers_and_cookies_reach_the_target_for_this_scrape_only(service, pages, paying):
    _, key = paying
    url = pages.url("/e2e-act/echo")
    asked = service.scrape(
        key,
        js(
            url,
            headers={"X-Caller": "mine"},
            cookies=[{"name": "session", "value": "abc"}, {"name": "lang", "value": "fr"}],
        ),
    ).json
    assert asked["success"] is True, asked
    assert "mine" in asked["text"] and "lang=fr;session=abc" in asked["text"], asked["text"]
    after = service.scrape(key, js(url)).json
    assert "mine" not in after["text"] and "session=abc" not in after["text"], after["text"]


def test_wait_for_a_selector_that_never_shows_fails_named_and_unbilled(
    service, pages, accounts, paying
):
    account_id, key = paying
    result = service.scrape(
        key, js(pages.url("/e2e-act/cookie-wall"), timeout=3, wait_for={"selector": "#never"})
    ).json
    assert result["success"] is False
    assert result["error"].startswith("wait_for failed"), result["error"]
    assert "#never" in result["error"]
    assert accounts.summary(account_id)["balance"] == 100
