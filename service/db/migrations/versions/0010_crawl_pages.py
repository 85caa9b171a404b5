"""job_pages.url_key and depth: a crawl's frontier in the pages' rows

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 10:30:00

``POST /crawl`` (service.crawls) adds the pages it finds to its job as it goes. Each page keeps
the SHA-256 of its normalised URL, unique within its job (NULL for a batch's pages, which may
repeat a URL: NULLs never collide), so that two instances finding one link add one page; and
its depth, the link hops from a seed. The downgrade drops both.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("job_pages", sa.Column("url_key", sa.String(length=64), nullable=True))
    op.add_column("job_pages", sa.Column("depth", sa.Integer(), nullable=True))
    op.create_index(
        "uq_job_pages_job_seq_url_key", "job_pages", ["job_seq", "url_key"], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_job_pages_job_seq_url_key", table_name="job_pages")
    with op.batch_alter_table("job_pages") as batch:
        batch.drop_column("depth")
        batch.drop_column("url_key")
