"""PostgreSQL: a settlement that also answers the account's balance after it

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 09:50:00

Every answer of ``POST /scrape`` carries the account's balance once its scrape was settled
(``X-Credits-Remaining``), and it must come back in the settlement's own round trip, not from
another query per scrape. ``scrapespy_settle_balance`` takes the parameters of
``scrapespy_settle``, calls it, and answers its row with the balance read afterwards, in the
same transaction (a statement of its own, so that it sees the settlement's update).

``scrapespy_settle`` itself is left as it is: instances of the previous release, still running
during a rolling upgrade, call it and read its three columns; a function's result type cannot
change in place. Whatever a later migration changes in ``scrapespy_settle`` applies to both.
SQLite has no functions: ``service.billing.ledger.settle`` reads the balance in its own transaction.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# this migration's version, current until 0019 (which added the model's share)
SETTLE_BALANCE = """\
CREATE OR REPLACE FUNCTION scrapespy_settle_balance(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer
)
RETURNS TABLE (
    charged bigint, trial_consumed boolean, settled_here boolean, balance_after bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_settled record;
BEGIN
    SELECT * INTO v_settled FROM scrapespy_settle(
        p_hold_id, p_cost, p_consume_trial, p_settled, p_usage, p_account_id, p_url, p_engine,
        p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked, p_error,
        p_elapsed_ms);
    RETURN QUERY SELECT v_settled.charged, v_settled.trial_consumed, v_settled.settled_here,
        (SELECT a.balance FROM accounts a WHERE a.id = p_account_id);
END
$$;
"""

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_settle_balance(integer, bigint, boolean, timestamptz,"
    " boolean, integer, text, varchar, varchar, varchar, integer, boolean, boolean, text, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(SETTLE_BALANCE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
