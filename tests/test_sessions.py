"""service.scrape.sessions: cookies between the jar and the browser, the stored state's bound,
and the table's rules (expiry, the account's bound, an ended session stays ended)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from http.cookiejar import CookieJar
from typing import Any
from urllib.request import Request

import orjson
import pytest

from harness.service import Accounts
from service.scrape.sessions import (
    SessionState,
    TooManySessions,
    browser_cookie,
    jar_cookie,
    list_sessions,
    open_session,
    purge_expired,
    save_session,
    stored_state,
)

HOST_ONLY = {
    "name": "member",
    "value": "abc",
    "domain": "shop.example",
    "path": "/",
    "expires": -1,
    "httpOnly": True,
    "secure": False,
    "sameSite": "Lax",
}
DOMAIN_WIDE = {
    "name": "pref",
    "value": "dark",
    "domain": ".example",
    "path": "/account",
    "expires": 4_102_444_800.0,
    "httpOnly": False,
    "secure": True,
    "sameSite": "Strict",
}


def sent_to(cookie: dict[str, Any], url: str) -> str | None:
    """The Cookie header a standard jar holding ``cookie`` sends to ``url``."""
    jar = CookieJar()
    jar.set_cookie(jar_cookie(cookie))
    request = Request(url)
    jar.add_cookie_header(request)
    return request.get_header("Cookie")


def test_cookies_go_between_the_jar_and_the_browser_unchanged() -> None:
    for cookie in (HOST_ONLY, DOMAIN_WIDE):
        assert browser_cookie(jar_cookie(cookie)) == cookie


def test_a_host_cookie_stays_on_its_host_and_a_domain_cookie_spreads() -> None:
    assert sent_to(HOST_ONLY, "http://shop.example/orders") == "member=abc"
    assert sent_to(HOST_ONLY, "http://other.example/orders") is None
    assert sent_to(DOMAIN_WIDE, "https://www.example/account/x") == "pref=dark"
    assert sent_to(DOMAIN_WIDE, "http://www.example/account/x") is None  # secure only
    assert sent_to(DOMAIN_WIDE, "https://www.example/") is None  # its path only


def state(storage: dict[str, Any]) -> SessionState:
    return SessionState("ses_x", 1, "s", 60, storage, None, new=True)


def test_the_stored_state_is_bounded_dropping_storage_first() -> None:
    cookies = [HOST_ONLY]
    origins = [
        {"origin": "http://shop.example", "localStorage": [{"name": "k", "value": "v" * 9000}]}
    ]
    whole = state({"cookies": cookies, "origins": origins})
    assert orjson.loads(stored_state(whole, 100_000) or b"") == whole.storage
    assert orjson.loads(stored_state(whole, 4096) or b"") == {"cookies": cookies, "origins": []}
    assert stored_state(whole, 50) is None  # the session keeps what it had


def test_sessions_expire_are_bounded_and_an_ended_one_is_not_brought_back(
    accounts: Accounts,
) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync
    now = datetime.now(UTC)

    def opened(name: str, at: datetime = now, limit: int | None = 2) -> SessionState:
        return run(open_session, account_id, name, None, default_idle=60, limit=limit, now=at)

    first = opened("a")
    first.storage = {"cookies": [HOST_ONLY], "origins": []}
    run(save_session, first, 10_000, now)
    again = opened("a")
    assert (again.id, again.new, again.storage["cookies"]) == (first.id, False, [HOST_ONLY])

    run(save_session, opened("b"), 10_000, now)
    with pytest.raises(TooManySessions):
        opened("c")
    assert opened("c", limit=None).new  # a job's page is not bounded

    later = now + timedelta(seconds=61)
    assert run(list_sessions, account_id, later) == []
    assert run(purge_expired, later) >= 2  # the sweeper's, for accounts that never come back
    fresh = opened("a", at=later)  # expired: its name starts afresh
    assert fresh.new and fresh.id != first.id and fresh.storage["cookies"] == []

    # a call that began before its session was ended does not bring it back
    run(save_session, fresh, 10_000, later)
    in_flight = opened("a", at=later)
    run(lambda conn: conn.exec_driver_sql("DELETE FROM scrape_sessions"))
    run(save_session, in_flight, 10_000, later)
    assert run(list_sessions, account_id, later) == []


def test_two_first_calls_of_one_name_make_one_session_the_last_one_wins(
    accounts: Accounts,
) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync

    def opened() -> SessionState:
        return run(open_session, account_id, "twin", None, default_idle=60, limit=5)

    one, two = opened(), opened()
    one.storage = {"cookies": [HOST_ONLY], "origins": []}
    two.storage = {"cookies": [DOMAIN_WIDE], "origins": []}
    run(save_session, one, 10_000)
    run(save_session, two, 10_000)
    [listed] = run(list_sessions, account_id)
    assert listed["id"] == one.id  # the row the first one made
    assert opened().storage["cookies"] == [DOMAIN_WIDE]
