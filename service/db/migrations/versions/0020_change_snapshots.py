"""change_snapshots

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29 05:00:00

The ``change_tracking`` format (service.scrape.snapshots) compares a page with the account's
previous scrape of the same URL and tag: one row per scrape asked with it, the normalised
markdown zlib-compressed and the json mode's extraction, found by (account, URL's SHA-256,
tag) newest first. Rows go with their account (ON DELETE CASCADE). The downgrade drops the
table, and with it every snapshot.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "change_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("url_key", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.String(length=100), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("markdown", sa.LargeBinary(), nullable=False),
        sa.Column("extracted", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_change_snapshots_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_snapshots")),
    )
    op.create_index(
        "ix_change_snapshots_page",
        "change_snapshots",
        ["account_id", "url_key", "tag", "created_at"],
    )
    op.create_index("ix_change_snapshots_created_at", "change_snapshots", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_change_snapshots_created_at", table_name="change_snapshots")
    op.drop_index("ix_change_snapshots_page", table_name="change_snapshots")
    op.drop_table("change_snapshots")
