"""job_pages.url_key and depth: a crawl's frontier in the pages' rows

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 10:30:00

``POST /crawl`` (service.jobs.crawls) adds the pages it finds to its job as it goes. Each page keeps
the SHA-256 of its normalised URL, unique within its job (NULL for a batch's pages, which may
repeat a URL: NULLs never collide), so that two instances finding one link add one page; and
its depth, the link hops from a seed.

On PostgreSQL a crawl's page tasks carry procrastinate locks (service.jobs.crawl_store), and
procrastinate tells its workers of new tasks but not of a lock set free: a task waiting behind
one would wait for the workers' next poll (seconds). Triggers on its jobs table send the same
"job inserted" notification when a crawl's task leaves ``doing``, once that commits, so the
next task of the lock starts at once. The downgrade drops the triggers and both columns.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


LOCK_FREED = """
CREATE FUNCTION scrapespy_crawl_lock_freed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload TEXT;
BEGIN
    SELECT json_build_object('type', 'job_inserted', 'job_id', OLD.id)::text INTO payload;
    PERFORM pg_notify('procrastinate_queue_v1#' || OLD.queue_name, payload);
    PERFORM pg_notify('procrastinate_any_queue_v1', payload);
    RETURN NULL;
END;
$$;
CREATE TRIGGER scrapespy_crawl_lock_freed_update
    AFTER UPDATE OF status ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.lock LIKE 'crawl:%' AND OLD.status = 'doing' AND NEW.status <> 'doing')
    EXECUTE FUNCTION scrapespy_crawl_lock_freed();
CREATE TRIGGER scrapespy_crawl_lock_freed_delete
    AFTER DELETE ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.lock LIKE 'crawl:%' AND OLD.status = 'doing')
    EXECUTE FUNCTION scrapespy_crawl_lock_freed();
"""


def upgrade() -> None:
    op.add_column("job_pages", sa.Column("url_key", sa.String(length=64), nullable=True))
    op.add_column("job_pages", sa.Column("depth", sa.Integer(), nullable=True))
    op.create_index(
        "uq_job_pages_job_seq_url_key", "job_pages", ["job_seq", "url_key"], unique=True
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(LOCK_FREED)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER scrapespy_crawl_lock_freed_delete ON procrastinate_jobs")
        op.execute("DROP TRIGGER scrapespy_crawl_lock_freed_update ON procrastinate_jobs")
        op.execute("DROP FUNCTION scrapespy_crawl_lock_freed()")
    op.drop_index("uq_job_pages_job_seq_url_key", table_name="job_pages")
    with op.batch_alter_table("job_pages") as batch:
        batch.drop_column("depth")
        batch.drop_column("url_key")
