"""monitors and their checks

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29 05:00:00

Scheduled monitors (service.jobs.monitors): a URL or a crawl run as a job on a schedule, each
run a check. The downgrade drops both tables, and with them every monitor.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "monitors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("webhook", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("paused_reason", sa.String(length=24), nullable=True),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unpaid_runs", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('active', 'paused')", name=op.f("ck_monitors_status_known")),
        sa.CheckConstraint("kind IN ('url', 'crawl')", name=op.f("ck_monitors_kind_known")),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_monitors_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["key_id"], ["api_keys.id"], name=op.f("fk_monitors_key_id_api_keys")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_monitors")),
        sa.UniqueConstraint("public_id", name=op.f("uq_monitors_public_id")),
    )
    op.create_index("ix_monitors_account_id", "monitors", ["account_id", "id"])
    op.create_index("ix_monitors_due", "monitors", ["status", "next_run_at"])
    op.create_table(
        "monitor_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("monitor_id", sa.Integer(), nullable=False),
        sa.Column("job_seq", sa.Integer(), nullable=True),
        sa.Column("job_public_id", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("changed", sa.Boolean(), nullable=False),
        sa.Column("credits_charged", sa.BigInteger(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'completed', 'failed', 'insufficient_credits', 'cancelled')",
            name=op.f("ck_monitor_checks_status_known"),
        ),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_monitor_checks_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_seq"],
            ["jobs.seq"],
            name=op.f("fk_monitor_checks_job_seq_jobs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_monitor_checks")),
    )
    op.create_index("ix_monitor_checks_monitor_id", "monitor_checks", ["monitor_id", "id"])
    op.create_index("ix_monitor_checks_running", "monitor_checks", ["status"])


def downgrade() -> None:
    op.drop_table("monitor_checks")
    op.drop_table("monitors")
