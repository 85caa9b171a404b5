"""PostgreSQL: a crawl's page finishes in one round trip

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 15:50:00

A crawl's page stored its result and added its links in a transaction of SQLAlchemy's on a
database thread: seven statements a page, one transaction in flight at a time
(service.db.grouped), with the crawl's row locked while the links are added. In a 3,000-page
crawl the finish took 20 to 37 ms a page (median) and capped the crawl at about 250 pages a
second, whatever its slots. ``scrapespy_finish_crawl_page`` does the same work in one call on
the reactor, for a crawl without a webhook (whose events are rows of their own, written by the
general way):

- stores the attempt's result (only the attempt that holds the page may);
- locks the crawl's row, and while the crawl is active, the page within ``max_depth`` and the
  crawl under ``max_pages``, adds the links (the service filtered them by the crawl's rules and
  normalised them) that are not pages yet, one hop deeper, in positions after the last, and
  queues them in procrastinate tasks of ``p_per_task`` pages, each under one of the crawl's
  ``p_slots`` locks in turn (service.jobs.crawl_store.add_pages does the same);
- completes the crawl when no page is left.

It commits without waiting for its WAL flush, as the batch's finish does (migration 0013).

Its statements are planned for each call's values (``plan_cache_mode = force_custom_plan``):
PL/pgSQL's cached generic plans read every page of the crawl through the ``(job_seq, status)``
index for each page (8,600 rows a page in a 10,000-page crawl, 3.8 ms of the server's CPU a
page against 1.5 with custom plans; the crawl at 0.76x to 0.88x CrawlSpider against 1.22x).
The same setting on the batch's two functions measured no gain: they keep their cached plans.
"""

from collections.abc import Sequence

from alembic import op

from service.db import sql

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the current function (service.db.sql: the one copy of its text)
FINISH_CRAWL_PAGE = sql.load("scrapespy_finish_crawl_page")

DROP = (
    "DROP FUNCTION IF EXISTS scrapespy_finish_crawl_page(integer, integer, varchar, text,"
    " timestamptz, integer, text[], text[], integer, integer, integer, varchar, integer)"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(FINISH_CRAWL_PAGE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(DROP)
