"""End to end: ``GET /account``, ``/usage`` and ``/ledger`` on the real service, after real scrapes
of the local site and a purchase through the demo provider: the figures, the rows and the entries
are what happened, the walks see every row once, and an account sees only its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.billing import keys
from tests.checkout_flow import buy, post_form, start_service

# an error answer as a client reads it (harness.service.Reply.error_answer): body, X-Error-Code
UNAUTHORIZED = ({"error": "API key (X-API-Key header) is missing or invalid"}, "unauthorized")
PURCHASE_EUR = 5
PURCHASE_CREDITS = 5_000
GRANT = 1_000


@pytest.fixture(scope="module")
def shop(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = start_service(
        database_url, tmp_path_factory.mktemp("account"), SCRAPESPY_PAYMENTS="demo"
    ).start()
    yield proc
    proc.stop()


def get(service: ServiceProcess, path: str, key: str | None, **params: Any) -> Reply:
    query = f"?{urlencode(params)}" if params else ""
    return call("GET", service.url(path + query), key=key)


def ok(reply: Reply) -> Any:
    assert reply.status == 200, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["Cache-Control"] == "no-store"
    return reply.json


def walk(service: ServiceProcess, path: str, key: str, **params: Any) -> list[dict[str, Any]]:
    """Every page of a listing, following next_cursor to the end."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ok(get(service, path, key, **params, **({"cursor": cursor} if cursor else {})))
        assert set(page) == {"items", "next_cursor"}
        rows += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return rows
        assert page["items"], "a page with a next_cursor is never empty"


def purchase(service: ServiceProcess, key: str) -> None:
    """Buy credits through the demo provider's checkout, as a user would."""
    reply = buy(service, key, {"amount_eur": PURCHASE_EUR})
    assert reply.status == 200, reply.body
    confirmed = post_form(service.url(urlsplit(reply.json["url"]).path + "/confirm"))
    assert confirmed.status == 303


def scrape(service: ServiceProcess, key: str, url: str) -> dict[str, Any]:
    reply = service.scrape(key, {"url": url})
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json
    return result


def static_cost(service: ServiceProcess) -> int:
    cost: int = call("GET", service.url("/pricing")).json["costs"]["static"]["none"]
    return cost


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_the_figures_rows_and_entries_are_what_happened(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=GRANT)
    purchase(shop, key)
    cost = static_cost(shop)
    scraped = [
        scrape(shop, key, site.url("/article?n=1")),
        scrape(shop, key, site.url("/status/404")),
        scrape(shop, key, site.url("/article?n=2")),
    ]
    assert [r["success"] for r in scraped] == [True, False, True]

    figures = ok(get(shop, "/account", key))
    expected_balance = GRANT + PURCHASE_CREDITS - 2 * cost
    assert figures["account_id"] == account_id
    assert figures["email"] == accounts.summary(account_id)["email"]
    assert figures["balance"] == expected_balance == accounts.entries_sum(account_id)
    assert figures["held"] == 0
    assert figures["available"] == expected_balance
    assert figures["residential_trials_left"] == accounts.trials
    assert figures["residential_unlocked"] is False
    # the harness runs the service at 1000 a second with a burst of 1000
    bucket = {"per_second": 1000.0, "burst": 1000}
    assert figures["rate_limits"] == {"scrape": bucket, "reads": bucket}

    rows = walk(shop, "/usage", key)
    assert [row["url"] for row in rows] == [r["url"] for r in reversed(scraped)]
    for row, result in zip(rows, reversed(scraped), strict=True):
        assert row["engine"] == "static"
        assert row["tier_requested"] == row["tier_used"] == "none"
        assert row["status_code"] == result["status_code"]
        assert row["success"] is result["success"]
        assert row["blocked"] is False
        assert row["error"] == result["error"]
        assert row["elapsed_ms"] == result["elapsed_ms"]
        assert row["credits"] == (cost if result["success"] else 0)
        assert row["trial"] is False
        assert row["reference"].startswith("hold:")
    assert [row["id"] for row in rows] == sorted((row["id"] for row in rows), reverse=True)
    times = [moment(row["created_at"]) for row in rows]
    assert times == sorted(times, reverse=True)
    assert all(t.utcoffset() == timedelta(0) for t in times)

    entries = walk(shop, "/ledger", key)
    oldest_first = list(reversed(entries))
    assert [(e["kind"], e["amount"]) for e in oldest_first] == [
        ("grant", GRANT),
        ("purchase", PURCHASE_CREDITS),
        ("scrape", -cost),
        ("scrape", -cost),
    ]
    assert oldest_first[0]["reference"] == "test"
    assert oldest_first[1]["reference"].startswith("demo_")
    running = 0
    for entry in oldest_first:
        running += entry["amount"]
        assert entry["balance_after"] == running
    assert running == figures["balance"]
    # each charge is the usage row's credits, under the same hold
    charged = {row["reference"]: row["credits"] for row in rows if row["credits"]}
    assert {e["reference"]: -e["amount"] for e in entries if e["kind"] == "scrape"} == charged


def test_held_is_what_a_scrape_in_flight_reserved(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=GRANT)
    cost = static_cost(shop)
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(scrape, shop, key, site.url("/slow"))  # four seconds
        deadline = time.monotonic() + 3
        figures = ok(get(shop, "/account", key))
        while figures["held"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            figures = ok(get(shop, "/account", key))
        assert (figures["balance"], figures["held"]) == (GRANT, cost)
        assert figures["available"] == GRANT - cost
        assert ok(get(shop, "/usage", key))["items"] == []  # not settled yet
        assert slow.result()["success"] is True
    figures = ok(get(shop, "/account", key))
    assert (figures["balance"], figures["held"], figures["available"]) == (
        GRANT - cost,
        0,
        GRANT - cost,
    )
    assert [row["credits"] for row in ok(get(shop, "/usage", key))["items"]] == [cost]


def test_a_walk_sees_every_row_exactly_once_whatever_happens_meanwhile(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=GRANT)
    for n in range(11):
        scrape(shop, key, site.url(f"/article?walk={n}"))
    everything = ok(get(shop, "/usage", key, limit=1000))
    assert everything["next_cursor"] is None
    assert len(everything["items"]) == 11

    for size in (1, 4, 11):
        assert walk(shop, "/usage", key, limit=size) == everything["items"]
    # a page of exactly the rows left still says there is no more
    first = ok(get(shop, "/usage", key, limit=10))
    last = ok(get(shop, "/usage", key, limit=1, cursor=first["next_cursor"]))
    assert last["next_cursor"] is None and last["items"] == everything["items"][10:]

    # scrapes made during a walk are newer than its cursor: the walk goes on where it was
    page = ok(get(shop, "/usage", key, limit=5))
    seen = page["items"]
    scrape(shop, key, site.url("/article?during=1"))
    while page["next_cursor"]:
        page = ok(get(shop, "/usage", key, limit=5, cursor=page["next_cursor"]))
        seen += page["items"]
    assert seen == everything["items"]
    assert len(walk(shop, "/usage", key)) == 12

    entries = ok(get(shop, "/ledger", key, limit=1000))["items"]
    assert len(entries) == 13  # the grant and twelve charges
    assert walk(shop, "/ledger", key, limit=3) == entries


def test_the_time_window_bounds_both_listings(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=GRANT)
    for n in range(5):
        scrape(shop, key, site.url(f"/article?window={n}"))
    rows = ok(get(shop, "/usage", key))["items"]
    newest, oldest = moment(rows[0]["created_at"]), moment(rows[-1]["created_at"])

    # since is inclusive, until exclusive
    since, until = rows[3]["created_at"], rows[1]["created_at"]
    assert ok(get(shop, "/usage", key, since=since, until=until))["items"] == rows[2:4]
    assert ok(get(shop, "/usage", key, since=since))["items"] == rows[:4]
    assert ok(get(shop, "/usage", key, until=until))["items"] == rows[2:]
    # the same instant at another offset, percent-encoded or with its "+" lost to the query
    local = moment(since).astimezone(timezone(timedelta(hours=2))).isoformat()
    assert ok(get(shop, "/usage", key, since=local))["items"] == rows[:4]
    raw_plus = call("GET", shop.url(f"/usage?since={local}"), key=key)
    assert ok(raw_plus)["items"] == rows[:4]
    # a date is midnight UTC
    today = oldest.date()
    assert ok(get(shop, "/usage", key, since=today.isoformat()))["items"] == rows
    tomorrow = (newest + timedelta(days=1)).date().isoformat()
    assert ok(get(shop, "/usage", key, since=tomorrow))["items"] == []
    assert ok(get(shop, "/usage", key, until="2000-01-01T00:00:00Z"))["items"] == []
    # the window holds on every page of a walk
    assert walk(shop, "/usage", key, since=since, until=until, limit=1) == rows[2:4]

    entries = ok(get(shop, "/ledger", key))["items"]
    grant_time = entries[-1]["created_at"]
    assert ok(get(shop, "/ledger", key, until=grant_time))["items"] == []
    after_grant = ok(get(shop, "/ledger", key, since=entries[-2]["created_at"]))["items"]
    assert after_grant == entries[:-1]


def test_an_account_sees_only_its_own(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    first_id, first = accounts.create(credits=GRANT)
    second_id, second = accounts.create(credits=2 * GRANT)
    scrape(shop, second, site.url("/article?second=0"))
    for n in range(3):
        scrape(shop, first, site.url(f"/article?first={n}"))

    assert ok(get(shop, "/account", first))["account_id"] == first_id
    figures = ok(get(shop, "/account", second))
    assert figures["account_id"] == second_id
    assert figures["balance"] == accounts.entries_sum(second_id) == 2 * GRANT - static_cost(shop)
    theirs = walk(shop, "/usage", second)
    assert [row["url"] for row in theirs] == [site.url("/article?second=0")]
    their_entries = walk(shop, "/ledger", second)
    assert [e["kind"] for e in their_entries] == ["scrape", "grant"]
    mine = walk(shop, "/usage", first)
    assert [row["url"] for row in mine] == [site.url(f"/article?first={n}") for n in (2, 1, 0)]
    assert not {row["id"] for row in mine} & {row["id"] for row in theirs}
    # another account's cursor only says where to resume: the rows are still the key's own
    cursor = ok(get(shop, "/usage", first, limit=1))["next_cursor"]
    assert ok(get(shop, "/usage", second, cursor=cursor))["items"] == theirs
    cursor = ok(get(shop, "/ledger", first, limit=1))["next_cursor"]
    assert ok(get(shop, "/ledger", second, cursor=cursor))["items"] == their_entries


@pytest.mark.parametrize("path", ["/account", "/usage", "/ledger"])
def test_a_missing_or_unknown_key_is_the_401_of_scrape(
    shop: ServiceProcess, accounts: Accounts, path: str
) -> None:
    _, key = accounts.create()
    gone = key[:-7] + ("B" if key[-7] != "B" else "C") + key[-6:]  # the checksum then fails
    for sent in (None, "", "not-a-key", gone, key[:-1]):
        reply = get(shop, path, sent)
        assert (reply.status, reply.error_answer) == (401, UNAUTHORIZED), sent
        assert reply.headers["Content-Type"] == "application/json"
    assert shop.scrape(None, {"url": "http://127.0.0.1/"}).error_answer == UNAUTHORIZED
    # a well-formed key that no account has any more
    account_id, replaced = accounts.create()
    accounts.database.run_sync(keys.regenerate, account_id)
    reply = get(shop, path, replaced)
    assert (reply.status, reply.error_answer) == (401, UNAUTHORIZED)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "yesterday"}, "'since'"),
        ({"since": "2026-11-24T10:00:00"}, "'since'"),  # no offset: whose 10 o'clock?
        ({"until": "2026-02-30"}, "'until'"),
        ({"until": ""}, "'until'"),
        ({"limit": "0"}, "'limit'"),
        ({"limit": "1001"}, "'limit'"),
        ({"limit": "ten"}, "'limit'"),
        ({"limit": "1" * 5000}, "'limit'"),
        ({"cursor": "bm90IGEgY3Vyc29y"}, "'cursor'"),
        ({"cursor": "%%%"}, "'cursor'"),
        ({"cursor": "dS4xLjk5OTk5OTk5OTk5OTk5OTk5OTk"}, "'cursor'"),  # a row id past 64 bits
        ({"sort": "asc"}, "'sort'"),
    ],
)
def test_a_bad_parameter_is_a_400_that_names_it(
    shop: ServiceProcess, accounts: Accounts, params: dict[str, str], named: str
) -> None:
    _, key = accounts.create()
    for path in ("/usage", "/ledger"):
        reply = get(shop, path, key, **params)
        assert reply.status == 400, reply.body
        assert list(reply.json) == ["error"]
        assert reply.headers["X-Error-Code"] == "invalid_request"
        assert named in reply.json["error"], reply.json


def test_a_cursor_belongs_to_its_listing_and_a_parameter_is_given_once(
    shop: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=GRANT)
    scrape(shop, key, site.url("/article?c=1"))
    scrape(shop, key, site.url("/article?c=2"))
    usage_cursor = ok(get(shop, "/usage", key, limit=1))["next_cursor"]
    ledger_cursor = ok(get(shop, "/ledger", key, limit=1))["next_cursor"]
    assert usage_cursor and ledger_cursor
    reply = get(shop, "/ledger", key, cursor=usage_cursor)
    assert (reply.status, reply.error_answer) == (
        400,
        (
            {"error": "invalid request: 'cursor': not a next_cursor of GET /ledger"},
            "invalid_request",
        ),
    )
    assert get(shop, "/usage", key, cursor=ledger_cursor).status == 400
    twice = call("GET", shop.url("/usage?limit=1&limit=2"), key=key)
    assert (twice.status, twice.error_answer) == (
        400,
        (
            {"error": "invalid request: 'limit': given more than once"},
            "invalid_request",
        ),
    )
    assert get(shop, "/account", key, verbose="1").error_answer == (
        {"error": "unknown parameter 'verbose'"},
        "invalid_request",
    )


def test_reads_have_a_rate_limit_bucket_of_their_own(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    site: TargetSite,
    accounts: Accounts,
) -> None:
    limits = {"SCRAPESPY_RATE_LIMIT_PER_SECOND": "0.05", "SCRAPESPY_RATE_LIMIT_BURST": "2"}
    proc = ServiceProcess(database_url, tmp_path_factory.mktemp("limited"), env=limits).start()
    try:
        _, reader = accounts.create(credits=GRANT)
        figures = ok(get(proc, "/account", reader))
        assert figures["rate_limits"]["reads"] == {"per_second": 0.05, "burst": 2}
        assert ok(get(proc, "/usage", reader))["items"] == []
        refused = get(proc, "/ledger", reader)
        assert refused.status == 429
        assert refused.json["error"].startswith("rate limit exceeded for this API key")
        assert 1 <= int(refused.headers["Retry-After"]) <= 20
        # reading spent none of the key's scrapes
        assert scrape(proc, reader, site.url("/article?limited=1"))["success"] is True

        _, scraper = accounts.create(credits=GRANT)
        for n in range(2):
            scrape(proc, scraper, site.url(f"/article?limited=s{n}"))
        assert proc.scrape(scraper, {"url": site.url("/article")}).status == 429
        # and scraping spent none of its reads
        assert len(ok(get(proc, "/usage", scraper))["items"]) == 2
    finally:
        proc.stop()


def test_the_api_document_describes_the_three_reads(shop: ServiceProcess) -> None:
    document = call("GET", shop.url("/openapi.json")).json
    for path in ("/account", "/usage", "/ledger"):
        operation = document["paths"][path]["get"]
        assert operation["security"] == [{"ApiKey": []}]
        assert {"200", "400", "401", "429"} <= set(operation["responses"])
    names = [p["name"] for p in document["paths"]["/usage"]["get"]["parameters"]]
    assert names == ["since", "until", "cursor", "limit"]
