"""The schema, in SQLAlchemy Core. Alembic's migrations create exactly this.

Money is integers (credits, cents). The ledger's invariants are database constraints too:
balance and held never go below zero and held never exceeds balance.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

KEY_LABEL_LENGTH = 100

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

accounts = Table(
    "accounts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("password_hash", String(255), nullable=True),
    Column("balance", BigInteger, nullable=False, default=0),
    Column("held", BigInteger, nullable=False, default=0),
    Column("residential_trials_left", Integer, nullable=False),
    Column("residential_unlocked", Boolean, nullable=False, default=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("balance >= 0", name="balance_not_negative"),
    CheckConstraint("held >= 0", name="held_not_negative"),
    CheckConstraint("held <= balance", name="held_within_balance"),
    CheckConstraint("residential_trials_left >= 0", name="trials_not_negative"),
)

# An account has any number of keys (migration 0007). A revoked key keeps its row, so that the
# holds and usage rows that name it keep their meaning, and its hash can never match again.
api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("label", String(KEY_LABEL_LENGTH), nullable=False, server_default=""),
    # when the key last started a scrape, written at most once a minute (service.billing.keys)
    Column("last_used_at", DateTime(timezone=True), nullable=True),
    # credits this key may spend per calendar month (UTC); None: no cap
    Column("monthly_cap", BigInteger, nullable=True),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    CheckConstraint("monthly_cap >= 0", name="monthly_cap_not_negative"),
    Index("ix_api_keys_account_id", "account_id"),
)

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("balance_after", BigInteger, nullable=False),
    Column("reference", String(255), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # extraction: the language model's share of a scrape's charge (migration 0019)
    CheckConstraint("kind IN ('grant', 'purchase', 'scrape', 'extraction')", name="kind_known"),
    CheckConstraint("balance_after >= 0", name="balance_after_not_negative"),
    Index("ix_ledger_entries_account_created_id", "account_id", "created_at", "id"),
)

holds = Table(
    "holds",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("trial", Boolean, nullable=False, default=False),
    Column("status", String(10), nullable=False, default="held"),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("settled_at", DateTime(timezone=True), nullable=True),
    # the key that made the hold; None for holds made before keys were told apart (0007)
    Column("key_id", Integer, ForeignKey("api_keys.id"), nullable=True),
    CheckConstraint("amount >= 0", name="amount_not_negative"),
    CheckConstraint("status IN ('held', 'captured', 'released', 'expired')", name="status_known"),
    # also what a capped key holds now (service.billing.ledger.hold): the holds still held are few
    Index("ix_holds_status_expires", "status", "expires_at"),
)

usage = Table(
    "usage",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("hold_id", Integer, ForeignKey("holds.id"), nullable=True, unique=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("url", Text, nullable=False),
    Column("engine", String(8), nullable=False),
    Column("tier_requested", String(12), nullable=False),
    Column("tier_used", String(12), nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("success", Boolean, nullable=False),
    Column("blocked", Boolean, nullable=False),
    Column("error", Text, nullable=True),
    Column("elapsed_ms", Integer, nullable=False),
    Column("credits", BigInteger, nullable=False),
    Column("trial", Boolean, nullable=False, default=False),
    # the key of the hold it settled (the settlement copies it); None before 0007
    Column("key_id", Integer, ForeignKey("api_keys.id"), nullable=True),
    # of ``credits``, what the language model's tokens cost (its own ledger entry, 0019)
    Column("extraction_credits", BigInteger, nullable=False, server_default="0"),
    Index("ix_usage_account_created_id", "account_id", "created_at", "id"),
    # what a capped key spent this month, read from the index alone (service.billing.ledger.hold)
    Index("ix_usage_key_created", "key_id", "created_at", "credits"),
)


class UsageRow(NamedTuple):
    """What the billing records of one scrape (pipelines.billing.usage_row): columns of
    ``usage``, in the order of ``scrapespy_settle``'s parameters after ``p_usage`` (migration
    0002). Settling adds the rest (:data:`USAGE_SETTLED`)."""

    account_id: int | None
    url: str
    engine: str
    tier_requested: str
    tier_used: str
    status_code: int | None
    success: bool
    blocked: bool
    error: str | None
    elapsed_ms: int
    # the language model's share of the cost (pipelines.llm: a ledger entry of its own), charged
    extraction_credits: int = 0


# The columns of ``usage`` that the settlement fills (service.billing.ledger.settle).
USAGE_SETTLED = ("hold_id", "created_at", "credits", "trial", "key_id")

payments = Table(
    "payments",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("provider", String(16), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("credits", BigInteger, nullable=False),
    Column("status", String(12), nullable=False, default="pending"),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("amount_cents > 0", name="amount_positive"),
    CheckConstraint("status IN ('pending', 'paid', 'failed', 'mismatch')", name="status_known"),
    Index("ix_payments_account", "account_id"),
)

# A purchase ledger entry names its payment session; one session credits at most once.
purchase_credits = Table(
    "purchase_credits",
    metadata,
    Column("session_id", String(255), ForeignKey("payments.session_id"), primary_key=True),
    Column("ledger_entry_id", Integer, ForeignKey("ledger_entries.id"), nullable=False),
    UniqueConstraint("ledger_entry_id"),
)

web_sessions = Table(
    "web_sessions",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("csrf_token", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    # A new API key between the form that makes it and the page that shows it, sealed under the
    # session's cookie (service.dashboard.sessions.hold_key); deleted when shown.
    Column("pending_key", String(255), nullable=True),
    Column("pending_key_until", DateTime(timezone=True), nullable=True),
)

# Jobs (POST /batch): one row per job, one per page, in the database so that a restart or a dead
# instance loses none (migration 0009, service.jobs.batches). ``seq`` orders and pages the listings;
# ``public_id`` is what a caller sees: random, so that ids cannot be guessed or counted.
jobs = Table(
    "jobs",
    metadata,
    Column("seq", Integer, primary_key=True),
    Column("public_id", String(32), nullable=False, unique=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    # who pays for each page: the key that made the job, looked up again for every page's hold
    Column("key_id", Integer, ForeignKey("api_keys.id"), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("kind", String(8), nullable=False, default="batch"),
    Column("status", String(24), nullable=False, default="queued"),
    Column("options", Text, nullable=False),  # the scrape options (JSON) every page uses
    Column("total", Integer, nullable=False),
    Column("error", Text, nullable=True),
    # the pages were handed to the queue (PostgreSQL); the sweeper hands over those that were not
    Column("enqueued", Boolean, nullable=False, default=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    # the job's webhook, {"url", "events"} as JSON, or None (migration 0011, service.jobs.webhooks)
    Column("webhook", Text, nullable=True),
    CheckConstraint(
        "status IN ('queued', 'running', 'completed', 'cancelled', 'failed',"
        " 'insufficient_credits')",
        name="status_known",
    ),
    Index("ix_jobs_account_seq", "account_id", "seq"),
    Index("ix_jobs_status", "status"),
)

job_pages = Table(
    "job_pages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("job_seq", Integer, ForeignKey("jobs.seq", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("status", String(10), nullable=False, default="pending"),
    # each take-over of a page counts one more; a result is stored only by the attempt that has it
    Column("attempt", Integer, nullable=False, default=0),
    # the hold of the current attempt: after a crash, its status says whether the page was billed
    Column("hold_id", Integer, ForeignKey("holds.id"), nullable=True),
    Column("instance", String(64), nullable=True),  # the instance of the current attempt
    Column("result", Text, nullable=True),  # the JSON POST /scrape would have answered
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # a crawl's page (migration 0010, service.jobs.crawls): the SHA-256 of its normalised URL,
    # unique in its job so that no two instances add one page twice, and its links' hops from a seed
    Column("url_key", String(64), nullable=True),
    Column("depth", Integer, nullable=True),
    CheckConstraint(
        "status IN ('pending', 'running', 'done', 'failed', 'blocked', 'skipped')",
        name="status_known",
    ),
    UniqueConstraint("job_seq", "position", name="uq_job_pages_job_seq_position"),
    Index("ix_job_pages_status_id", "status", "id"),
    # whether a job has pages left, and its counts (migration 0012)
    Index("ix_job_pages_job_seq_status", "job_seq", "status"),
    Index("uq_job_pages_job_seq_url_key", "job_seq", "url_key", unique=True),
)

# Idempotency-Key: the first answer to (account, key), replayed for 24 hours
# (service.billing.idempotency)
idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("account_id", Integer, ForeignKey("accounts.id"), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("endpoint", String(16), nullable=False),
    Column("body_hash", String(64), nullable=False),
    Column("status_code", Integer, nullable=True),  # None while the first call runs
    Column("response", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # a first call still running past this is taken as dead and its key as free again
    Column("running_until", DateTime(timezone=True), nullable=True),
    Index("ix_idempotency_keys_created_at", "created_at"),
)

# Webhooks (migration 0011, service.jobs.webhooks): each account's signing secret, kept readable
# because every delivery is signed with it (docs/operations.md says how it is protected), and
# one row per delivery of a job's event, written in the transaction of the event itself so that a
# restart loses none. A delivery is ``pending`` until it is ``delivered`` or, its attempts
# spent, ``failed``; ``locked_until`` is the lease of the instance sending it.
webhook_secrets = Table(
    "webhook_secrets",
    metadata,
    Column("account_id", Integer, ForeignKey("accounts.id"), primary_key=True),
    Column("secret", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("message_id", String(40), nullable=False, unique=True),
    Column("job_seq", Integer, ForeignKey("jobs.seq", ondelete="CASCADE"), nullable=False),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("url", Text, nullable=False),
    Column("event", String(16), nullable=False),
    Column("payload", Text, nullable=False),
    Column("status", String(10), nullable=False, default="pending"),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", DateTime(timezone=True), nullable=False),
    Column("locked_until", DateTime(timezone=True), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("status IN ('pending', 'delivered', 'failed')", name="status_known"),
    Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    Index("ix_webhook_deliveries_job_seq", "job_seq"),
)

# Sessions of POST /scrape's "session" (migration 0018, service.scrape.sessions): one row per
# (account, name), found by the caller's name on a scrape and by its random id on DELETE
# /sessions/{id}, always with the account. ``state`` is the cookies and browser storage as
# Playwright's storage_state JSON (bounded by SCRAPESPY_SESSION_MAX_BYTES); ``exit`` the proxy
# of the pool the session goes through ("<tier>/<n>", no credentials), null when direct.
scrape_sessions = Table(
    "scrape_sessions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("state", Text, nullable=False),
    Column("exit", String(40), nullable=True),
    Column("idle_seconds", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_used_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("account_id", "name", name="uq_scrape_sessions_account_name"),
)

# Monitors (migration 0021; each run claimed once, service.jobs.monitor_runs): ``options`` the
# run's scrape options (JSON; a crawl's under ``crawl``), ``schedule`` seconds or a cron expression.
monitors = Table(
    "monitors",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("public_id", String(32), nullable=False, unique=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("key_id", Integer, ForeignKey("api_keys.id"), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("name", String(200), nullable=True),
    Column("url", Text, nullable=False),
    Column("kind", String(8), nullable=False),
    Column("options", Text, nullable=False),
    Column("schedule", String(200), nullable=False),
    Column("webhook", Text, nullable=True),
    Column("status", String(12), nullable=False),
    Column("paused_reason", String(24), nullable=True),
    Column("next_run_at", DateTime(timezone=True), nullable=False),
    Column("last_run_at", DateTime(timezone=True), nullable=True),
    Column("unpaid_runs", Integer, nullable=False, default=0),  # skipped unpaid, in a row
    Column("created_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("status IN ('active', 'paused')", name="status_known"),
    CheckConstraint("kind IN ('url', 'crawl')", name="kind_known"),
    Index("ix_monitors_account_id", "account_id", "id"),
    Index("ix_monitors_due", "status", "next_run_at"),
)

# A monitor's run: its job, then what it found (``summary``, JSON), kept past the job's retention.
monitor_checks = Table(
    "monitor_checks",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("monitor_id", Integer, ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False),
    Column("job_seq", Integer, ForeignKey("jobs.seq", ondelete="SET NULL"), nullable=True),
    Column("job_public_id", String(32), nullable=True),
    Column("status", String(24), nullable=False),
    Column("scheduled_for", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("changed", Boolean, nullable=False, default=False),
    Column("credits_charged", BigInteger, nullable=False, default=0),
    Column("summary", Text, nullable=True),
    CheckConstraint(
        "status IN ('running', 'completed', 'failed', 'insufficient_credits', 'cancelled')",
        name="status_known",
    ),
    Index("ix_monitor_checks_monitor_id", "monitor_id", "id"),
    Index("ix_monitor_checks_running", "status"),
)

# change_tracking's snapshots (migration 0020; service.scrape.snapshots keeps and expires them),
# by (account, the URL's SHA-256, tag or ""): ``markdown`` zlib-compressed, ``extracted`` JSON.
change_snapshots = Table(
    "change_snapshots",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
    Column("url_key", String(64), nullable=False),
    Column("tag", String(100), nullable=False),
    Column("url", Text, nullable=False),
    Column("markdown", LargeBinary, nullable=False),
    Column("extracted", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_change_snapshots_page", "account_id", "url_key", "tag", "created_at"),
    Index("ix_change_snapshots_created_at", "created_at"),
)
