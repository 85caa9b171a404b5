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

from service.db import migration, sql

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


# the current function (service.db.sql: the one copy of its text)
START_PAGE = sql.load("scrapespy_start_page")


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
