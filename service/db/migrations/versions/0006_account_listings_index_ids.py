"""usage and ledger_entries: the account's rows indexed by (created_at, id)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 09:10:00

``GET /usage`` and ``GET /ledger`` walk an account's rows newest first by ``(created_at, id)``,
a cursor carrying the last row's pair, so that rows written in the same microsecond are neither
skipped nor repeated. With ``id`` in the index a page is one range of it, already in order, on
both databases (SQLite appends the rowid to every index anyway; PostgreSQL would otherwise sort
the ties). The new index replaces the old one, of which it is an extension: a scrape still
writes one index entry per usage row, and the dashboard's queries use the new one the same way.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REPLACED = {
    "usage": ("ix_usage_account_created", "ix_usage_account_created_id"),
    "ledger_entries": ("ix_ledger_entries_account_created", "ix_ledger_entries_account_created_id"),
}


def upgrade() -> None:
    for table, (old, new) in REPLACED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(new, ["account_id", "created_at", "id"], unique=False)
            batch_op.drop_index(old)


def downgrade() -> None:
    for table, (old, new) in REPLACED.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(old, ["account_id", "created_at"], unique=False)
            batch_op.drop_index(new)
