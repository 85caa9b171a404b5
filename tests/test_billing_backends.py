"""The same billing on SQLite and on PostgreSQL: one random sequence, two databases, one ledger.

service.billing.rules says what to hold and what a settlement does; on SQLite the hot path's
statements (service.db.hot) carry that out, on PostgreSQL the functions of service/db/sql. Each
sequence of holds (residential trials among them, and the language model's reserve), settlements
(with a document's extension of the hold, the model's share, trials used up or given back),
releases, settlements sent again, refunds and expiries runs on a new account of each database,
and after every operation the two must have answered the same and hold the same: the balance,
what is held, the trials left and the account's ledger entries, one by one.

It runs in the PostgreSQL pass of ``make test`` (the SQLite side is a file of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger, rules
from service.core.config import DEFAULT_COSTS
from service.core.vocabulary import ENGINES, TIERS, ResidentialTrial
from service.db import Database
from service.db.tables import holds, ledger_entries

pytestmark = pytest.mark.postgres

TTL = 60
RESERVE = 3  # what a hold for the language model adds (service.billing.rules.model_reserve)
Op = tuple[Any, ...]

_PICK = st.integers(0, 1000)  # which hold an operation takes
_HOLD = st.tuples(st.just("hold"), st.sampled_from(ENGINES), st.sampled_from(TIERS), st.booleans())
_SETTLE = st.tuples(
    st.just("settle"),
    _PICK,
    st.sampled_from(TIERS),  # the tier the scrape ended at
    st.sampled_from([True, True, False]),  # success
    st.sampled_from([False, False, False, True]),  # blocked
    st.sampled_from([1, 1, 2, 3]),  # a document's started blocks of pages
    st.sampled_from([0, 0, 999, 1000, 1001, 2500, 4000]),  # the language model's tokens
)
# (Hypothesis draws the first choices more often: holds and settlements first)
OPERATIONS = st.one_of(
    _HOLD,
    _SETTLE,
    st.tuples(st.just("credit"), st.integers(1, 40)),
    _HOLD,
    _SETTLE,
    st.tuples(st.just("release"), _PICK),
    st.tuples(st.just("again"), _PICK),
    st.tuples(st.just("refund"), _PICK),
    st.tuples(st.just("expire"), _PICK),
)
# what ends a hold: these take one still held, the others any
_CLOSING = ("settle", "release", "expire")


@pytest.fixture(scope="module")
def databases(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not database_url.startswith("postgresql"):
        pytest.fail("runs in the PostgreSQL pass (SCRAPESPY_TEST_DB=postgresql)")
    path: Path = tmp_path_factory.mktemp("billing") / "billing.db"
    made = [Database(f"sqlite:///{path}", threads=1), Database(database_url, threads=1)]
    for database in made:
        database.upgrade()
    yield made
    for database in made:
        database.stop()


_n = count(1)


class Run:
    """One sequence on one database: its account, its holds, what each operation answered."""

    def __init__(self, db: Database, cap: int | None) -> None:
        self.db = db
        self.account_id = db.run_sync(accounts.create, f"backends{next(_n)}@example.com", trials=2)
        key = db.run_sync(keys.create, self.account_id, cap=cap)
        caller = db.run_sync(keys.authenticate, key)
        assert caller is not None
        self.key_id, self.cap = caller.key_id, cap
        # per hold: (its id, its engine, its tier, what it holds, a trial, the model's reserve)
        self.holds: list[tuple[int, str, str, int, bool, int]] = []
        self.open: list[int] = []  # the places in ``holds`` of those still held

    def hot(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """What ``Database.run_hot`` runs on a database thread, here on the calling one."""
        return self.db._hot_transaction(fn, *args, **kwargs)

    def apply(self, op: Op) -> Any:
        try:
            return self._apply(op)
        except (ledger.KeyCapReached, ledger.InsufficientCredits, ledger.NoTrialLeft) as no:
            return type(no).__name__

    def _apply(self, op: Op) -> Any:
        kind = op[0]
        if kind == "credit":
            reference = f"purchase:{op[1]}"
            self.db.run_sync(
                ledger.credit, self.account_id, op[1], kind="purchase", reference=reference
            )
            return "credited"
        if kind == "hold":
            return self.hold(*op[1:])
        pool = self.open if kind in _CLOSING else list(range(len(self.holds)))
        if not pool:
            return "no hold"
        index = pool[op[1] % len(pool)]
        held = self.holds[index]
        if kind in _CLOSING:
            self.open.remove(index)
        if kind == "settle":
            return self.settle(held, *op[2:])
        if kind in ("release", "again"):
            cost = 0 if kind == "release" else held[3]
            # with its usage row, as the service settles: PostgreSQL reads the balance after
            # the settlement from the row's account
            row = a_success(self.account_id, success=kind == "again")
            done = self.hot(ledger.settle, held[0], cost=cost, consume_trial=held[4], usage_row=row)
            return (done.charged, done.trial_consumed, done.settled_here, done.balance)
        if kind == "refund":
            return self.db.run_sync(ledger.refund, held[0], "unparsable page")
        assert kind == "expire"
        self.db.run_sync(_backdate, held[0])
        return self.db.run_sync(ledger.expire_holds)

    def hold(self, engine: str, tier: str, model: bool) -> Any:
        trial = ResidentialTrial(unlocked=False, trials_left=1)
        terms = rules.hold_terms(DEFAULT_COSTS[engine], tier, trial)
        reserve = RESERVE if model else 0
        hold_id = self.hot(
            ledger.hold,
            self.account_id,
            terms.amount + reserve,
            trial=terms.trial,
            ttl_seconds=TTL,
            key_id=self.key_id,
            key_cap=self.cap,
        )
        self.open.append(len(self.holds))
        self.holds.append((hold_id, engine, tier, terms.amount + reserve, terms.trial, reserve))
        return ("held", terms.amount + reserve, terms.trial)

    def settle(
        self,
        held: tuple[int, str, str, int, bool, int],
        used: str,
        success: bool,
        blocked: bool,
        blocks: int,
        tokens: int,
    ) -> Any:
        hold_id, engine, tier, amount, trial, reserve = held
        used = min(used, tier, key=TIERS.index)  # a fallback only ever goes cheaper
        model = min(-(-tokens // 1000), reserve)  # one credit per started 1,000 tokens
        charged = rules.charge(
            success=success,
            blocked=blocked,
            trial=trial,
            tier_used=used,
            prices=DEFAULT_COSTS[engine],
            blocks=blocks,
            model=model,
        )
        answer: list[Any] = []
        if charged.cost > amount:  # a document's blocks: the hold is extended first
            try:
                answer.append(self.db.run_sync(ledger.extend_hold, hold_id, charged.cost - amount))
            except (ledger.HoldGone, ledger.InsufficientCredits, ledger.KeyCapReached) as no:
                answer.append(type(no).__name__)
                charged = rules.NOTHING  # document_over_budget: released, unbilled
        row = a_success(
            self.account_id,
            tier_requested=tier,
            tier_used=used,
            success=success,
            blocked=blocked,
            extraction_credits=model,
        )
        done = self.hot(
            ledger.settle,
            hold_id,
            cost=charged.cost,
            consume_trial=charged.consume_trial,
            usage_row=row,
        )
        answer.append((done.charged, done.trial_consumed, done.settled_here, done.balance))
        return answer

    def state(self) -> tuple[Any, ...]:
        """The account's balance, what it holds, its trials left and its entries, the holds
        named by their place in the sequence (each database numbers them its own way)."""
        names = {f"hold:{held[0]}": f"hold:#{n}" for n, held in enumerate(self.holds)}
        names |= {f"refund:{k}": f"refund:{v}" for k, v in names.items()}

        def read(conn: Any) -> tuple[Any, ...]:
            summary = accounts.summary(conn, self.account_id)
            entries = conn.execute(
                select(
                    ledger_entries.c.kind,
                    ledger_entries.c.amount,
                    ledger_entries.c.balance_after,
                    ledger_entries.c.reference,
                )
                .where(ledger_entries.c.account_id == self.account_id)
                .order_by(ledger_entries.c.id)
            ).all()
            return (
                summary["balance"],
                summary["held"],
                summary["residential_trials_left"],
                [(k, int(a), int(b), names.get(r, r)) for k, a, b, r in entries],
            )

        return self.db.run_sync(read)


def _backdate(conn: Any, hold_id: int) -> None:
    conn.execute(
        update(holds)
        .where(holds.c.id == hold_id)
        .values(expires_at=ledger.now() - timedelta(seconds=1))
    )


@settings(
    max_examples=40,  # about 10 s on both databases together
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    cap=st.sampled_from([None, 10, 25]),
    start=st.integers(0, 60),
    ops=st.lists(OPERATIONS, min_size=5, max_size=30),
)
def test_sqlite_and_postgresql_bill_the_same(
    databases: list[Database], cap: int | None, start: int, ops: list[Op]
) -> None:
    runs = [Run(db, cap) for db in databases]
    for op in [("credit", start)] + ops if start else ops:
        answers = [run.apply(op) for run in runs]
        assert answers[0] == answers[1], op
        states = [run.state() for run in runs]
        assert states[0] == states[1], op
        balance, held, trials, entries = states[0]
        assert balance == sum(amount for _, amount, _, _ in entries) >= 0
        assert 0 <= held <= balance and 0 <= trials <= 2
    for run in runs:  # what is still held is released on both alike
        for held in run.holds:
            run.hot(ledger.release, held[0], a_success(run.account_id, success=False))
    final = [run.state() for run in runs]
    assert final[0] == final[1]
    assert final[0][1] == 0
