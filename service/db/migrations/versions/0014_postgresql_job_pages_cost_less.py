"""PostgreSQL: a job's page costs the database server less

- Results are compressed with lz4, not pglz.
- ``scrapespy_start_page`` writes the page's row once, not twice.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 15:10:00

A page's result (tens of kB of JSON) was compressed by PostgreSQL's default TOAST compression,
pglz, in the backend that stores it: a 1,000-page batch cost the database server 1.5 ms of CPU a
page where the same pages sent to ``POST /scrape`` cost it 0.5, on the cores the service shares
with it. With lz4 it cost 1.1 ms, and the batch ran at 0.80x the scrapes' rate in place of
0.75x; stored uncompressed (``STORAGE EXTERNAL``) about the same CPU, on three times the disk.
A server built without lz4 stores them uncompressed.

The start claimed the page with an UPDATE, then wrote the hold on it with another: two new
versions of the row, each with an entry in every index of job_pages (the status is in two of
them). It now locks the row (``FOR UPDATE``: a concurrent claim waits, then sees the page taken,
as it saw the UPDATE's), takes the hold, and writes status, attempt and hold in one UPDATE.
"""

from collections.abc import Sequence

from alembic import op

from service.db import migration

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STORAGE_SQL = """
DO $$
BEGIN
    ALTER TABLE job_pages ALTER COLUMN result SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN  -- compression method lz4 not supported
    ALTER TABLE job_pages ALTER COLUMN result SET STORAGE EXTERNAL;
END
$$
"""


START_PAGE = """
CREATE OR REPLACE FUNCTION scrapespy_start_page(
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
    SELECT p.job_seq, p.url, p.attempt + 1 INTO v_job, v_url, v_attempt
      FROM job_pages AS p
     WHERE p.id = p_page_id AND p.status = 'pending'
       AND (p_seen IS NULL OR p.attempt = p_seen)
       AND EXISTS (SELECT 1 FROM jobs AS j
                    WHERE j.seq = p.job_seq AND j.status IN ('queued', 'running'))
       FOR UPDATE OF p;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO v_hold FROM scrapespy_authorize_hold(
        p_key_hash, p_residential, p_amount, p_trial_amount, p_created, p_expires);
    UPDATE job_pages AS p
       SET status = 'running', attempt = v_attempt, instance = p_instance, updated_at = p_now,
           hold_id = COALESCE(v_hold.new_hold, p.hold_id)
     WHERE p.id = p_page_id;
    RETURN QUERY SELECT v_job, v_url, v_attempt, v_hold.key_hash, v_hold.account_id,
        v_hold.residential_unlocked, v_hold.trials_left, v_hold.held, v_hold.trial,
        v_hold.new_hold, v_hold.available, v_hold.trials_left_after, v_hold.key_id,
        v_hold.key_cap, v_hold.key_spent;
END
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(STORAGE_SQL)
    op.execute(START_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE job_pages ALTER COLUMN result SET STORAGE EXTENDED")
    op.execute("ALTER TABLE job_pages ALTER COLUMN result SET COMPRESSION DEFAULT")
    earlier = migration("0013_postgresql_job_page_functions.py")  # its function again
    op.execute(earlier.START_PAGE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
