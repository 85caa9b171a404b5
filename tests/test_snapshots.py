"""service.scrape.snapshots on the run's database (SQLite, or PostgreSQL with
``SCRAPESPY_TEST_DB=postgresql``): the previous snapshot read and the new one kept in one
transaction, bounded per URL and tag, expired, kept apart by account and tag, deleted with the
account."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select

from harness.service import Accounts
from service.billing import accounts as account_rows
from service.db.tables import accounts as accounts_table
from service.db.tables import change_snapshots
from service.scrape.snapshots import Snapshot, count, previous_and_keep, purge_expired


def _url() -> str:
    return f"https://example.com/page/{uuid.uuid4().hex}"


def test_each_scrape_reads_the_newest_and_keeps_the_bound(accounts: Accounts) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync
    url = _url()
    start = datetime.now(UTC) - timedelta(minutes=10)
    assert run(previous_and_keep, account_id, url, "", None, bound=3, retention_days=30) is None
    for n in range(5):
        snap = Snapshot(start + timedelta(minutes=n), f"version {n}\nline é", {"n": n})
        previous = run(previous_and_keep, account_id, url, "", snap, bound=3, retention_days=30)
        if n == 0:
            assert previous is None
        else:
            assert previous is not None
            assert previous.markdown == f"version {n - 1}\nline é"
            assert previous.extracted == {"n": n - 1}
            assert previous.taken_at == start + timedelta(minutes=n - 1)
    assert run(count, account_id, url) == 3  # the bound: the newest three
    # a page that is gone reads the newest and keeps nothing
    newest = run(previous_and_keep, account_id, url, "", None, bound=3, retention_days=30)
    assert newest is not None and newest.markdown.startswith("version 4")
    assert run(count, account_id, url) == 3


def test_markdown_is_stored_compressed(accounts: Accounts) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync
    url = _url()
    text = "\n".join(f"A line of the page, number {n % 7}." for n in range(2000))
    snap = Snapshot(datetime.now(UTC), text)
    run(previous_and_keep, account_id, url, "", snap, bound=3, retention_days=30)
    stored = run(
        lambda conn: conn.execute(
            select(func.length(change_snapshots.c.markdown)).where(
                change_snapshots.c.account_id == account_id
            )
        ).scalar_one()
    )
    assert stored < len(text) // 10


def test_accounts_and_tags_keep_histories_apart(accounts: Accounts) -> None:
    one, _ = accounts.create()
    other, _ = accounts.create()
    run = accounts.database.run_sync
    url = _url()
    snap = Snapshot(datetime.now(UTC), "text")
    run(previous_and_keep, one, url, "", snap, bound=5, retention_days=30)
    assert run(previous_and_keep, other, url, "", snap, bound=5, retention_days=30) is None
    assert run(previous_and_keep, one, url, "daily", snap, bound=5, retention_days=30) is None
    assert run(previous_and_keep, one, url, "", snap, bound=5, retention_days=30) is not None


def test_an_expired_snapshot_is_never_compared_and_the_sweeper_deletes_it(
    accounts: Accounts,
) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync
    url = _url()
    old = Snapshot(datetime.now(UTC) - timedelta(days=8), "old")
    run(previous_and_keep, account_id, url, "", old, bound=5, retention_days=30)
    assert run(previous_and_keep, account_id, url, "", None, bound=5, retention_days=7) is None
    assert run(purge_expired, 7) >= 1
    assert run(count, account_id, url) == 0


def test_snapshots_are_deleted_with_their_account(accounts: Accounts) -> None:
    run = accounts.database.run_sync
    email = f"gone-{uuid.uuid4().hex}@example.com"
    account_id = run(account_rows.create, email, trials=0)
    url = _url()
    run(
        previous_and_keep,
        account_id,
        url,
        "",
        Snapshot(datetime.now(UTC), "text"),
        bound=5,
        retention_days=30,
    )
    assert run(count, account_id, url) == 1
    run(lambda conn: conn.execute(delete(accounts_table).where(accounts_table.c.id == account_id)))
    assert run(count, account_id, url) == 0


def test_an_unchanged_page_moves_its_snapshot_s_time_instead_of_keeping_another(
    accounts: Accounts,
) -> None:
    account_id, _ = accounts.create()
    run = accounts.database.run_sync
    url = _url()
    start = datetime.now(UTC) - timedelta(minutes=5)
    times = [start + timedelta(minutes=n) for n in range(3)]
    for taken in times:
        snap = Snapshot(taken, "the same text", [{"price": "$5"}])
        previous = run(previous_and_keep, account_id, url, "", snap, bound=5, retention_days=30)
    assert previous is not None and previous.taken_at == times[1]  # the scrape before the last
    assert run(count, account_id, url) == 1
    changed = Snapshot(start + timedelta(minutes=4), "the same text", [{"price": "$6"}])
    previous = run(previous_and_keep, account_id, url, "", changed, bound=5, retention_days=30)
    assert previous is not None and previous.taken_at == times[2]
    assert run(count, account_id, url) == 2  # what was extracted changed: another snapshot
