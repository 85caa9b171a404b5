"""API keys: several per account, each with a label, its last use and a monthly cap

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 09:30:00

An account may hold several keys. Each has a label, the time it last started a scrape (written
at most once a minute, so the hot path does not write it on every scrape), an optional cap on
the credits it may spend in a calendar month (UTC), and the time it was revoked: a revoked key
keeps its row rather than being deleted, so the holds and usage rows that name it keep their
meaning and its hash can never match again. Holds and usage rows record the key that made them
(``key_id``); rows made before this migration have none and count for no key.

The cap is checked at hold time, in the hold's own transaction: on PostgreSQL inside
``scrapespy_hold`` (so ``scrapespy_authorize_hold``, the service's one round trip, checks it
too), on SQLite by ``service.billing.ledger.hold``. For a key without a cap nothing is summed. A
capped key's holds take its row's lock first, so that two requests at once cannot both fit under the
cap. ``scrapespy_settle`` copies the hold's key onto the usage row.

The two hold functions return more columns (the hold: the key's spending when its cap refused
it; the authorize-and-hold: also the key's id and cap), so they are dropped and made again. The
new parameters of ``scrapespy_hold`` have defaults and the service names the columns it reads,
so the scrape path of an instance still running the previous release keeps working while the
others restart; its dashboard and CLI know neither several keys nor revoked ones, so finish the
rollout before making a second key or revoking one.
"""

from collections.abc import Sequence
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

from service.db import sql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The hold functions this migration makes are still the current ones: their text is in
# service/db/sql (the one copy of it, which this migration loads); its settlement was changed
# by 0019. The hold checks the key's cap;
# the authorize-and-hold is 0003's with 0004's asynchronous commit, the revoked keys left out,
# the key's cap passed to the hold, and the key's last use written at most once a minute; the
# settlement is 0002's with 0004's claim of the account's own holds, and the usage row takes the
# key of the hold it settles.
HOLD = sql.load("scrapespy_hold")
AUTHORIZE_HOLD = sql.load("scrapespy_authorize_hold")
# this migration's version, current until 0019 (which added the model's share)
SETTLE = """\
CREATE OR REPLACE FUNCTION scrapespy_settle(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer
) RETURNS TABLE (charged bigint, trial_consumed boolean, settled_here boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_account integer;
    v_amount bigint;
    v_trial boolean;
    v_key integer;
    v_balance bigint;
    v_charged bigint := 0;
    v_consumed boolean := false;
    v_claimed boolean := false;
BEGIN
    -- at most once per hold: only a hold still 'held' is claimed
    UPDATE holds
       SET status = CASE WHEN p_cost <> 0 OR p_consume_trial THEN 'captured' ELSE 'released' END,
           settled_at = p_settled
     WHERE id = p_hold_id AND status = 'held'
       AND (p_account_id IS NULL OR account_id = p_account_id)
    RETURNING account_id, amount, trial, key_id INTO v_account, v_amount, v_trial, v_key;
    IF FOUND THEN
        v_claimed := true;
        IF p_cost > v_amount THEN
            RAISE EXCEPTION 'cost % exceeds hold %', p_cost, v_amount;
        END IF;
        v_consumed := p_consume_trial AND v_trial;
        UPDATE accounts
           SET held = held - v_amount, balance = balance - p_cost,
               residential_trials_left = residential_trials_left
                   + CASE WHEN v_trial AND NOT v_consumed THEN 1 ELSE 0 END
         WHERE id = v_account
        RETURNING balance INTO v_balance;
        IF p_cost <> 0 THEN
            INSERT INTO ledger_entries
                (account_id, kind, amount, balance_after, reference, created_at)
            VALUES (v_account, 'scrape', -p_cost, v_balance, 'hold:' || p_hold_id, p_settled);
        END IF;
        v_charged := p_cost;
    END IF;
    IF p_usage THEN
        INSERT INTO usage (account_id, hold_id, created_at, url, engine, tier_requested,
                           tier_used, status_code, success, blocked, error, elapsed_ms,
                           credits, trial, key_id)
        VALUES (p_account_id, CASE WHEN v_claimed THEN p_hold_id END, p_settled, p_url,
                p_engine, p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked,
                p_error, p_elapsed_ms, v_charged, v_consumed, v_key);
    END IF;
    RETURN QUERY SELECT v_charged, v_consumed, v_claimed;
END
$$;
"""

DROP_HOLD = (
    "DROP FUNCTION IF EXISTS scrapespy_hold(integer, bigint, boolean, timestamptz, timestamptz)"
)
DROP_NEW_HOLD = (
    "DROP FUNCTION IF EXISTS scrapespy_hold(integer, bigint, boolean, timestamptz, timestamptz,"
    " integer, bigint)"
)
DROP_AUTHORIZE_HOLD = (
    "DROP FUNCTION IF EXISTS scrapespy_authorize_hold(varchar, boolean, bigint, bigint,"
    " timestamptz, timestamptz)"
)


def _sibling(stem: str) -> ModuleType:
    """Another migration of this folder (alembic loads them by path, not as a package)."""
    spec = spec_from_file_location(
        f"scrapespy_migration_{stem}", Path(__file__).with_name(stem + ".py")
    )
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_constraint("uq_api_keys_account_id", type_="unique")
        batch_op.add_column(
            sa.Column("label", sa.String(length=100), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("monthly_cap", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_api_keys_monthly_cap_not_negative"), "monthly_cap >= 0"
        )
        batch_op.create_index("ix_api_keys_account_id", ["account_id"], unique=False)
    # What a capped key holds now is read through ix_holds_status_expires (the holds still held
    # are few); what it spent this month needs an index of its own.
    for table in ("holds", "usage"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("key_id", sa.Integer(), nullable=True))
            batch_op.create_foreign_key(
                op.f(f"fk_{table}_key_id_api_keys"), "api_keys", ["key_id"], ["id"]
            )
    with op.batch_alter_table("usage", schema=None) as batch_op:
        batch_op.create_index(
            "ix_usage_key_created", ["key_id", "created_at", "credits"], unique=False
        )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP_AUTHORIZE_HOLD)
    op.execute(DROP_HOLD)
    op.execute(HOLD)
    op.execute(AUTHORIZE_HOLD)
    op.execute(SETTLE)


def downgrade() -> None:
    """Back to one key per account: the revoked keys and all but each account's newest live key
    are deleted (the unique constraint comes back), with the keys the holds and usage named."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(DROP_AUTHORIZE_HOLD)
        op.execute(DROP_NEW_HOLD)
        op.execute(_sibling("0002_postgresql_ledger_functions").HOLD)
        _sibling("0004_postgresql_hold_commits_asynchronously").upgrade()
    with op.batch_alter_table("usage", schema=None) as batch_op:
        batch_op.drop_index("ix_usage_key_created")
    for table in ("usage", "holds"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"fk_{table}_key_id_api_keys"), type_="foreignkey")
            batch_op.drop_column("key_id")
    op.execute("DELETE FROM api_keys WHERE revoked_at IS NOT NULL")
    op.execute(
        "DELETE FROM api_keys WHERE id NOT IN (SELECT max(id) FROM api_keys GROUP BY account_id)"
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_api_keys_account_id")
        batch_op.drop_constraint(op.f("ck_api_keys_monthly_cap_not_negative"), type_="check")
        batch_op.drop_column("revoked_at")
        batch_op.drop_column("monthly_cap")
        batch_op.drop_column("last_used_at")
        batch_op.drop_column("label")
        batch_op.create_unique_constraint("uq_api_keys_account_id", ["account_id"])
