"""End to end: ``headers``, ``cookies`` and ``device`` on the static engine, and the 400s of every
new field (``wait_for``, ``actions``, ``headers``, ``cookies``, ``device``), through the real
service against a real local page that echoes what it was sent."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from harness.service import Accounts
from harness.site import TargetSite, echo_request
from service.db.tables import holds, usage

SHOWN = {"ua": "#ua::text", "greeting": "#greeting::text", "cookie": "#cookie::text"}


@pytest.fixture(scope="module")
def echo(site: TargetSite) -> str:
    site.routes["/echo"] = echo_request
    return site.url("/echo")


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def shown(service: Any, key: str, body: dict[str, Any]) -> dict[str, str]:
    """What the echo page says it received, from a successful scrape of it."""
    reply = service.scrape(key, {"selectors": SHOWN, **body})
    assert reply.status == 200, reply.body
    result = reply.json
    assert result["success"] is True, result
    assert "actions" not in result and "action_results" not in result
    return {name: values[0] for name, values in result["extracted"].items()}


def rows(accounts: Accounts, table: Any, account_id: int) -> int:
    def count(conn: Any) -> int:
        query = select(func.count()).select_from(table).where(table.c.account_id == account_id)
        return int(conn.execute(query).scalar_one())

    return accounts.database.run_sync(count)


def test_the_callers_header_and_cookie_arrive_and_are_billed_as_usual(
    service, accounts, paying, echo
):
    account_id, key = paying
    seen = shown(
        service,
        key,
        {
            "url": echo,
            "headers": {"X-Greeting": "hello from the caller"},
            "cookies": [
                {"name": "session", "value": "abc123"},
                {"name": "lang", "value": "en", "domain": "127.0.0.1", "path": "/"},
            ],
        },
    )
    assert seen["greeting"] == "hello from the caller"
    assert sorted(seen["cookie"].split("; ")) == ["lang=en", "session=abc123"]
    assert "scrapespy" in seen["ua"]  # the service's own User-Agent, on a desktop
    assert accounts.summary(account_id)["balance"] == 99


def test_a_cookie_is_for_its_request_only(service, accounts, paying, echo):
    _, key = paying
    first = shown(service, key, {"url": echo, "cookies": [{"name": "session", "value": "s1"}]})
    assert first["cookie"] == "session=s1"
    # neither the caller's cookie nor the one the page set (visited=1) reaches the next scrape,
    # not even one with cookies of its own
    assert shown(service, key, {"url": echo})["cookie"] == "none"
    again = shown(service, key, {"url": echo, "cookies": [{"name": "other", "value": "o"}]})
    assert again["cookie"] == "other=o"
    _, someone_else = accounts.create(credits=5)
    assert shown(service, someone_else, {"url": echo})["cookie"] == "none"


def test_a_cookie_follows_a_redirect_on_its_host_only(service, site, paying, echo):
    _, key = paying
    site.routes["/to-echo"] = lambda _h: (302, {"Location": "/echo"}, b"")
    other_host = f"http://localhost:{site.port}/echo"
    site.routes["/to-other-host"] = lambda _h: (302, {"Location": other_host}, b"")
    cookie = [{"name": "session", "value": "s1"}]
    same = shown(service, key, {"url": site.url("/to-echo"), "cookies": cookie})
    assert same["cookie"] == "session=s1"
    moved = shown(service, key, {"url": site.url("/to-other-host"), "cookies": cookie})
    assert moved["cookie"] == "none"


def test_a_cookie_of_another_domain_is_not_sent(service, paying, echo):
    _, key = paying
    seen = shown(
        service, key, {"url": echo, "cookies": [{"name": "a", "value": "1", "domain": "x.test"}]}
    )
    assert seen["cookie"] == "none"


def test_mobile_static_sends_a_phones_user_agent_unless_the_caller_gives_one(service, paying, echo):
    _, key = paying
    phone = shown(service, key, {"url": echo, "device": "mobile"})["ua"]
    assert "Android" in phone and "Mobile Safari" in phone and "Chrome/" in phone
    own = {"url": echo, "device": "mobile", "headers": {"user-agent": "MyPhoneBot/2.0"}}
    assert shown(service, key, own)["ua"] == "MyPhoneBot/2.0"
    assert (
        shown(service, key, {"url": echo, "device": "desktop"})["ua"]
        == shown(service, key, {"url": echo})["ua"]
    )


JS = {"engine": "js"}


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"headers": {"Host": "evil.test"}}, "'headers': the 'Host' header cannot be set"),
        ({"headers": {"content-length": "5"}}, "the 'content-length' header cannot be set"),
        ({"headers": {"Connection": "close"}}, "the 'Connection' header cannot be set"),
        ({"headers": {"Transfer-Encoding": "chunked"}}, "'Transfer-Encoding' header cannot"),
        ({"headers": {"TE": "trailers"}}, "the 'TE' header cannot be set"),
        ({"headers": {"Upgrade": "h2c"}}, "the 'Upgrade' header cannot be set"),
        ({"headers": {"Proxy-Authorization": "Basic eDp5"}}, "'Proxy-Authorization' header"),
        ({"headers": {"Proxy-Anything": "1"}}, "the 'Proxy-Anything' header cannot be set"),
        ({"headers": {"X-A": "one\r\nX-Injected: two"}}, "the value of 'X-A' must be printable"),
        ({"headers": {"X A": "1"}}, "'headers': 'X A' is not a valid header name"),
        ({"headers": {"X-A": 1}}, "'headers[\"X-A\"]': Input should be a valid string"),
        ({"headers": {f"X-{n}": "1" for n in range(33)}}, "'headers': at most 32 headers"),
        ({"cookies": [{"name": "a b", "value": "1"}]}, "'cookies[0].name': must be a cookie"),
        ({"cookies": [{"name": "a", "value": "1;x=2"}]}, "'cookies[0].value': must be"),
        ({"cookies": [{"name": "a", "value": "1", "path": "x"}]}, "'cookies[0].path'"),
        ({"cookies": [{"name": "a", "value": "1", "secure": True}]}, "'cookies[0].secure'"),
        ({"cookies": [{"name": "a", "value": "1"}] * 51}, "'cookies': List should have at most"),
        ({"device": "tablet"}, "'device': Input should be 'desktop' or 'mobile'"),
        (
            {"actions": [{"type": "click", "selector": "#more"}]},
            "'actions' run in a browser: they need the js engine",
        ),
        ({"wait_for": {"selector": "#x"}}, "'wait_for' waits in a browser: it needs the js"),
        ({"settle_ms": 0}, "'settle_ms' is how a browser waits: it needs the js engine"),
        ({**JS, "settle_ms": 10_001}, "'settle_ms': Input should be less than or equal"),
        ({**JS, "wait_for": {}}, "'wait_for': give exactly one of 'selector' and 'ms'"),
        ({**JS, "wait_for": {"ms": -5}}, "'wait_for.ms': Input should be greater than or equal"),
        ({**JS, "wait_for": {"ms": 10**9}}, "'wait_for.ms': Input should be less than or equal"),
        ({**JS, "wait_for": {"selector": "p[["}}, "'wait_for.selector': invalid CSS selector"),
        (
            {
                **JS,
                "actions": [
                    {"type": "wait", "ms": 10},
                    {"type": "click", "selector": "#more"},
                    {"type": "click", "selector": "div >> text=Next"},
                ],
            },
            "'actions[2].selector': invalid CSS selector 'div >> text=Next'",
        ),
        ({**JS, "actions": [{"type": "wait", "ms": 1}, {"type": "fly"}]}, "'actions[1].type' must"),
        ({**JS, "actions": [{"selector": "a"}]}, "'actions[0].type' is required"),
        ({**JS, "actions": [{"type": "type", "selector": "#q"}]}, "'actions[0].text' is required"),
        ({**JS, "actions": [{"type": "wait", "ms": -1}]}, "'actions[0].ms': Input should be"),
        ({**JS, "actions": [{"type": "press", "key": ""}]}, "'actions[0].key'"),
        (
            {**JS, "actions": [{"type": "scroll", "direction": "left", "amount": 5}]},
            "[0].direction",
        ),
        ({**JS, "actions": [{"type": "scroll", "direction": "down"}]}, "'actions[0]': give"),
        ({**JS, "actions": [{"type": "evaluate", "script": ""}]}, "'actions[0].script'"),
        (
            {**JS, "actions": [{"type": "click", "selector": "a", "force": True}]},
            "unknown field 'actions[0].force'",
        ),
        ({**JS, "actions": [{"type": "wait", "ms": 1}] * 51}, "'actions': List should have at"),
    ],
)
def test_each_invalid_field_or_step_is_a_400_naming_it_with_nothing_fetched_or_held(
    service, site, accounts, paying, echo, body, named
):
    account_id, key = paying
    before = site.count("/echo")
    reply = service.scrape(key, {"url": echo, **body})
    assert reply.status == 400, reply.body
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert list(reply.json) == ["error"]
    assert (
        reply.json["error"].startswith("invalid request: ")
        or "unknown field" in (reply.json["error"])
    )
    assert named in reply.json["error"]
    assert site.count("/echo") == before
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100, 0)
    assert rows(accounts, holds, account_id) == 0
    assert rows(accounts, usage, account_id) == 0
