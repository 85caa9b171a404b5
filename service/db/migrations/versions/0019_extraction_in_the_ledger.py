"""The language model's share of a scrape's charge: a ledger entry and a usage column

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 20:45:00

A scrape that asks the operator's language model (``json.prompt``, ``summary``) costs the page's
price and its tokens' (pipelines.llm), captured together from one hold. The ledger now records
them apart: the settlement writes an entry of kind ``scrape`` for the page and one of kind
``extraction`` for the tokens, both naming the hold (``hold:<id>``), each with the balance after
it; and the usage row says, in ``extraction_credits``, how much of its ``credits`` the tokens
cost. A scrape without the model writes one entry, as before.

On PostgreSQL ``scrapespy_settle`` and the two functions that call it (``scrapespy_settle_balance``,
0008; ``scrapespy_settle_finish_page``, 0017) take the share as one more parameter, last and
0 by default, so that an instance of the previous release still settles as it did; their
previous versions, frozen in those migrations, come back with the downgrade. The downgrade
turns each ``extraction`` entry into a ``scrape`` entry (the balance still equals the sum of
the entries) and drops the column.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from service.db import migration, sql

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_USAGE_TYPES = (
    "integer, bigint, boolean, timestamptz, boolean, integer, text, varchar, varchar, varchar,"
    " integer, boolean, boolean, text, integer"
)
_PAGE_TYPES = "integer, integer, varchar, text, timestamptz, integer"
# the signatures before this migration, and after it (the share last, 0 by default: an instance
# of the previous release still calls them without it)
DROP_OLD = (
    f"DROP FUNCTION IF EXISTS scrapespy_settle_finish_page({_USAGE_TYPES}, {_PAGE_TYPES})",
    f"DROP FUNCTION IF EXISTS scrapespy_settle_balance({_USAGE_TYPES})",
    f"DROP FUNCTION IF EXISTS scrapespy_settle({_USAGE_TYPES})",
)
DROP_NEW = (
    f"DROP FUNCTION IF EXISTS scrapespy_settle_finish_page({_USAGE_TYPES}, {_PAGE_TYPES}, bigint)",
    f"DROP FUNCTION IF EXISTS scrapespy_settle_balance({_USAGE_TYPES}, bigint)",
    f"DROP FUNCTION IF EXISTS scrapespy_settle({_USAGE_TYPES}, bigint)",
)
KINDS = "kind IN ('grant', 'purchase', 'scrape', 'extraction')"
OLD_KINDS = "kind IN ('grant', 'purchase', 'scrape')"
CHECK = "ck_ledger_entries_kind_known"


def upgrade() -> None:
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(CHECK), type_="check")
        batch_op.create_check_constraint(op.f(CHECK), KINDS)
    with op.batch_alter_table("usage", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("extraction_credits", sa.BigInteger(), nullable=False, server_default="0")
        )
    if op.get_bind().dialect.name != "postgresql":
        return
    for drop in DROP_OLD:
        op.execute(drop)
    op.execute(sql.load("scrapespy_settle"))
    op.execute(sql.load("scrapespy_settle_balance"))
    op.execute(sql.load("scrapespy_settle_finish_page"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for drop in DROP_NEW:
            op.execute(drop)
        op.execute(migration("0007_several_api_keys.py").SETTLE)
        op.execute(migration("0008_postgresql_settle_answers_balance.py").SETTLE_BALANCE)
        op.execute(
            migration("0017_postgresql_batch_page_settles_with_its_result.py").SETTLE_FINISH_PAGE
        )
    op.execute("UPDATE ledger_entries SET kind = 'scrape' WHERE kind = 'extraction'")
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(CHECK), type_="check")
        batch_op.create_check_constraint(op.f(CHECK), OLD_KINDS)
    with op.batch_alter_table("usage", schema=None) as batch_op:
        batch_op.drop_column("extraction_credits")
