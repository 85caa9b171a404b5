"""PostgreSQL: the key lookup and the hold as one function call

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 16:30:00

A scrape's first database call looked its key up and then held its credits: two round trips on
PostgreSQL, each with its share of the server's and the driver's work on the machine's cores.
``scrapespy_authorize_hold`` does both in one statement. The price rule it needs (a residential
request from an account that is not unlocked is a trial, which holds the ``none`` cost and needs
a trial left) is ``service.billing.pricing.quote``'s; the service checks the two agree on every
call. SQLite has no functions: nothing to do there.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AUTHORIZE_HOLD = """
CREATE OR REPLACE FUNCTION scrapespy_authorize_hold(
    p_key_hash varchar, p_residential boolean, p_amount bigint, p_trial_amount bigint,
    p_created timestamptz, p_expires timestamptz
) RETURNS TABLE (
    key_hash varchar, account_id integer, residential_unlocked boolean, trials_left integer,
    held bigint, trial boolean, new_hold integer, available bigint, trials_left_after integer
)
LANGUAGE plpgsql AS $$
DECLARE
    v_key varchar;
    v_account integer;
    v_unlocked boolean;
    v_trials integer;
    v_trial boolean;
    v_amount bigint;
BEGIN
    SELECT k.key_hash, a.id, a.residential_unlocked, a.residential_trials_left
      INTO v_key, v_account, v_unlocked, v_trials
      FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.key_hash = p_key_hash;
    IF NOT FOUND THEN
        RETURN;  -- no row: no such key
    END IF;
    v_trial := p_residential AND NOT v_unlocked;
    v_amount := CASE WHEN v_trial THEN p_trial_amount ELSE p_amount END;
    IF v_trial AND v_trials <= 0 THEN
        -- refused before anything is held
        RETURN QUERY SELECT v_key, v_account, v_unlocked, v_trials, v_amount, v_trial,
                            NULL::integer, NULL::bigint, v_trials;
        RETURN;
    END IF;
    RETURN QUERY SELECT v_key, v_account, v_unlocked, v_trials, v_amount, v_trial,
                        h.new_hold, h.available, h.trials_left
                   FROM scrapespy_hold(v_account, v_amount, v_trial, p_created, p_expires) h;
END
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(AUTHORIZE_HOLD)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "DROP FUNCTION IF EXISTS scrapespy_authorize_hold(varchar, boolean, bigint, bigint,"
        " timestamptz, timestamptz)"
    )
