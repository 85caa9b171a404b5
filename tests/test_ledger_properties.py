"""Every path that moves money, driven by the same random operations, against one model.

A hold and its settlement are written three times: the statements of ``service.db.hot`` that
``service.billing.ledger`` runs on SQLite, and on PostgreSQL the PL/pgSQL functions of
``service/db/sql`` (which the ledger calls, and which the scrape and the batch page call in one
round trip each). The paths driven here:

- ``core``: ``service.billing.ledger`` on a SQLAlchemy ``Connection`` (``Database.run_sync``): on
  SQLite the hot path's statements run on Core's connection, on PostgreSQL ``scrapespy_hold``
  and ``scrapespy_settle_balance``;
- ``hot``: the same on the driver's connection a database thread keeps (the transaction of
  ``Database.run_hot``): SQLite's statements, or PostgreSQL's functions in autocommit;
- ``authorize`` (PostgreSQL): ``POST /scrape``'s one call, ``scrapespy_authorize_hold`` (the
  key's lookup, its cap and the hold), settled by ``scrapespy_settle_balance``, a settlement
  sent again by ``scrapespy_settle`` (what an instance of the previous release calls);
- ``page`` (PostgreSQL): a batch's page, ``scrapespy_start_page`` (its claim and hold) and
  ``scrapespy_settle_finish_page`` (its settlement with its result).

Purchases (``ledger.credit``), refunds (``ledger.refund``) and the sweeper's expiry
(``ledger.expire_holds``) are SQLAlchemy Core on every database: each path runs them between
its own holds and settlements. A model in Python says what each operation must do; every path
must agree with it after every operation (the outcome, what was charged, the balance, what is
held, the trials left), so the paths agree with each other, and
``test_every_path_gives_the_same_balances`` compares them directly too. After every operation:
the balance is the sum of the account's ledger entries and never negative, what is held is
what its open holds hold, and the key's spending this month (spent and held) is within its
cap; at the end, once every hold is settled or released, nothing is held, and no hold was
charged or refunded more than once.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text, update

from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.core.config import DEFAULT_COSTS
from service.db import Database, hot
from service.db import sql as functions
from service.db.tables import holds, ledger_entries, usage
from tests.conftest import a_database_of_its_own

pytestmark = pytest.mark.long(minutes=2)

BACKEND = os.environ.get("SCRAPESPY_TEST_DB", "sqlite").strip().lower()  # as conftest
TIERS = ("none", "datacenter", "residential")
TTL = 60


@pytest.fixture(scope="module")
def db(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    # a database of its own: a service's sweeper on the shared one could take a hold this
    # module expires (FOR UPDATE SKIP LOCKED) and free it only after the check reads it
    made = a_database_of_its_own(database_url, tmp_path_factory.mktemp("ledger"))
    url, _ = next(made)
    database = Database(url, threads=1)
    database.upgrade()
    yield database
    database.stop()
    next(made, None)


def paths() -> list[str]:
    if BACKEND == "postgresql":
        return ["core", "hot", "authorize", "page"]
    return ["core", "hot"]


# -- the operations ---------------------------------------------------------------------------

# ("credit", credits) | ("hold", engine, tier) | ("settle", pick, used tier, success)
# | ("release", pick) | ("again", pick) | ("refund", pick) | ("expire", pick)
Op = tuple[Any, ...]

_INDEX = st.integers(0, 1000)  # which hold an operation takes
_HOLD = st.tuples(st.just("hold"), st.sampled_from(sorted(DEFAULT_COSTS)), st.sampled_from(TIERS))
_SETTLE = st.tuples(st.just("settle"), _INDEX, st.sampled_from(TIERS), st.booleans())
# (Hypothesis draws the first choices more often: holds and settlements first)
OPERATIONS = st.one_of(
    _HOLD,
    _SETTLE,
    _HOLD,
    st.tuples(st.just("credit"), st.integers(1, 40)),
    _SETTLE,
    _HOLD,
    st.tuples(st.just("release"), _INDEX),
    st.tuples(st.just("again"), _INDEX),
    st.tuples(st.just("refund"), _INDEX),
    st.tuples(st.just("expire"), _INDEX),
)
CAPS = st.sampled_from([None, 3, 6, 10, 15, 25])


def random_sequence(rng: random.Random, length: int) -> tuple[int | None, list[Op]]:
    """A sequence drawn from a seeded generator (for the direct comparison of the paths)."""
    ops: list[Op] = []
    for _ in range(length):
        kind = rng.choice(
            [
                "credit",
                "hold",
                "hold",
                "hold",
                "settle",
                "settle",
                "release",
                "again",
                "refund",
                "expire",
            ]
        )
        if kind == "credit":
            ops.append((kind, rng.randint(1, 40)))
        elif kind == "hold":
            ops.append((kind, rng.choice(sorted(DEFAULT_COSTS)), rng.choice(TIERS)))
        elif kind == "settle":
            ops.append((kind, rng.randint(0, 1000), rng.choice(TIERS), rng.random() < 0.7))
        else:
            ops.append((kind, rng.randint(0, 1000)))
    return rng.choice([None, rng.randint(0, 40)]), ops


# -- the model --------------------------------------------------------------------------------


@dataclass
class Hold:
    ref: int  # the path's id of the hold
    engine: str
    tier: str
    amount: int
    trial: bool
    page: tuple[int, int] | None = None  # the page path's (page, attempt)
    status: str = "held"
    charged: int = 0
    consumed: bool = False  # its trial was used
    billed: bool = False  # its usage row is a success a refund can take back
    refunded: bool = False


@dataclass
class Model:
    cap: int | None
    balance: int = 0
    trials: int = 2
    made: list[Hold] = field(default_factory=list)

    @property
    def held(self) -> int:
        return sum(h.amount for h in self.made if h.status == "held")

    @property
    def open(self) -> list[Hold]:
        return [h for h in self.made if h.status == "held"]

    @property
    def spent(self) -> int:
        """What the key spent this month and holds now."""
        return sum(h.charged for h in self.made if not h.refunded) + self.held

    def refusals(self, amount: int, trial: bool) -> set[str]:
        """Why a hold of ``amount`` is refused (empty: it is not)."""
        why = set()
        if self.cap is not None and self.spent + amount > self.cap:
            why.add("cap")
        if self.balance - self.held < amount:
            why.add("credits")
        if trial and self.trials <= 0:
            why.add("trial")
        return why


def hold_terms(engine: str, tier: str) -> tuple[int, bool]:
    """(the hold's amount, whether it is a trial) of a request at ``tier`` from an account
    whose residential tier is not unlocked (service.billing.pricing.quote)."""
    costs = DEFAULT_COSTS[engine]
    if tier == "residential":
        return costs["none"], True
    return costs[tier], False


def settle_terms(held: Hold, used: str, success: bool) -> tuple[int, bool]:
    """(cost, consume the trial) of a settlement at the tier ``used``: never more than held."""
    if not success:
        return 0, False
    if held.trial:
        return held.amount, True
    costs = DEFAULT_COSTS[held.engine]
    tier = min(used, held.tier, key=TIERS.index)
    return min(costs[tier], held.amount), False


# -- the paths --------------------------------------------------------------------------------


@dataclass
class Account:
    account_id: int
    key_id: int
    key_hash: str
    cap: int | None
    job_seq: int | None = None
    pages: list[int] = field(default_factory=list)


class Path:
    """One way of holding and settling; credits, refunds and expiry are Core's on every path."""

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.name == "core":
            return self.db.run_sync(fn, *args, **kwargs)
        # what Database.run_hot runs on a database thread, here on the calling one
        return self.db._hot_transaction(fn, *args, **kwargs)

    def hold(self, account: Account, engine: str, tier: str) -> tuple[int | None, str, Any]:
        """(the hold's id or None, why not, the page's (id, attempt) on the page path)."""
        amount, trial = hold_terms(engine, tier)
        if self.name in ("core", "hot"):
            try:
                made = self.run(
                    ledger.hold,
                    account.account_id,
                    amount,
                    trial=trial,
                    ttl_seconds=TTL,
                    key_id=account.key_id,
                    key_cap=account.cap,
                )
            except ledger.KeyCapReached:
                return None, "cap", None
            except ledger.InsufficientCredits:
                return None, "credits", None
            except ledger.NoTrialLeft:
                return None, "trial", None
            return made, "", None
        terms: dict[str, Any] = {
            "residential": tier == "residential",
            "amount": DEFAULT_COSTS[engine][tier],
            "trial_amount": DEFAULT_COSTS[engine]["none"],
            "ttl_seconds": TTL,
        }
        page = None
        if self.name == "authorize":
            done = self.run(ledger.authorize_and_hold, account.key_hash, **terms)
        else:
            page_id = account.pages.pop(0)
            params = {
                "page_id": page_id,
                "instance": "properties",
                "seen": None,
                "now": ledger.now(),
                **ledger.authorize_and_hold_params(account.key_hash, **terms),
            }
            row = self.run(_call, "pg_start_page", params)
            assert row is not None and row[0] == account.job_seq
            page = (page_id, int(row[2]))
            done = ledger.authorized_hold(row[3:])
        assert done is not None and (done.amount, done.trial) == (amount, trial)
        if done.hold_id is not None:
            return done.hold_id, "", page
        if done.trial and done.trials_left_after <= 0:
            return None, "trial", page
        return None, "cap" if done.key_spent is not None else "credits", page

    def settle(
        self, account: Account, held: Hold, cost: int, consume: bool, row: Any, again: bool
    ) -> tuple[int, int | None]:
        """(what was charged, the balance after it when the path answers it)."""
        if self.name in ("core", "hot"):
            done = self.run(
                ledger.settle, held.ref, cost=cost, consume_trial=consume, usage_row=row
            )
            return done.charged, done.balance
        params = ledger.settle_params(held.ref, cost, consume, row)
        if self.name == "authorize":
            if again:  # what an instance of the previous release calls
                found = self.run(_scalar_settle, params)
                return int(found), None
            done = ledger.settlement(self.run(_call, "pg_settle", params))
            return done.charged, done.balance
        assert held.page is not None and account.job_seq is not None
        page_id, attempt = held.page
        finish = {
            "page_id": page_id,
            "attempt": attempt,
            "status": "done" if cost or consume else "failed",
            "result": "{}",
            "now": ledger.now(),
            "job_seq": account.job_seq,
        }
        found = self.run(_call, "pg_settle_finish_page", {**params, **finish})
        assert found is not None
        return int(found[0]), None


def _call(conn: Any, statement: str, params: dict[str, Any]) -> Any:
    """One of service.db.hot's statements, as the service sends it (Database.call)."""
    cur = hot.cursor(conn)
    hot.writing(conn)
    try:
        cur.execute(hot.hot_path(conn).sql[statement], params)
        return cur.fetchone()
    finally:
        cur.close()


_PREVIOUS_SETTLE = (
    "SELECT charged FROM scrapespy_settle(%(hold_id)s, %(cost)s, %(consume_trial)s,"
    " %(settled)s, %(usage)s, %(account_id)s, %(url)s, %(engine)s, %(tier_requested)s,"
    " %(tier_used)s, %(status_code)s, %(success)s, %(blocked)s, %(error)s, %(elapsed_ms)s)"
)


def _scalar_settle(conn: Any, params: dict[str, Any]) -> int:
    cur = hot.cursor(conn)
    hot.writing(conn)
    try:
        cur.execute(_PREVIOUS_SETTLE, params)
        return int(cur.fetchone()[0])
    finally:
        cur.close()


_n = iter(range(1, 10**9))


def new_account(db: Database, path: str, cap: int | None, pages: int) -> Account:
    email = f"properties{next(_n)}-{path}-{id(db)}@example.com"
    account_id = db.run_sync(accounts.create, email, trials=2)
    key = db.run_sync(keys.create, account_id, cap=cap)
    caller = db.run_sync(keys.authenticate, key)
    assert caller is not None
    account = Account(account_id, caller.key_id, caller.key_hash, cap)
    if path == "page":
        from service.jobs import batch_store, page_claims

        account.job_seq = db.run_sync(
            batch_store.create_job,
            public_id=f"properties{next(_n)}",
            account_id=account_id,
            key_id=caller.key_id,
            key_hash=caller.key_hash,
            options={},
            urls=[f"http://127.0.0.1/{n}" for n in range(pages + 1)],
            limit=100,
        )
        account.pages = db.run_sync(page_claims.page_ids, account.job_seq)
    return account


# -- the run ----------------------------------------------------------------------------------


def _pick(items: list[Hold], pick: int) -> Hold | None:
    return items[pick % len(items)] if items else None


def run_sequence(db: Database, name: str, cap: int | None, ops: list[Op]) -> list[tuple[Any, ...]]:
    """Runs ``ops`` on a new account by the path ``name``, checking every operation against
    the model and the invariants after it; returns the trace of what each did."""
    path = Path(db, name)
    holds_made = sum(1 for op in ops if op[0] == "hold")
    account = new_account(db, name, cap, holds_made)
    model = Model(cap)
    trace: list[tuple[Any, ...]] = []
    for op in ops:
        done = apply(path, account, model, op)
        trace.append((op, done, check(db, account, model)))
    # every hold still open is released: nothing is left held
    for held in model.open:
        apply_settle(path, account, model, held, 0, False, False)
    check(db, account, model)
    at_most_once(db, account, model)
    assert model.held == 0
    return trace


def apply(path: Path, account: Account, model: Model, op: Op) -> tuple[Any, ...]:
    kind = op[0]
    if kind == "credit":
        path.db.run_sync(
            ledger.credit, account.account_id, op[1], kind="purchase", reference=f"p{next(_n)}"
        )
        model.balance += op[1]
        return ("credited",)
    if kind == "hold":
        _, engine, tier = op
        amount, trial = hold_terms(engine, tier)
        why = model.refusals(amount, trial)
        made, refused, page = path.hold(account, engine, tier)
        if why:
            assert made is None and refused in why, (why, refused)
            return ("refused",)
        assert made is not None, (refused, model)
        model.made.append(Hold(made, engine, tier, amount, trial, page))
        if trial:
            model.trials -= 1
        return ("held", amount)
    if kind == "settle":
        held = _pick(model.open, op[1])
        if held is None:
            return ("none",)
        cost, consume = settle_terms(held, op[2], op[3])
        return apply_settle(path, account, model, held, cost, consume, op[3])
    if kind == "release":
        held = _pick(model.open, op[1])
        if held is None:
            return ("none",)
        return apply_settle(path, account, model, held, 0, False, False)
    if kind == "again":  # a settlement sent again: never charged twice
        held = _pick([h for h in model.made if h.status != "held"], op[1])
        if held is None:
            return ("none",)
        return apply_settle(path, account, model, held, held.amount, held.trial, True)
    if kind == "refund":
        held = _pick([h for h in model.made if h.billed], op[1])
        if held is None:
            return ("none",)
        given = path.db.run_sync(ledger.refund, held.ref, "unparsable page")
        expected = 0 if held.refunded else held.charged
        assert given == expected
        if not held.refunded:
            model.balance += held.charged
            if held.consumed:
                model.trials += 1
            held.refunded = True
        return ("refunded", given)
    assert kind == "expire"
    held = _pick(model.open, op[1])
    if held is None:
        return ("none",)
    expire(path.db, held.ref)
    held.status = "expired"
    if held.trial:
        model.trials += 1
    return ("expired",)


def apply_settle(
    path: Path,
    account: Account,
    model: Model,
    held: Hold,
    cost: int,
    consume: bool,
    success: bool,
) -> tuple[Any, ...]:
    row = a_success(account.account_id, success=success, error=None if success else "failed")
    charged, balance_after = path.settle(account, held, cost, consume, row, held.status != "held")
    if held.status != "held":
        assert charged == 0  # at most once per hold
    else:
        assert charged == cost
        held.status = "captured" if cost or (consume and held.trial) else "released"
        held.charged = cost
        held.consumed = consume and held.trial
        held.billed = success
        model.balance -= cost
        if held.trial and not held.consumed:
            model.trials += 1
    if balance_after is not None:
        assert balance_after == model.balance
    return ("settled", charged)


def expire(db: Database, hold_id: int) -> None:
    def backdate(conn: Any) -> None:
        conn.execute(
            update(holds)
            .where(holds.c.id == hold_id)
            .values(expires_at=ledger.now() - timedelta(seconds=1))
        )

    db.run_sync(backdate)
    db.run_sync(ledger.expire_holds)


def check(db: Database, account: Account, model: Model) -> tuple[int, int, int, int]:
    """The database agrees with the model, and the invariants hold; returns the balance, what
    is held, the trials left and the key's spending this month."""

    def read(conn: Any) -> tuple[Any, ...]:
        summary = accounts.summary(conn, account.account_id)
        entries = ledger.entries_sum(conn, account.account_id)
        open_sum = conn.execute(
            select(func.coalesce(func.sum(holds.c.amount), 0)).where(
                holds.c.account_id == account.account_id, holds.c.status == "held"
            )
        ).scalar_one()
        spent = conn.execute(
            select(func.coalesce(func.sum(usage.c.credits), 0)).where(
                usage.c.key_id == account.key_id,
                usage.c.created_at >= ledger.month_start(ledger.now()),
            )
        ).scalar_one()
        key_held = conn.execute(
            select(func.coalesce(func.sum(holds.c.amount), 0)).where(
                holds.c.key_id == account.key_id, holds.c.status == "held"
            )
        ).scalar_one()
        return summary, int(entries), int(open_sum), int(spent) + int(key_held)

    summary, entries, open_sum, spent = db.run_sync(read)
    balance, held = summary["balance"], summary["held"]
    assert balance == entries  # the balance is the sum of its ledger entries
    assert balance >= 0 and 0 <= held <= balance  # never negative, never held beyond it
    assert held == open_sum  # what is held is what the open holds hold
    assert account.cap is None or spent <= account.cap  # the key's monthly cap
    assert (balance, held, summary["residential_trials_left"]) == (
        model.balance,
        model.held,
        model.trials,
    )
    assert spent == model.spent
    return balance, held, summary["residential_trials_left"], spent


def at_most_once(db: Database, account: Account, model: Model) -> None:
    """No hold was charged or refunded twice, and none is left held."""

    def read(conn: Any) -> tuple[list[Any], int]:
        references = conn.execute(
            select(ledger_entries.c.reference, func.count())
            .where(ledger_entries.c.account_id == account.account_id)
            .group_by(ledger_entries.c.reference)
        ).all()
        left = conn.execute(
            select(func.count()).where(
                holds.c.account_id == account.account_id, holds.c.status == "held"
            )
        ).scalar_one()
        return references, int(left)

    references, left = db.run_sync(read)
    assert left == 0
    by_reference = dict(references)
    for held in model.made:
        assert by_reference.get(f"hold:{held.ref}", 0) == (1 if held.charged else 0)
        refunded = held.refunded and held.charged
        assert by_reference.get(f"refund:hold:{held.ref}", 0) == (1 if refunded else 0)


# -- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", paths())
def test_every_path_keeps_the_ledger_invariants(db: Database, path: str) -> None:
    """Hypothesis draws the sequences (the same ones for every path: derandomized); each runs
    on an account of its own, in well under 30 s a path."""

    @settings(
        max_examples=100 if BACKEND == "sqlite" else 40,  # under 30 s a path
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(cap=CAPS, start=st.integers(0, 60), ops=st.lists(OPERATIONS, min_size=10, max_size=40))
    def sequences(cap: int | None, start: int, ops: list[Op]) -> None:
        run_sequence(db, path, cap, [("credit", start)] + ops if start else ops)

    sequences()


def test_every_path_gives_the_same_balances(db: Database) -> None:
    """The same seeded sequences on every path of this database: the same outcomes, charges,
    balances and trials, operation by operation."""
    rng = random.Random(33)
    for _ in range(8):
        cap, ops = random_sequence(rng, 30)
        traces = {name: run_sequence(db, name, cap, ops) for name in paths()}
        first = next(iter(traces.values()))
        for name, trace in traces.items():
            assert trace == first, name


# -- the one copy of the functions ------------------------------------------------------------


def test_the_database_has_the_functions_of_service_db_sql(db: Database) -> None:
    """A database at the newest migration has exactly the functions of service/db/sql."""
    if db.dialect != "postgresql":
        pytest.skip("SQLite has no functions")

    def read(conn: Any) -> dict[str, str]:
        rows = conn.execute(
            text("SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'scrapespy%'")
        ).all()
        return {str(name): str(source) for name, source in rows}

    found = db.run_sync(read)
    assert sorted(set(found) - set(functions.ELSEWHERE)) == sorted(functions.FUNCTIONS)
    for name in functions.FUNCTIONS:
        assert found[name] == functions.body(name), name


def test_each_current_function_is_loaded_by_one_migration_and_packaged() -> None:
    import fnmatch
    import tomllib

    from harness.service import ROOT

    versions = ROOT / "service" / "db" / "migrations" / "versions"
    files = sorted(p.stem for p in (ROOT / "service" / "db" / "sql").glob("*.sql"))
    assert files == sorted(functions.FUNCTIONS)
    for name in functions.FUNCTIONS:
        loading = [p.name for p in versions.glob("*.py") if f'sql.load("{name}")' in p.read_text()]
        assert len(loading) == 1, (name, loading)
        assert functions.load(name).count(f"CREATE OR REPLACE FUNCTION {name}(") == 1
    package = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = package["package-data"]["service"]
    for name in functions.FUNCTIONS:
        assert any(fnmatch.fnmatch(f"db/sql/{name}.sql", pattern) for pattern in patterns), name
