"""web_sessions: the new API key waiting to be shown once

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 07:00:00

Making a key answers with a redirect to the page that shows it (Post/Redirect/Get), so that a
reload never makes another key. Between the two requests the key waits in the session's row,
sealed with a key derived from the session's cookie (which the database never holds), for a few
minutes at most, and is deleted as it is shown.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pending_key", sa.String(length=255), nullable=True))
        batch_op.add_column(
            sa.Column("pending_key_until", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.drop_column("pending_key_until")
        batch_op.drop_column("pending_key")
