"""scrape_sessions

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 18:00:00

POST /scrape's ``session`` (service.scrape.sessions) keeps a session's cookies, browser storage
and proxy exit from one call to the next, on every instance: one row per (account, name).
The downgrade drops the table, and with it every session.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scrape_sessions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("exit", sa.String(length=40), nullable=True),
        sa.Column("idle_seconds", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_scrape_sessions_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scrape_sessions")),
        sa.UniqueConstraint("account_id", "name", name="uq_scrape_sessions_account_name"),
    )


def downgrade() -> None:
    op.drop_table("scrape_sessions")
