"""PostgreSQL: a batch's page settles and stores its result in one call

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 22:40:00

A page of a job with neither webhook nor crawl took three calls on the reactor: its start
(claim and hold, migration 0013), the settlement the billing pipeline sends for every scrape
(0008), and its finish (0016); ``POST /scrape`` takes two. In a 1,000-page batch at 32 pages in
flight each call waited about 20 ms for one of the reactor's connections, and the batch ran at
0.82x the rate of the same pages sent as scrapes (docs/architecture.md, "Where the PostgreSQL
batch waits").

``scrapespy_settle_finish_page`` does the last two in one transaction: it settles the page's
hold by ``scrapespy_settle`` (the same capture or release, at most once, with its usage row and
ledger entry), then stores the result and completes the job by ``scrapespy_finish_page``. It
commits durably, as every settlement does (the finish's asynchronous commit is undone), and its
flush carries the page's start with it.

The result the service sends already says what the settlement charges (``credits_charged``):
the pipeline computed the cost from the outcome, as the settlement does. The two differ only
when the hold was settled before (the watchdog or the sweeper released it): then nothing is
charged, the result is not stored, and the row's charge says so; the service stores the
result with what was charged by ``scrapespy_finish_page``. A settlement and its result are
otherwise never apart: an instance that dies before the call leaves a hold that expires,
unbilled, and a page that another attempt takes over.
"""

from collections.abc import Sequence

from alembic import op

from service.db import sql

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the current function (service.db.sql: the one copy of its text)
SETTLE_FINISH_PAGE = sql.load("scrapespy_settle_finish_page")

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_settle_finish_page(integer, bigint, boolean,"
    " timestamptz, boolean, integer, text, varchar, varchar, varchar, integer, boolean,"
    " boolean, text, integer, integer, integer, varchar, text, timestamptz, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(SETTLE_FINISH_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
