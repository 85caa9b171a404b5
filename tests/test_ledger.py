"""The ledger's rules against a real database (SQLite here, PostgreSQL in the second CI pass)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from importlib.util import module_from_spec, spec_from_file_location
from types import ModuleType

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from harness.service import ROOT
from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.db import Database, sql
from service.db.tables import USAGE_SETTLED, UsageRow, holds, ledger_entries, usage
from service.db.tables import accounts as accounts_table


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=4)
    database.upgrade()
    yield database
    database.stop()


_n = iter(range(1, 10**9))


def new_account(db: Database, credits: int = 0) -> int:
    account_id = db.run_sync(accounts.create, f"ledger{next(_n)}-{id(db)}@example.com", trials=2)
    if credits:
        db.run_sync(ledger.credit, account_id, credits, kind="grant", reference="test")
    return account_id


def state(db: Database, account_id: int) -> tuple[int, int]:
    summary = db.run_sync(accounts.summary, account_id)
    return summary["balance"], summary["held"]


def test_hold_then_capture_bills_the_cost_once(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 5, trial=False, ttl_seconds=60)
    assert state(db, account_id) == (10, 5)
    first = db.run_sync(ledger.settle, hold_id, cost=2)
    again = db.run_sync(ledger.settle, hold_id, cost=2)
    assert (first.charged, first.settled_here) == (2, True)
    assert (again.charged, again.settled_here) == (0, False)
    assert state(db, account_id) == (8, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 8


def test_hold_beyond_available_is_refused_with_the_figures(db):
    account_id = new_account(db, 3)
    db.run_sync(ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    with pytest.raises(ledger.InsufficientCredits) as refused:
        db.run_sync(ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    assert (refused.value.cost, refused.value.available) == (2, 1)


def test_release_frees_the_hold_and_bills_nothing(db):
    account_id = new_account(db, 4)
    hold_id = db.run_sync(ledger.hold, account_id, 4, trial=False, ttl_seconds=60)
    db.run_sync(ledger.release, hold_id)
    assert state(db, account_id) == (4, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 4


def test_an_expired_hold_is_swept_and_a_late_settlement_charges_nothing(db):
    account_id = new_account(db, 5)
    hold_id = db.run_sync(ledger.hold, account_id, 5, trial=False, ttl_seconds=0)

    def backdate(conn):
        conn.execute(
            update(holds)
            .where(holds.c.id == hold_id)
            .values(expires_at=ledger.now() - timedelta(seconds=1))
        )

    db.run_sync(backdate)
    assert db.run_sync(ledger.expire_holds) >= 1
    assert state(db, account_id) == (5, 0)
    late = db.run_sync(ledger.settle, hold_id, cost=5)
    assert late.charged == 0 and not late.settled_here
    assert state(db, account_id) == (5, 0)


def test_trial_consumption_costs_nothing_and_counts_down(db):
    account_id = new_account(db, 1)
    hold_id = db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
    settled = db.run_sync(ledger.settle, hold_id, cost=0, consume_trial=True)
    assert settled.trial_consumed
    summary = db.run_sync(accounts.summary, account_id)
    assert (summary["balance"], summary["held"], summary["residential_trials_left"]) == (1, 0, 1)


def test_a_trial_is_reserved_at_hold_and_given_back_when_not_used(db):
    account_id = new_account(db, 10)  # two trials
    first = db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
    second = db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
    with pytest.raises(ledger.NoTrialLeft):
        db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
    db.run_sync(ledger.settle, first, cost=1)  # fell back to direct: billed, trial given back
    assert db.run_sync(accounts.summary, account_id)["residential_trials_left"] == 1
    db.run_sync(ledger.settle, second, cost=0, consume_trial=True)
    summary = db.run_sync(accounts.summary, account_id)
    assert (summary["balance"], summary["residential_trials_left"]) == (9, 1)


def usage_of(db: Database, hold_id: int) -> tuple[bool, str | None, int, bool]:
    def read(conn):
        row = conn.execute(
            select(usage.c.success, usage.c.error, usage.c.credits, usage.c.trial).where(
                usage.c.hold_id == hold_id
            )
        ).one()
        return tuple(row)

    return db.run_sync(read)


def test_a_refund_gives_back_a_capture_once_and_marks_its_usage_failed(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 5, trial=False, ttl_seconds=60)
    db.run_sync(ledger.settle, hold_id, cost=5, usage_row=a_success(account_id))
    assert state(db, account_id) == (5, 0)
    assert db.run_sync(ledger.refund, hold_id, "the page could not be processed") == 5
    assert db.run_sync(ledger.refund, hold_id, "the page could not be processed") == 0
    assert state(db, account_id) == (10, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 10
    assert usage_of(db, hold_id) == (False, "the page could not be processed", 0, False)


def entries_of(db: Database, account_id: int) -> list[tuple[str, int, int, str]]:
    """The account's ledger entries, oldest first: (kind, amount, balance after, reference)."""

    def read(conn):
        columns = (e.kind, e.amount, e.balance_after, e.reference)
        rows = conn.execute(select(*columns).where(e.account_id == account_id).order_by(e.id))
        return [tuple(row) for row in rows]

    e = ledger_entries.c
    return db.run_sync(read)


def test_the_models_share_of_a_charge_is_an_entry_of_its_own_and_comes_back_alike(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 7, trial=False, ttl_seconds=60)
    row = a_success(account_id)._replace(extraction_credits=4)
    settled = db.run_sync(ledger.settle, hold_id, cost=5, usage_row=row)
    assert (settled.charged, settled.balance) == (5, 5)
    assert state(db, account_id) == (5, 0)
    ref = f"hold:{hold_id}"
    assert entries_of(db, account_id)[1:] == [("scrape", -1, 9, ref), ("extraction", -4, 5, ref)]

    def shares(conn):
        found = select(usage.c.credits, usage.c.extraction_credits)
        return tuple(conn.execute(found.where(usage.c.account_id == account_id)).all())

    assert db.run_sync(shares) == ((5, 4),)
    # settled again (a late item): nothing charged, and no share recorded
    db.run_sync(ledger.settle, hold_id, cost=5, usage_row=row)
    assert db.run_sync(shares) == ((5, 4), (0, 0))
    assert db.run_sync(ledger.refund, hold_id, "the page could not be processed") == 5
    back = f"refund:{ref}"
    assert entries_of(db, account_id)[3:] == [("scrape", 1, 6, back), ("extraction", 4, 10, back)]
    assert db.run_sync(ledger.entries_sum, account_id) == 10
    assert db.run_sync(shares) == ((0, 0), (0, 0))


def test_a_residential_trial_with_the_model_records_the_tokens_alone(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 3, trial=True, ttl_seconds=60)
    row = a_success(account_id, tier_requested="residential", tier_used="residential")
    row = row._replace(extraction_credits=3)  # the page is the trial's, the tokens are not
    db.run_sync(ledger.settle, hold_id, cost=3, consume_trial=True, usage_row=row)
    assert entries_of(db, account_id)[1:] == [("extraction", -3, 7, f"hold:{hold_id}")]
    assert db.run_sync(ledger.entries_sum, account_id) == 7


def test_a_refund_gives_back_a_used_trial_and_leaves_a_failure_alone(db):
    account_id = new_account(db, 10)  # two trials
    trial = db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
    row = a_success(account_id, tier_requested="residential", tier_used="residential")
    db.run_sync(ledger.settle, trial, cost=0, consume_trial=True, usage_row=row)
    assert db.run_sync(accounts.summary, account_id)["residential_trials_left"] == 1
    assert db.run_sync(ledger.refund, trial, "the page took too long to process") == 0
    summary = db.run_sync(accounts.summary, account_id)
    assert (summary["balance"], summary["residential_trials_left"]) == (10, 2)
    assert usage_of(db, trial) == (False, "the page took too long to process", 0, False)
    failed = db.run_sync(ledger.hold, account_id, 1, trial=False, ttl_seconds=60)
    row = a_success(account_id, success=False, error="the target answered HTTP 404")
    db.run_sync(ledger.settle, failed, cost=0, usage_row=row)
    assert db.run_sync(ledger.refund, failed, "the page could not be processed") == 0
    assert usage_of(db, failed) == (False, "the target answered HTTP 404", 0, False)
    assert db.run_sync(ledger.entries_sum, account_id) == 10


def test_a_settlement_writes_its_usage_row_as_the_billing_made_it(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    row = UsageRow(
        account_id=account_id,
        url="https://example.org/a?b=1",
        engine="js",
        tier_requested="residential",
        tier_used="datacenter",
        status_code=None,
        success=False,
        blocked=True,
        error="blocked by the target",
        elapsed_ms=4321,
    )
    db.run_sync(ledger.settle, hold_id, cost=0, usage_row=row)

    def read(conn):
        columns = [usage.c[name] for name in (*UsageRow._fields, *USAGE_SETTLED)]
        found = conn.execute(select(*columns).where(usage.c.hold_id == hold_id)).one()
        return found[: len(UsageRow._fields)], found[len(UsageRow._fields) :]

    written, settled = db.run_sync(read)
    assert UsageRow._make(written) == row
    assert settled[0] == hold_id and tuple(settled[2:]) == (0, False, None)  # no key: no key_id


def test_the_settle_function_takes_the_usage_row_in_its_order():
    """PostgreSQL's ``scrapespy_settle`` (its current text, service/db/sql) takes the usage row
    as positional parameters: the hot path sends them in :class:`UsageRow`'s order."""
    settle = sql.load("scrapespy_settle")
    signature = re.search(r"scrapespy_settle\((.*?)\) RETURNS", settle, re.S)
    assert signature is not None
    names = [part.split()[0] for part in signature.group(1).split(",")]
    assert names[names.index("p_usage") + 1 :] == [f"p_{name}" for name in UsageRow._fields]
    assert set(UsageRow._fields) | set(USAGE_SETTLED) <= set(usage.c.keys())


def _migration(stem: str) -> ModuleType:
    path = ROOT / "service" / "db" / "migrations" / "versions" / f"{stem}.py"
    spec = spec_from_file_location(f"migration_{stem}", path)
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_concurrent_trials_never_exceed_the_allowance(db):
    account_id = new_account(db, 100)  # two trials

    def attempt(_: int) -> bool:
        try:
            hold_id = db.run_sync(ledger.hold, account_id, 1, trial=True, ttl_seconds=60)
        except ledger.NoTrialLeft:
            return False
        db.run_sync(ledger.settle, hold_id, cost=0, consume_trial=True)
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, range(12)))
    assert outcomes.count(True) == 2
    assert db.run_sync(accounts.summary, account_id)["residential_trials_left"] == 0


def test_check_constraints_are_the_backstop(db):
    account_id = new_account(db, 1)

    def overdraw(conn):
        conn.execute(
            update(accounts_table).where(accounts_table.c.id == account_id).values(balance=-1)
        )

    with pytest.raises(IntegrityError):
        db.run_sync(overdraw)


def test_fifty_concurrent_holds_never_overdraw(db):
    account_id = new_account(db, 20)

    def attempt(_: int) -> bool:
        try:
            hold_id = db.run_sync(ledger.hold, account_id, 1, trial=False, ttl_seconds=60)
        except ledger.InsufficientCredits:
            return False
        db.run_sync(ledger.settle, hold_id, cost=1)
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, range(50)))
    assert outcomes.count(True) == 20
    assert state(db, account_id) == (0, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 0


def test_an_extended_hold_captures_the_whole_cost(db):
    account_id = new_account(db, 10)
    hold_id = db.run_sync(ledger.hold, account_id, 1, trial=False, ttl_seconds=60)
    assert db.run_sync(ledger.extend_hold, hold_id, 2, limit=3) == 3
    assert state(db, account_id) == (10, 3)
    assert db.run_sync(ledger.settle, hold_id, cost=3).charged == 3
    assert state(db, account_id) == (7, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 7


def test_a_refused_extension_changes_nothing(db):
    account_id = new_account(db, 3)
    hold_id = db.run_sync(ledger.hold, account_id, 1, trial=False, ttl_seconds=60)
    with pytest.raises(ledger.OverLimit) as over:
        db.run_sync(ledger.extend_hold, hold_id, 2, limit=2)
    assert (over.value.limit, over.value.amount) == (2, 3)
    with pytest.raises(ledger.InsufficientCredits) as short:
        db.run_sync(ledger.extend_hold, hold_id, 3)
    assert (short.value.cost, short.value.available) == (3, 2)
    assert state(db, account_id) == (3, 1)
    assert db.run_sync(ledger.settle, hold_id, cost=1).charged == 1  # the hold as it was
    with pytest.raises(ledger.HoldGone):
        db.run_sync(ledger.extend_hold, hold_id, 1)
    assert state(db, account_id) == (2, 0)


def test_an_extension_counts_against_the_keys_monthly_cap(db):
    account_id = new_account(db, 10)
    key = db.run_sync(keys.regenerate, account_id)
    who = db.run_sync(keys.caller_by_hash, keys.hash_key(key))
    hold_id = db.run_sync(
        ledger.hold, account_id, 1, trial=False, ttl_seconds=60, key_id=who.key_id, key_cap=3
    )
    assert db.run_sync(ledger.extend_hold, hold_id, 2, key_cap=3) == 3
    with pytest.raises(ledger.KeyCapReached) as capped:
        db.run_sync(ledger.extend_hold, hold_id, 1, key_cap=3)
    assert (capped.value.cap, capped.value.spent, capped.value.cost) == (3, 3, 1)
    assert state(db, account_id) == (10, 3)


def test_concurrent_extensions_never_overdraw(db):
    account_id = new_account(db, 20)
    hold_ids = [
        db.run_sync(ledger.hold, account_id, 1, trial=False, ttl_seconds=60) for _ in range(10)
    ]

    def attempt(hold_id: int) -> bool:
        try:
            db.run_sync(ledger.extend_hold, hold_id, 2)
        except ledger.InsufficientCredits:
            db.run_sync(ledger.settle, hold_id, cost=1)
            return False
        db.run_sync(ledger.settle, hold_id, cost=3)
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, hold_ids))
    # 10 held, 10 more available, which settling leaves as it is: 5 extensions of 2 fit
    assert outcomes.count(True) == 5
    assert state(db, account_id) == (0, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 0


class LedgerMachine(RuleBasedStateMachine):
    """Any order of hold, capture, release, expire, grant and purchase keeps the invariants."""

    database: Database

    def __init__(self) -> None:
        super().__init__()
        self.account_id = new_account(self.database)
        self.open: list[tuple[int, int]] = []

    @rule(amount=st.integers(0, 30))
    def hold(self, amount: int) -> None:
        try:
            hold_id = self.database.run_sync(
                ledger.hold, self.account_id, amount, trial=False, ttl_seconds=60
            )
        except ledger.InsufficientCredits:
            return
        self.open.append((hold_id, amount))

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def capture(self, data: st.DataObject) -> None:
        hold_id, amount = self.open.pop(data.draw(st.integers(0, len(self.open) - 1)))
        cost = data.draw(st.integers(0, amount))
        self.database.run_sync(ledger.settle, hold_id, cost=cost)

    @precondition(lambda self: self.open)
    @rule()
    def release(self) -> None:
        hold_id, _ = self.open.pop()
        self.database.run_sync(ledger.release, hold_id)

    @precondition(lambda self: self.open)
    @rule()
    def expire(self) -> None:
        hold_id, _ = self.open.pop(0)

        def backdate(conn):
            conn.execute(
                update(holds)
                .where(holds.c.id == hold_id)
                .values(expires_at=ledger.now() - timedelta(seconds=1))
            )

        self.database.run_sync(backdate)
        self.database.run_sync(ledger.expire_holds)

    @rule(credits=st.integers(1, 40), kind=st.sampled_from(["grant", "purchase"]))
    def credit(self, credits: int, kind: str) -> None:
        self.database.run_sync(ledger.credit, self.account_id, credits, kind=kind, reference="h")

    @invariant()
    def balance_is_the_sum_of_entries_and_never_negative(self) -> None:
        balance, held = state(self.database, self.account_id)
        assert balance >= 0 and 0 <= held <= balance
        assert balance == self.database.run_sync(ledger.entries_sum, self.account_id)
        assert held == sum(amount for _, amount in self.open)


def test_ledger_state_machine(db):
    LedgerMachine.database = db
    machine = LedgerMachine.TestCase
    machine.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
    machine().runTest()


def _backend_pid(conn) -> int:
    return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def test_the_database_threads_keep_their_connection_between_transactions(db):
    account_id = new_account(db, 5)

    def driver_connection(conn):
        return id(conn.connection.driver_connection)

    first = db._transaction(True, driver_connection)
    hold_id = db._transaction(True, ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    db._transaction(True, ledger.settle, hold_id, cost=1)
    assert db._transaction(True, driver_connection) == first
    assert state(db, account_id) == (4, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 4


def test_a_kept_connection_the_server_dropped_is_replaced_without_an_error(db):
    if db.dialect != "postgresql":
        pytest.skip("only a database server can drop a connection (the PostgreSQL pass)")
    account_id = new_account(db, 5)
    pid = db._transaction(True, _backend_pid)
    db.run_sync(lambda conn: conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})"))

    hold_id = db._transaction(True, ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    assert db._transaction(True, _backend_pid) != pid
    db._transaction(True, ledger.settle, hold_id, cost=2)
    # the hold that met the dropped connection was rolled back with it: one hold, one charge
    assert state(db, account_id) == (3, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 3


def test_the_hot_path_runs_on_the_driver_on_a_kept_connection(db):
    account_id = new_account(db, 5)

    def driver_connection(conn):
        return id(conn.connection.dbapi_connection)

    first = db._hot_transaction(driver_connection)
    hold_id = db._hot_transaction(ledger.hold, account_id, 3, trial=False, ttl_seconds=60)
    with pytest.raises(ledger.InsufficientCredits):
        db._hot_transaction(ledger.hold, account_id, 3, trial=False, ttl_seconds=60)
    # the failed hold was rolled back and left no transaction open behind it
    assert state(db, account_id) == (5, 3)
    assert db._hot_transaction(ledger.settle, hold_id, cost=2).charged == 2
    assert db._hot_transaction(driver_connection) == first
    assert state(db, account_id) == (3, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 3


def test_a_hot_connection_the_server_dropped_is_replaced_without_an_error(db):
    if db.dialect != "postgresql":
        pytest.skip("only a database server can drop a connection (the PostgreSQL pass)")
    account_id = new_account(db, 5)

    def backend(conn):
        cur = conn.connection.cursor()
        cur.execute("SELECT pg_backend_pid()")
        return int(cur.fetchone()[0])

    pid = db._hot_transaction(backend)
    db.run_sync(lambda conn: conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})"))
    # as if the connection had been idle long enough to be checked before it is used again
    db.ping_after_idle = 0.0
    try:
        hold_id = db._hot_transaction(ledger.hold, account_id, 2, trial=False, ttl_seconds=60)
    finally:
        db.ping_after_idle = 5.0
    assert db._hot_transaction(backend) != pid
    db._hot_transaction(ledger.settle, hold_id, cost=2)
    assert state(db, account_id) == (3, 0)
    assert db.run_sync(ledger.entries_sum, account_id) == 3
