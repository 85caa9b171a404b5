"""PostgreSQL: a batch's page settles and stores its result in one call

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 22:40:00

A page of a job with neither webhook nor crawl took three calls on the reactor: its start
(claim and hold, migration 0013), the settlement the billing pipeline sends for every scrape
(0008), and its finish (0016); ``POST /scrape`` takes two. In a 1,000-page batch at 32 pages in
flight each call waited about 20 ms for one of the reactor's connections, and the batch ran at
0.82x the rate of the same pages sent as scrapes (docs/architecture.md, "Where the PostgreSQL
batch waits").

``scrapespy_settle_finish_page`` does the last two in one transaction: it settles the page's
hold by ``scrapespy_settle`` (the same capture or release, at most once, with its usage row and
ledger entry), then stores the result and completes the job by ``scrapespy_finish_page``. It
commits durably, as every settlement does (the finish's asynchronous commit is undone), and its
flush carries the page's start with it.

The result the service sends already says what the settlement charges (``credits_charged``):
the pipeline computed the cost from the outcome, as the settlement does. The two differ only
when the hold was settled before (the watchdog or the sweeper released it): then nothing is
charged, the result is not stored, and the row's charge says so; the service stores the
result with what was charged by ``scrapespy_finish_page``. A settlement and its result are
otherwise never apart: an instance that dies before the call leaves a hold that expires,
unbilled, and a page that another attempt takes over.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# this migration's version, current until 0019 (which added the model's share)
SETTLE_FINISH_PAGE = """\
CREATE OR REPLACE FUNCTION scrapespy_settle_finish_page(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer,
    p_page_id integer, p_attempt integer, p_status varchar, p_result text,
    p_now timestamptz, p_job_seq integer
) RETURNS TABLE (out_charged bigint, out_stored boolean, out_completed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_charged bigint;
    v_commit text := current_setting('synchronous_commit');
    v_finished record;
BEGIN
    SELECT s.charged INTO v_charged FROM scrapespy_settle(
        p_hold_id, p_cost, p_consume_trial, p_settled, p_usage, p_account_id, p_url, p_engine,
        p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked, p_error,
        p_elapsed_ms) AS s;
    IF v_charged <> p_cost THEN  -- settled before: the result must say what was charged
        RETURN QUERY SELECT v_charged, false, false;
        RETURN;
    END IF;
    SELECT * INTO v_finished FROM scrapespy_finish_page(
        p_page_id, p_attempt, p_status, p_result, p_now, p_job_seq);
    -- the finish turns the transaction's commit asynchronous; a settlement's is durable
    PERFORM set_config('synchronous_commit', v_commit, true);
    RETURN QUERY SELECT v_charged, v_finished.out_stored, v_finished.out_completed;
END
$$;
"""

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_settle_finish_page(integer, bigint, boolean,"
    " timestamptz, boolean, integer, text, varchar, varchar, varchar, integer, boolean,"
    " boolean, text, integer, integer, integer, varchar, text, timestamptz, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(SETTLE_FINISH_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
