"""The SQL of the scrape hot path (key lookup, hold, settlement), run on the driver's cursor.

SQLAlchemy Core cost more Python time per statement than SQLite took to run it: each execution
builds a context, looks up the compiled cache and wraps the result. These statements run on
every scrape, so they are written out once here and run on a DB-API cursor: in the service on a
connection each database thread keeps (``Database.run_hot``), elsewhere (tests, the CLI) on the
connection of a Core transaction. On PostgreSQL the hold and the settlement are one call each to
the functions of service/db/sql (their current text; the ``pg_*`` statements here call them).
Everything else (the dashboard, payments, migrations, the sweeper) stays on SQLAlchemy Core.
The statements compute nothing of the bill: what to hold and what a settlement does is
service.billing.rules', and the amounts arrive as parameters (docs/decisions/0003-billing-rules.md
says which part of the rule the PostgreSQL functions apply to the hold they claim).
tests/test_ledger_properties.py drives both ways with the same operations, and
tests/test_billing_backends.py the same sequences through both databases.

The text is written with ``:name`` parameters and translated to each driver's style; dates go
through SQLAlchemy's own bind processor for the dialect, so rows written here read back the same
as rows written by Core.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect

from service.db.tables import USAGE_SETTLED, UsageRow


def _params(names: tuple[str, ...]) -> str:
    return ", ".join(f":{name}" for name in names)


_USAGE = USAGE_SETTLED + UsageRow._fields

_SQL: dict[str, str] = {
    "caller": (
        "SELECT api_keys.key_hash, accounts.id, accounts.residential_unlocked,"
        " accounts.residential_trials_left, api_keys.id, api_keys.monthly_cap,"
        " api_keys.last_used_at"
        " FROM api_keys JOIN accounts ON accounts.id = api_keys.account_id"
        " WHERE api_keys.key_hash = :digest AND api_keys.revoked_at IS NULL"
    ),
    # what a capped key spent this calendar month and holds now (migration 0007)
    "key_spent": (
        "SELECT (SELECT coalesce(sum(credits), 0) FROM usage"
        " WHERE key_id = :key_id AND created_at >= :month_start)"
        " + (SELECT coalesce(sum(amount), 0) FROM holds"
        " WHERE key_id = :key_id AND status = 'held')"
    ),
    # the key's last use, written only when the one recorded is a minute old
    "key_used": (
        "UPDATE api_keys SET last_used_at = :used"
        " WHERE id = :key_id AND (last_used_at IS NULL OR last_used_at < :stale)"
    ),
    "reserve": (
        "UPDATE accounts SET held = held + :amount"
        " WHERE id = :account_id AND balance - held >= :amount"
    ),
    "reserve_with_trial": (
        "UPDATE accounts SET held = held + :amount,"
        " residential_trials_left = residential_trials_left - 1"
        " WHERE id = :account_id AND balance - held >= :amount AND residential_trials_left > 0"
    ),
    "account_state": (
        "SELECT balance, held, residential_trials_left FROM accounts WHERE id = :account_id"
    ),
    "new_hold": (
        "INSERT INTO holds (account_id, amount, trial, status, created_at, expires_at, key_id)"
        " VALUES (:account_id, :amount, :trial, 'held', :created_at, :expires_at, :key_id)"
        " RETURNING id"
    ),
    "claim_hold": (
        "UPDATE holds SET status = :new_status, settled_at = :settled"
        " WHERE id = :hold_id AND status = 'held' RETURNING account_id, amount, trial, key_id"
    ),
    "settle_account": (
        "UPDATE accounts SET held = held - :amount, balance = balance - :cost,"
        " residential_trials_left = residential_trials_left + :trial_back"
        " WHERE id = :account_id RETURNING balance"
    ),
    "new_entry": (
        "INSERT INTO ledger_entries (account_id, kind, amount, balance_after, reference,"
        " created_at) VALUES (:account_id, :kind, :amount, :balance_after, :reference,"
        " :created_at) RETURNING id"
    ),
    # PostgreSQL: the hold and the settlement in one statement each (migration 0002; the
    # settlement with the balance after it, 0008), and the key lookup with the hold (0003); the
    # key's cap is checked in the hold (0007). The functions' current text: service/db/sql.
    "pg_hold": (
        "SELECT new_hold, available, trials_left, key_spent FROM scrapespy_hold(:account_id,"
        " :amount, :trial, :created_at, :expires_at, :key_id, :key_cap)"
    ),
    "pg_authorize_hold": (
        "SELECT key_hash, account_id, residential_unlocked, trials_left, held, trial, new_hold,"
        " available, trials_left_after, key_id, key_cap, key_spent"
        " FROM scrapespy_authorize_hold(:digest, :residential, :amount, :trial_amount,"
        " :created_at, :expires_at)"
    ),
    "pg_settle": (
        "SELECT charged, trial_consumed, settled_here, balance_after"
        " FROM scrapespy_settle_balance(:hold_id, :cost,"
        f" :consume_trial, :settled, :usage, {_params(UsageRow._fields)})"
    ),
    # a job's page on PostgreSQL (service.jobs.batches, migration 0013): its claim with its hold,
    # and its result with the job's completion, one call each
    "pg_start_page": (
        "SELECT * FROM scrapespy_start_page(:page_id, :instance, CAST(:seen AS integer), :now,"
        " :digest, :residential, :amount, :trial_amount, :created_at, :expires_at)"
    ),
    "pg_finish_page": (
        "SELECT out_stored, out_completed FROM scrapespy_finish_page(:page_id, :attempt,"
        " :status, :result, :now, :job_seq)"
    ),
    # a batch's page: ``pg_settle`` and ``pg_finish_page`` in one call (migration 0017)
    "pg_settle_finish_page": (
        "SELECT out_charged, out_stored, out_completed"
        " FROM scrapespy_settle_finish_page(:hold_id, :cost, :consume_trial, :settled, :usage,"
        f" {_params(UsageRow._fields[:-1])}, :page_id, :attempt, :status, :result, :now, :job_seq,"
        " :extraction_credits)"
    ),
    # a crawl's page without a webhook (migration 0015): its result, its links as new pages
    # and tasks, and the crawl's completion, in one call
    "pg_finish_crawl_page": (
        "SELECT out_stored, out_completed, out_added FROM scrapespy_finish_crawl_page("
        ":page_id, :attempt, :status, :result, :now, :job_seq, CAST(:urls AS text[]),"
        " CAST(:keys AS text[]), :max_pages, :max_depth, :slots, :task, :per_task)"
    ),
    "new_usage": f"INSERT INTO usage ({', '.join(_USAGE)}) VALUES ({_params(_USAGE)})",
    # a job's page on SQLite (service.jobs.batches), for a job with neither webhook nor crawl:
    # claimed when no attempt started it and its job is active; its hold recorded; its result
    # stored; and the job completed once no page is left
    "page_claim": (
        "UPDATE job_pages SET status = 'running', attempt = attempt + 1,"
        " instance = :instance, updated_at = :now"
        " WHERE id = :page_id AND status = 'pending'"
        " AND (CAST(:seen AS INTEGER) IS NULL OR attempt = :seen)"
        " AND EXISTS (SELECT 1 FROM jobs WHERE jobs.seq = job_pages.job_seq"
        " AND jobs.status IN ('queued', 'running'))"
        " RETURNING job_seq, url, attempt"
    ),
    "page_hold": (
        "UPDATE job_pages SET hold_id = :hold_id"
        " WHERE id = :page_id AND attempt = :attempt AND status = 'running' RETURNING id"
    ),
    "page_finish": (
        "UPDATE job_pages SET status = :status, result = :result, updated_at = :now"
        " WHERE id = :page_id AND attempt = :attempt AND status = 'running' RETURNING id"
    ),
    "job_complete": (
        "UPDATE jobs SET status = 'completed', finished_at = :now"
        " WHERE seq = :job_seq AND status IN ('queued', 'running')"
        " AND NOT EXISTS (SELECT 1 FROM job_pages WHERE job_pages.job_seq = :job_seq"
        " AND job_pages.status IN ('pending', 'running'))"
        " RETURNING seq"
    ),
}

_PARAM = re.compile(r":([a-z_]+)")


class HotPath:
    """The hot-path statements in one dialect's parameter style."""

    __slots__ = ("date", "functions", "sql")

    def __init__(self, dialect: Dialect) -> None:
        # PostgreSQL runs the hold and the settlement as functions: one round trip each
        self.functions = dialect.name == "postgresql"
        if dialect.paramstyle in ("named", "qmark", "numeric"):
            # sqlite3 takes :name with a mapping whatever its declared default style
            self.sql = dict(_SQL)
        elif dialect.paramstyle == "pyformat":
            self.sql = {name: _PARAM.sub(r"%(\1)s", text) for name, text in _SQL.items()}
        else:  # pragma: no cover - only SQLite and psycopg2 are supported
            raise NotImplementedError(f"paramstyle {dialect.paramstyle}")
        process = DateTime(timezone=True).dialect_impl(dialect).bind_processor(dialect)
        self.date: Callable[[Any], Any] = process if process is not None else _same


def _same(value: Any) -> Any:
    return value


_BY_DIALECT: dict[tuple[str, str], HotPath] = {}


class HotConnection(Protocol):
    """What the hot path uses of a connection: a SQLAlchemy ``Connection`` in a transaction,
    or the raw one :meth:`service.db.Database.run_hot` hands over."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def connection(self) -> Any: ...


class RawConnection:
    """A kept DB-API connection (the pool's proxy of it) with its dialect, for ``run_hot``.

    On PostgreSQL it is in autocommit mode (each statement is its own transaction: the key
    lookup, then one function call); ``wrote`` records that a statement that changes something
    was sent, after which a lost connection must not lead to the call being run again.
    """

    __slots__ = ("connection", "dialect", "wrote")

    def __init__(self, connection: Any, dialect: Dialect) -> None:
        self.connection = connection
        self.dialect = dialect
        self.wrote = False


def writing(conn: HotConnection) -> None:
    """Note that ``conn`` is about to send a statement that changes the database."""
    if isinstance(conn, RawConnection):
        conn.wrote = True


def hot_path(conn: HotConnection) -> HotPath:
    dialect = conn.dialect
    key = (dialect.name, dialect.driver)
    found = _BY_DIALECT.get(key)
    if found is None:
        found = _BY_DIALECT[key] = HotPath(dialect)
    return found


def cursor(conn: HotConnection) -> Any:
    """The DB-API cursor of ``conn``'s connection, inside the transaction ``conn`` began."""
    return conn.connection.cursor()
