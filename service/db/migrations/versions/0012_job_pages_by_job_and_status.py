"""job_pages: an index on (job_seq, status)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 12:10:00

Whether a job has a page left (service.jobs.batch_store, after every page's result) and its counts
by status were read through the (job_seq, position) index, row by row over the job's pages: a
1,000-page batch read half a million rows to finish. With this index each is a probe.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_job_pages_job_seq_status", "job_pages", ["job_seq", "status"])


def downgrade() -> None:
    op.drop_index("ix_job_pages_job_seq_status", table_name="job_pages")
