"""PostgreSQL: a batch's page looks for the pages left from the newest entries

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 18:10:00

``scrapespy_finish_page`` completes the job when no page is left, by looking for a page still
``pending`` or ``running`` through the ``(job_seq, status)`` index. Every claim and every result
writes a new version of the page's row, and its old entries stay in the index until a vacuum;
b-tree scans rarely mark them dead here, as the index pages they sit on change all the time.
Read in ascending order, as ``NOT EXISTS`` reads them, the ``pending`` entries start with the
old versions of every page already taken: a 1,000-page batch read 330,000 index entries and
fetched 280,000 row versions to answer, about 360 a page (``pg_stat_user_indexes``).

It now reads the newest entries first: ``running`` before ``pending`` (a status range read in
descending order; ``done``, ``failed``, ``blocked`` and ``skipped`` sort outside it), and within
a status the newest row versions first, which are those of the pages running now, or of the
last positions, still pending. The first row found answers; the old versions are read only
when no page is left.
"""

from collections.abc import Sequence

from alembic import op

from service.db import migration, sql

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the current function (service.db.sql: the one copy of its text)
FINISH_PAGE = sql.load("scrapespy_finish_page")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(FINISH_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    earlier = migration("0013_postgresql_job_page_functions.py")  # its function again
    op.execute(earlier.FINISH_PAGE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
