"""What the dashboard reads about an account, against a real database: never another's rows."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from itertools import count

import pytest
from sqlalchemy import insert

from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.billing.payments import purchases
from service.dashboard import account, sessions
from service.dashboard.chart import daily_chart
from service.dashboard.pages import Pages
from service.dashboard.usage import (
    daily_totals,
    ledger_page,
    newest_usage_id,
    usage_batch,
    usage_of_scrape,
    usage_page,
)
from service.db import Database
from service.db.tables import usage

_n = count(1)
TODAY = date(2025, 6, 30)


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=2)
    database.upgrade()
    yield database
    database.stop()


def new_account(db: Database, credits: int = 0) -> int:
    account_id = db.run_sync(accounts.create, f"usage{next(_n)}-{id(db)}@example.com", trials=2)
    if credits:
        db.run_sync(ledger.credit, account_id, credits, kind="grant", reference="welcome")
    return account_id


def add_usage(db: Database, account_id: int, when: datetime, **values) -> int:
    row = {
        **a_success(account_id)._asdict(),
        "created_at": when,
        "url": f"https://example.com/{account_id}/{when.isoformat()}",
        "credits": 1,
        "trial": False,
        **values,
    }
    return db.run_sync(
        lambda conn: int(
            conn.execute(insert(usage).values(**row).returning(usage.c.id)).scalar_one()
        )
    )


def at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def test_usage_pages_are_newest_first_and_only_the_accounts(db):
    mine, other = new_account(db), new_account(db)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for minute in range(7):
        add_usage(db, mine, start + timedelta(minutes=minute), elapsed_ms=minute)
        add_usage(db, other, start + timedelta(minutes=minute, seconds=30))
    first = db.run_sync(usage_page, mine, 1, 3)
    assert (first.total, first.pages, first.number) == (7, 3, 1)
    assert [row["elapsed_ms"] for row in first.rows] == [6, 5, 4]
    assert first.newer is None and first.older == 2
    last = db.run_sync(usage_page, mine, 3, 3)
    assert [row["elapsed_ms"] for row in last.rows] == [0]
    assert last.newer == 2 and last.older is None
    # a page past the end shows the last page, not someone else's rows
    assert db.run_sync(usage_page, mine, 99, 3).rows == last.rows
    every = first.rows + db.run_sync(usage_page, mine, 2, 3).rows + last.rows
    assert all(f"/{mine}/" in row["url"] for row in every)
    assert first.rows[0]["created_at"] == start + timedelta(minutes=6)
    assert first.rows[0]["created_at"].tzinfo is not None


def test_an_account_with_no_scrapes_has_one_empty_page(db):
    page = db.run_sync(usage_page, new_account(db), 1)
    assert (page.rows, page.total, page.pages, page.older, page.newer) == ([], 0, 1, None, None)


def test_daily_totals_cover_thirty_utc_days_with_quiet_days_at_zero(db):
    mine, other = new_account(db), new_account(db)
    add_usage(db, mine, at(TODAY, 0), credits=5)
    add_usage(db, mine, at(TODAY, 23), credits=0, success=False)
    add_usage(db, mine, at(TODAY - timedelta(days=29)), credits=2)
    add_usage(db, mine, at(TODAY - timedelta(days=30)), credits=100)  # outside the window
    add_usage(db, mine, at(TODAY - timedelta(days=3)), credits=0, trial=True)
    add_usage(db, other, at(TODAY), credits=7)
    totals = db.run_sync(daily_totals, mine, TODAY)
    assert len(totals) == 30
    assert totals[0].day == TODAY - timedelta(days=29) and totals[-1].day == TODAY
    assert (totals[-1].scrapes, totals[-1].charged, totals[-1].credits) == (2, 1, 5)
    assert (totals[0].scrapes, totals[0].charged, totals[0].credits) == (1, 1, 2)
    assert (totals[-4].scrapes, totals[-4].charged, totals[-4].credits) == (1, 0, 0)
    assert sum(day.scrapes for day in totals) == 4
    assert sum(day.credits for day in totals) == 7


def test_the_csv_walk_reads_every_row_once(db):
    mine, other = new_account(db), new_account(db)
    made = [add_usage(db, mine, at(TODAY, hour)) for hour in range(5)]
    add_usage(db, other, at(TODAY))
    seen, before = [], None
    while batch := db.run_sync(usage_batch, mine, before, 2):
        seen += [row["id"] for row in batch]
        before = batch[-1]["id"]
    assert seen == sorted(made, reverse=True)


def test_the_usage_row_of_a_scrape_that_just_ended(db):
    mine = new_account(db)
    add_usage(db, mine, at(TODAY, 1), url="https://example.com/x", elapsed_ms=40)
    before = db.run_sync(newest_usage_id, mine)
    add_usage(db, mine, at(TODAY, 2), url="https://example.com/x", elapsed_ms=41, credits=3)
    add_usage(db, mine, at(TODAY, 3), url="https://example.com/y", elapsed_ms=40)
    row = db.run_sync(usage_of_scrape, mine, before, "https://example.com/x", 41)
    assert row["credits"] == 3
    assert db.run_sync(usage_of_scrape, mine, before, "https://example.com/x", 40) is None
    assert db.run_sync(usage_of_scrape, new_account(db), 0, "https://example.com/x", 41) is None


def test_ledger_pages_are_newest_first_and_only_the_accounts(db):
    mine, other = new_account(db, credits=100), new_account(db, credits=55)
    db.run_sync(ledger.credit, mine, 20, kind="purchase", reference="demo_abc")
    page = db.run_sync(ledger_page, mine, 1)
    assert [(e["kind"], e["amount"], e["balance_after"]) for e in page.rows] == [
        ("purchase", 20, 120),
        ("grant", 100, 100),
    ]
    assert page.rows[0]["reference"] == "demo_abc"
    assert all(e["amount"] != 55 for e in page.rows)
    assert db.run_sync(ledger_page, other, 1).total == 1


def test_the_overview_shows_the_key_prefix_never_the_key(db):
    mine = new_account(db, credits=30)
    token = db.run_sync(sessions.open_session, mine)
    summary = db.run_sync(account.overview, mine)
    assert summary["key_prefix"] is None
    assert (summary["balance"], summary["held"], summary["available"]) == (30, 0, 30)
    db.run_sync(account.issue_key, mine, token)
    made = db.run_sync(account.take_new_key, mine, token)
    key = made.key
    assert made.replaced is False
    assert db.run_sync(account.take_new_key, mine, token) is None  # shown once
    summary = db.run_sync(account.overview, mine)
    assert key.startswith(summary["key_prefix"]) and len(summary["key_prefix"]) < len(key) - 20
    assert key not in repr(summary)
    db.run_sync(account.issue_key, mine, token)
    newer = db.run_sync(account.take_new_key, mine, token)
    assert newer.replaced is True and newer.key != key
    assert db.run_sync(keys.authenticate, key) is None
    assert db.run_sync(keys.authenticate, newer.key).account_id == mine


def test_a_new_key_made_again_elsewhere_is_not_shown(db):
    mine = new_account(db)
    here, there = db.run_sync(sessions.open_session, mine), db.run_sync(sessions.open_session, mine)
    db.run_sync(account.issue_key, mine, here)
    db.run_sync(account.issue_key, mine, there)
    assert db.run_sync(account.take_new_key, mine, here) is None  # it stopped working
    assert db.run_sync(account.take_new_key, mine, there) is not None


def test_a_purchase_is_shown_only_to_its_account(db):
    mine, other = new_account(db), new_account(db)
    db.run_sync(purchases.record_checkout, "demo_dash_1", mine, "demo", 1000)
    state = db.run_sync(account.purchase_state, "demo_dash_1", mine)
    assert state == account.Purchase("pending", 10_000, 1000)
    assert db.run_sync(account.purchase_state, "demo_dash_1", other) is None
    assert db.run_sync(account.purchase_state, "demo_nothing", mine) is None


def test_the_usage_page_shows_what_the_model_cost_of_a_charge(db):
    account_id = new_account(db)
    add_usage(db, account_id, at(TODAY, 9), credits=1)
    add_usage(db, account_id, at(TODAY, 10), credits=4, extraction_credits=3)
    page = db.run_sync(usage_page, account_id, 1)
    assert [row["extraction_credits"] for row in page.rows] == [3, 0]
    totals = db.run_sync(daily_totals, account_id, TODAY)
    html = (
        Pages()
        .env.get_template("usage.html")
        .render(session=None, section="usage", page=page, chart=daily_chart(totals), totals=totals)
    )
    rows = html.split('id="usage"', 1)[1]
    credits = re.findall(r'data-label="Credits" class="num">(.*?)</td>', rows)
    assert credits == ["4 <small>(3 for the model)</small>", "1"]
