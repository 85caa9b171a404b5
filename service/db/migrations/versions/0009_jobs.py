"""jobs, job_pages and idempotency_keys; on PostgreSQL, the job queue's own schema

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 10:00:00

``POST /batch`` stores a job and one row per page (service.jobs.batches); ``Idempotency-Key`` stores
the first answer to a key (service.billing.idempotency). On PostgreSQL the pages are run through
procrastinate's queue, whose tables, functions and triggers this migration creates from the
schema of the procrastinate release the service depends on (pyproject.toml pins its major
version). A later procrastinate release that changes its schema ships SQL migrations of its
own: apply them in a revision of ours when raising the pin. SQLite runs a job's pages in the one
process and has no queue schema. The downgrade drops our tables and leaves procrastinate's,
which hold nothing of ours once the pages are gone.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("enqueued", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'completed', 'cancelled', 'failed',"
            " 'insufficient_credits')",
            name=op.f("ck_jobs_status_known"),
        ),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_jobs_account_id_accounts")
        ),
        sa.ForeignKeyConstraint(["key_id"], ["api_keys.id"], name=op.f("fk_jobs_key_id_api_keys")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_jobs")),
        sa.UniqueConstraint("public_id", name=op.f("uq_jobs_public_id")),
    )
    op.create_index("ix_jobs_account_seq", "jobs", ["account_id", "seq"])
    op.create_index("ix_jobs_status", "jobs", ["status"])
    op.create_table(
        "job_pages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_seq", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("hold_id", sa.Integer(), nullable=True),
        sa.Column("instance", sa.String(length=64), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'running', 'done', 'failed', 'blocked', 'skipped')",
            name=op.f("ck_job_pages_status_known"),
        ),
        sa.ForeignKeyConstraint(
            ["job_seq"],
            ["jobs.seq"],
            name=op.f("fk_job_pages_job_seq_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["hold_id"], ["holds.id"], name=op.f("fk_job_pages_hold_id_holds")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_pages")),
        sa.UniqueConstraint("job_seq", "position", name="uq_job_pages_job_seq_position"),
    )
    op.create_index("ix_job_pages_status_id", "job_pages", ["status", "id"])
    op.create_table(
        "idempotency_keys",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("endpoint", sa.String(length=16), nullable=False),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("running_until", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_idempotency_keys_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("account_id", "key", name=op.f("pk_idempotency_keys")),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])
    if op.get_bind().dialect.name == "postgresql":
        from procrastinate.schema import SchemaManager

        # on the driver's own cursor, without parameters: the schema's text is run as it is
        cursor = op.get_bind().connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.execute(SchemaManager.get_schema())
        cursor.close()


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_created_at", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
    op.drop_index("ix_job_pages_status_id", table_name="job_pages")
    op.drop_table("job_pages")
    op.drop_index("ix_jobs_status", table_name="jobs")
    op.drop_index("ix_jobs_account_seq", table_name="jobs")
    op.drop_table("jobs")
