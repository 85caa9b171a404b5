"""PostgreSQL: the hold and the settlement as one function call each

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 07:50:00

On PostgreSQL every statement of the hot path was a round trip to the server (eleven per scrape
with BEGIN and COMMIT), and the server's work per statement ran on the machine's cores too. Each
function does what ``service.billing.ledger.hold`` and ``service.billing.ledger.settle`` do on
SQLite, in one
statement, so in one transaction and one round trip. SQLite has no functions: nothing to do there.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOLD = """
CREATE OR REPLACE FUNCTION scrapespy_hold(
    p_account_id integer, p_amount bigint, p_trial boolean,
    p_created timestamptz, p_expires timestamptz
) RETURNS TABLE (new_hold integer, available bigint, trials_left integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_id integer;
BEGIN
    -- the conditional UPDATE reserves the credits, and the trial, or nothing
    IF p_trial THEN
        UPDATE accounts
           SET held = held + p_amount, residential_trials_left = residential_trials_left - 1
         WHERE id = p_account_id AND balance - held >= p_amount AND residential_trials_left > 0;
    ELSE
        UPDATE accounts SET held = held + p_amount
         WHERE id = p_account_id AND balance - held >= p_amount;
    END IF;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::integer, a.balance - a.held, a.residential_trials_left
                       FROM accounts a WHERE a.id = p_account_id;
        RETURN;
    END IF;
    INSERT INTO holds (account_id, amount, trial, status, created_at, expires_at)
    VALUES (p_account_id, p_amount, p_trial, 'held', p_created, p_expires)
    RETURNING id INTO v_id;
    RETURN QUERY SELECT v_id, NULL::bigint, NULL::integer;
END
$$;
"""

SETTLE = """
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
    RETURNING account_id, amount, trial INTO v_account, v_amount, v_trial;
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
                           credits, trial)
        VALUES (p_account_id, CASE WHEN v_claimed THEN p_hold_id END, p_settled, p_url,
                p_engine, p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked,
                p_error, p_elapsed_ms, v_charged, v_consumed);
    END IF;
    RETURN QUERY SELECT v_charged, v_consumed, v_claimed;
END
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(HOLD)
    op.execute(SETTLE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "DROP FUNCTION IF EXISTS scrapespy_settle(integer, bigint, boolean, timestamptz, boolean,"
        " integer, text, varchar, varchar, varchar, integer, boolean, boolean, text, integer)"
    )
    op.execute(
        "DROP FUNCTION IF EXISTS scrapespy_hold(integer, bigint, boolean, timestamptz, timestamptz)"
    )
