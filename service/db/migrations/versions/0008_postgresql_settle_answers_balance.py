"""PostgreSQL: a settlement that also answers the account's balance after it

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 09:50:00

Every answer of ``POST /scrape`` carries the account's balance once its scrape was settled
(``X-Credits-Remaining``), and it must come back in the settlement's own round trip, not from
another query per scrape. ``scrapespy_settle_balance`` takes the parameters of
``scrapespy_settle``, calls it, and answers its row with the balance read afterwards, in the
same transaction (a statement of its own, so that it sees the settlement's update).

``scrapespy_settle`` itself is left as it is: instances of the previous release, still running
during a rolling upgrade, call it and read its three columns; a function's result type cannot
change in place. Whatever a later migration changes in ``scrapespy_settle`` applies to both.
SQLite has no functions: ``service.billing.ledger.settle`` reads the balance in its own transaction.
"""

from collections.abc import Sequence

from alembic import op

from service.db import sql

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the current function (service.db.sql: the one copy of its text)
SETTLE_BALANCE = sql.load("scrapespy_settle_balance")

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_settle_balance(integer, bigint, boolean, timestamptz,"
    " boolean, integer, text, varchar, varchar, varchar, integer, boolean, boolean, text, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(SETTLE_BALANCE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
