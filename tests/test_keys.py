"""Several API keys per account, against a real database (SQLite, or PostgreSQL in its pass):
managing them, their monthly caps at hold time, and their last use."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.db import Database
from service.db.tables import api_keys, usage


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=4)
    database.upgrade()
    yield database
    database.stop()


_n = iter(range(1, 10**9))


def new_account(db: Database, credits: int = 0) -> int:
    account_id = db.run_sync(accounts.create, f"keys{next(_n)}-{id(db)}@example.com", trials=2)
    if credits:
        db.run_sync(ledger.credit, account_id, credits, kind="grant", reference="test")
    return account_id


def caller(db: Database, key: str) -> keys.Caller:
    found = db.run_sync(keys.authenticate, key)
    assert found is not None
    return found


def hold(db: Database, who: keys.Caller, amount: int) -> int:
    """A hold as the scrape's hot path makes it on SQLite (service.scrape.scraper)."""
    return db.run_sync(
        ledger.hold,
        who.account_id,
        amount,
        trial=False,
        ttl_seconds=60,
        key_id=who.key_id,
        key_cap=who.monthly_cap,
    )


def spend(db: Database, who: keys.Caller, amount: int) -> None:
    hold_id = hold(db, who, amount)
    db.run_sync(ledger.settle, hold_id, cost=amount, usage_row=a_success(who.account_id))


def test_an_account_has_several_keys_with_labels_and_caps(db):
    account_id = new_account(db)
    first = db.run_sync(keys.create, account_id, label="  crawler  prod ", cap=500)
    second = db.run_sync(keys.create, account_id, label="laptop")
    listed = db.run_sync(keys.listed, account_id)
    assert [(k.label, k.prefix, k.monthly_cap, k.last_used_at) for k in listed] == [
        ("crawler prod", first[:12], 500, None),
        ("laptop", second[:12], None, None),
    ]
    assert all(k.spent_this_month == 0 and k.created_at is not None for k in listed)
    assert caller(db, first).account_id == caller(db, second).account_id == account_id
    assert db.run_sync(keys.shown_prefix, account_id) == second[:12]  # the newest
    assert db.run_sync(keys.find, account_id, first[:12] + "…") == listed[0].id
    assert db.run_sync(keys.find, account_id, str(listed[1].id)) == listed[1].id

    db.run_sync(keys.relabel, account_id, listed[1].id, "old laptop")
    db.run_sync(keys.set_cap, account_id, listed[1].id, 20)
    db.run_sync(keys.set_cap, account_id, listed[0].id, None)
    again = db.run_sync(keys.listed, account_id)
    assert [(k.label, k.monthly_cap) for k in again] == [("crawler prod", None), ("old laptop", 20)]


def test_a_key_of_another_account_cannot_be_changed_from_this_one(db):
    mine, theirs = new_account(db), new_account(db)
    their_key = db.run_sync(keys.create, theirs, label="theirs")
    their_id = db.run_sync(keys.listed, theirs)[0].id
    for change, args in (
        (keys.relabel, ("mine now",)),
        (keys.set_cap, (0,)),
        (keys.revoke, ()),
        (keys.regenerate, ()),
    ):
        with pytest.raises(keys.NoSuchKey):
            db.run_sync(change, mine, their_id, *args)
    with pytest.raises(keys.NoSuchKey):
        db.run_sync(keys.find, mine, their_key[:12])
    assert db.run_sync(keys.listed, theirs)[0].label == "theirs"
    assert caller(db, their_key).account_id == theirs


def test_revoking_stops_one_key_at_once_and_keeps_its_row(db):
    account_id = new_account(db)
    kept = db.run_sync(keys.create, account_id, label="kept")
    gone = db.run_sync(keys.create, account_id, label="gone")
    gone_id = caller(db, gone).key_id
    db.run_sync(keys.revoke, account_id, gone_id)
    assert db.run_sync(keys.authenticate, gone) is None
    assert caller(db, kept).account_id == account_id
    assert [k.label for k in db.run_sync(keys.listed, account_id)] == ["kept"]
    with pytest.raises(keys.NoSuchKey):  # revoked for good
        db.run_sync(keys.revoke, account_id, gone_id)
    revoked = db.run_sync(
        lambda conn: conn.execute(
            select(api_keys.c.revoked_at).where(api_keys.c.id == gone_id)
        ).scalar_one()
    )
    assert revoked is not None


def test_regenerating_replaces_the_secret_and_keeps_label_cap_and_spending(db):
    account_id = new_account(db, credits=100)
    old = db.run_sync(keys.create, account_id, label="ci", cap=10)
    spend(db, caller(db, old), 4)
    key_id = caller(db, old).key_id
    new = db.run_sync(keys.regenerate, account_id, key_id)
    assert db.run_sync(keys.authenticate, old) is None
    assert caller(db, new).key_id == key_id
    (info,) = db.run_sync(keys.listed, account_id)
    assert (info.label, info.monthly_cap, info.spent_this_month) == ("ci", 10, 4)
    assert info.prefix == new[:12] and info.last_used_at is None


def test_regenerating_the_only_key_needs_no_choice_and_several_do(db):
    account_id = new_account(db)
    first = db.run_sync(keys.regenerate, account_id)  # none yet: the first key
    second = db.run_sync(keys.regenerate, account_id)  # the only key: replaced
    assert db.run_sync(keys.authenticate, first) is None
    assert caller(db, second).account_id == account_id
    db.run_sync(keys.create, account_id, label="another")
    with pytest.raises(keys.WhichKey):
        db.run_sync(keys.regenerate, account_id)
    assert caller(db, second).account_id == account_id


def test_labels_and_caps_as_typed_are_checked_and_name_the_field():
    assert keys.parse_cap(" 1\u202f000 ") == 1000 and keys.parse_cap("") is None
    assert keys.parse_cap("none") is None and keys.parse_cap("0") == 0
    for typed in ("-5", "1.5", "ten", "٣", str(keys.MAX_CAP + 1)):
        with pytest.raises(keys.KeyRefused, match="^monthly cap: "):
            keys.parse_cap(typed)
    with pytest.raises(keys.KeyRefused, match="^label: "):
        keys.clean_label("x" * 101)
    with pytest.raises(keys.KeyRefused, match="^label: "):
        keys.clean_label("bad\x00label")


def test_caps_stop_a_key_and_not_its_siblings(db):
    account_id = new_account(db, credits=100)
    capped = caller(db, db.run_sync(keys.create, account_id, label="capped", cap=10))
    sibling = caller(db, db.run_sync(keys.create, account_id, label="free"))
    spend(db, capped, 6)
    held = hold(db, capped, 3)  # in progress: counts against the cap too
    with pytest.raises(ledger.KeyCapReached) as refused:
        hold(db, capped, 2)
    assert (refused.value.cap, refused.value.spent, refused.value.cost) == (10, 9, 2)
    hold(db, capped, 1)  # exactly at the cap still fits
    with pytest.raises(ledger.KeyCapReached):
        hold(db, capped, 1)
    for _ in range(3):
        spend(db, sibling, 5)  # the sibling spends on, past the other key's cap
    summary = db.run_sync(accounts.summary, account_id)
    assert (summary["balance"], summary["held"]) == (100 - 6 - 15, 4)  # nothing held on refusal

    db.run_sync(ledger.release, held)  # a released hold frees its part of the cap
    hold(db, capped, 3)
    spent = {k.label: k.spent_this_month for k in db.run_sync(keys.listed, account_id)}
    assert spent == {"capped": 6, "free": 15}


def test_a_cap_counts_this_calendar_month_only_and_refunds_come_off(db):
    account_id = new_account(db, credits=100)
    capped = caller(db, db.run_sync(keys.create, account_id, cap=5))
    spend(db, capped, 5)
    with pytest.raises(ledger.KeyCapReached):
        hold(db, capped, 1)
    last_month = ledger.month_start(ledger.now()) - timedelta(seconds=1)
    db.run_sync(
        lambda conn: conn.execute(
            update(usage).where(usage.c.key_id == capped.key_id).values(created_at=last_month)
        )
    )
    spend(db, capped, 4)  # last month's spending does not count
    refunded = hold(db, capped, 1)
    db.run_sync(ledger.settle, refunded, cost=1, usage_row=a_success(account_id))
    with pytest.raises(ledger.KeyCapReached):
        hold(db, capped, 1)
    assert db.run_sync(ledger.refund, refunded, "the page could not be processed") == 1
    hold(db, capped, 1)  # what was given back is not spent


def test_a_cap_can_be_raised_lowered_or_removed_and_the_next_hold_obeys(db):
    account_id = new_account(db, credits=100)
    key = db.run_sync(keys.create, account_id, cap=2)
    spend(db, caller(db, key), 2)
    with pytest.raises(ledger.KeyCapReached):
        hold(db, caller(db, key), 1)
    db.run_sync(keys.set_cap, account_id, caller(db, key).key_id, None)
    spend(db, caller(db, key), 3)
    db.run_sync(keys.set_cap, account_id, caller(db, key).key_id, 0)  # a cap of 0 stops it
    with pytest.raises(ledger.KeyCapReached) as refused:
        hold(db, caller(db, key), 1)
    assert (refused.value.cap, refused.value.spent) == (0, 5)


def test_concurrent_scrapes_of_a_capped_key_never_pass_its_cap(db):
    """Holds and settlements of one capped key at once (on PostgreSQL the hold locks the key's
    row while a settlement inserts a usage row that names it): none is lost, none deadlocks."""
    account_id = new_account(db, credits=100)
    capped = caller(db, db.run_sync(keys.create, account_id, cap=7))
    sibling = caller(db, db.run_sync(keys.create, account_id))

    def attempt(n: int) -> bool:
        try:
            spend(db, sibling if n % 3 == 0 else capped, 1)
        except ledger.KeyCapReached:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, range(45)))
    assert outcomes.count(False) == 30 - 7  # the sibling's 15 all went through
    listed = {k.id: k.spent_this_month for k in db.run_sync(keys.listed, account_id)}
    assert listed == {capped.key_id: 7, sibling.key_id: 15}
    summary = db.run_sync(accounts.summary, account_id)
    assert (summary["balance"], summary["held"]) == (100 - 22, 0)


def test_the_settlement_records_the_key_of_the_hold(db):
    account_id = new_account(db, credits=10)
    who = caller(db, db.run_sync(keys.create, account_id))
    hold_id = hold(db, who, 2)
    db.run_sync(ledger.settle, hold_id, cost=2, usage_row=a_success(account_id))
    key_id = db.run_sync(
        lambda conn: conn.execute(
            select(usage.c.key_id).where(usage.c.hold_id == hold_id)
        ).scalar_one()
    )
    assert key_id == who.key_id


def test_the_last_use_is_written_at_most_once_a_minute(db):
    account_id = new_account(db)
    key = db.run_sync(keys.create, account_id)
    db.run_sync(keys.note_use, caller(db, key))
    first = db.run_sync(keys.listed, account_id)[0].last_used_at
    assert first is not None
    moment = first if first.tzinfo else first.replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - moment) < timedelta(seconds=30)
    db.run_sync(keys.note_use, caller(db, key))
    assert db.run_sync(keys.listed, account_id)[0].last_used_at == first  # no write
    a_while_ago, key_id = ledger.now() - timedelta(minutes=2), caller(db, key).key_id
    db.run_sync(
        lambda conn: conn.execute(
            update(api_keys).where(api_keys.c.id == key_id).values(last_used_at=a_while_ago)
        )
    )
    db.run_sync(keys.note_use, caller(db, key))
    assert db.run_sync(keys.listed, account_id)[0].last_used_at > first


def test_postgresql_checks_the_cap_and_notes_the_use_in_the_one_round_trip(db):
    if db.dialect != "postgresql":
        pytest.skip("the authorize-and-hold function is PostgreSQL's (the PostgreSQL pass)")
    account_id = new_account(db, credits=100)
    capped = db.run_sync(keys.create, account_id, cap=3)
    sibling = db.run_sync(keys.create, account_id)

    def authorize(key: str, amount: int) -> ledger.AuthorizedHold | None:
        return db.run_sync(
            ledger.authorize_and_hold,
            keys.hash_key(key),
            residential=False,
            amount=amount,
            trial_amount=1,
            ttl_seconds=60,
        )

    done = authorize(capped, 2)
    assert done is not None and done.hold_id is not None and done.key_cap == 3
    refused = authorize(capped, 2)
    assert refused is not None and refused.hold_id is None
    assert (refused.key_cap, refused.key_spent) == (3, 2)
    other = authorize(sibling, 50)
    assert other is not None and other.hold_id is not None and other.key_cap is None
    listed = {k.monthly_cap: k for k in db.run_sync(keys.listed, account_id)}
    assert listed[3].last_used_at is not None and listed[None].last_used_at is not None
    db.run_sync(keys.revoke, account_id, other.key_id)
    assert authorize(sibling, 1) is None
    assert db.run_sync(accounts.summary, account_id)["held"] == 52
