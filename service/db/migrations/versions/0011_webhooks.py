"""jobs.webhook, webhook_secrets and webhook_deliveries

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 11:00:00

A job may name a webhook (service.jobs.webhooks): its events are stored as deliveries in the
transaction that makes each event, and sent, signed with the account's secret, by the service's
delivery loop. The downgrade drops the tables and the column, and with them the secrets.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("webhook", sa.Text(), nullable=True))
    op.create_table(
        "webhook_secrets",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("secret", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_secrets_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_webhook_secrets")),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("job_seq", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("event", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered', 'failed')",
            name=op.f("ck_webhook_deliveries_status_known"),
        ),
        sa.ForeignKeyConstraint(
            ["job_seq"],
            ["jobs.seq"],
            name=op.f("fk_webhook_deliveries_job_seq_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_webhook_deliveries_account_id_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("message_id", name=op.f("uq_webhook_deliveries_message_id")),
    )
    op.create_index(
        "ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"]
    )
    op.create_index("ix_webhook_deliveries_job_seq", "webhook_deliveries", ["job_seq"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_job_seq", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_secrets")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("webhook")
