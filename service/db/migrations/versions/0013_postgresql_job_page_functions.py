"""PostgreSQL: a job's page starts and finishes in one round trip each

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 12:30:00

A page of a batch was claimed, held and recorded in one transaction of several statements, and
its result stored in another, each statement a round trip from a database thread: a 1,000-page
batch ran at a fifth of the rate of the same pages sent to ``POST /scrape``, whose hold and
settlement are one function call each. These two functions do a page's work the same way
(service.jobs.batches, for jobs with neither webhook nor crawl):

- ``scrapespy_start_page`` claims a page no attempt started, of an active job (none: no row,
  and the service takes the general way), and holds its price by ``scrapespy_authorize_hold``,
  recording the hold on the page. A refused hold leaves the page claimed without one; the
  service then stops the job, as it always did.
- ``scrapespy_finish_page`` stores the attempt's result (only the attempt that holds the page
  may) and completes the job when no page is left. The job's row is locked before the pages
  left are counted, in a statement of its own: of two pages finishing at once, the later sees
  both (as service.jobs.batch_store.finish_pages does).

Both commit without waiting for their WAL flush, as the hold does (migration 0004): a crash of
the database server may lose the last of them, and a lost claim or result leaves the page for
another attempt, which knows from the page's hold whether it was billed. Every settlement still
commits durably, and its flush writes out every claim before it.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

START_PAGE = """
CREATE FUNCTION scrapespy_start_page(
    p_page_id integer, p_instance varchar, p_seen integer, p_now timestamptz,
    p_key_hash varchar, p_residential boolean, p_amount bigint, p_trial_amount bigint,
    p_created timestamptz, p_expires timestamptz
) RETURNS TABLE (
    out_job_seq integer, out_url text, out_attempt integer,
    out_key_hash varchar, out_account_id integer, out_residential_unlocked boolean,
    out_trials_left integer, out_held bigint, out_trial boolean, out_new_hold integer,
    out_available bigint, out_trials_left_after integer, out_key_id integer,
    out_key_cap bigint, out_key_spent bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_job integer;
    v_url text;
    v_attempt integer;
    v_hold record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE job_pages AS p
       SET status = 'running', attempt = p.attempt + 1, instance = p_instance,
           updated_at = p_now
     WHERE p.id = p_page_id AND p.status = 'pending'
       AND (p_seen IS NULL OR p.attempt = p_seen)
       AND EXISTS (SELECT 1 FROM jobs AS j
                    WHERE j.seq = p.job_seq AND j.status IN ('queued', 'running'))
    RETURNING p.job_seq, p.url, p.attempt INTO v_job, v_url, v_attempt;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO v_hold FROM scrapespy_authorize_hold(
        p_key_hash, p_residential, p_amount, p_trial_amount, p_created, p_expires);
    IF v_hold.new_hold IS NOT NULL THEN
        UPDATE job_pages AS p SET hold_id = v_hold.new_hold WHERE p.id = p_page_id;
    END IF;
    RETURN QUERY SELECT v_job, v_url, v_attempt, v_hold.key_hash, v_hold.account_id,
        v_hold.residential_unlocked, v_hold.trials_left, v_hold.held, v_hold.trial,
        v_hold.new_hold, v_hold.available, v_hold.trials_left_after, v_hold.key_id,
        v_hold.key_cap, v_hold.key_spent;
END
$$;
"""

FINISH_PAGE = """
CREATE FUNCTION scrapespy_finish_page(
    p_page_id integer, p_attempt integer, p_status varchar, p_result text,
    p_now timestamptz, p_job_seq integer
) RETURNS TABLE (out_stored boolean, out_completed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE job_pages AS p SET status = p_status, result = p_result, updated_at = p_now
     WHERE p.id = p_page_id AND p.attempt = p_attempt AND p.status = 'running';
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, false;
        RETURN;
    END IF;
    PERFORM 1 FROM jobs AS j WHERE j.seq = p_job_seq FOR UPDATE;
    UPDATE jobs AS j SET status = 'completed', finished_at = p_now
     WHERE j.seq = p_job_seq AND j.status IN ('queued', 'running')
       AND NOT EXISTS (SELECT 1 FROM job_pages AS p
                        WHERE p.job_seq = p_job_seq AND p.status IN ('pending', 'running'));
    RETURN QUERY SELECT true, FOUND;
END
$$;
"""

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_start_page(integer, varchar, integer, timestamptz,"
    " varchar, boolean, bigint, bigint, timestamptz, timestamptz);"
    " DROP FUNCTION IF EXISTS scrapespy_finish_page(integer, integer, varchar, text,"
    " timestamptz, integer);"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(START_PAGE)
    op.execute(FINISH_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
