"""The rows of a crawl: its job, its seed pages, and the pages its pages' links add.

A crawl is a job (service.jobs.batch_store) whose pages are its frontier: each found URL that passes
the rules becomes a ``pending`` page in the transaction that stores the result it was found in,
so a page's links are added exactly when its result is, and a crash loses neither. The unique
``(job_seq, url_key)`` index makes a URL one page, whichever instance found it first; the job's
row is locked while pages are added (``finish_page`` locks it on PostgreSQL, SQLite writes one
transaction at a time), so the count stays within ``max_pages``.

On PostgreSQL each new page is handed to procrastinate in the same transaction, through its SQL
function for deferring jobs (``procrastinate_defer_jobs_v1``, of the schema migration 0009
installs): a page is queued if and only if it exists. Each task carries one of
``crawl_pages_per_site`` locks of its crawl; procrastinate runs one task of a lock at a time,
on whichever instance, so a crawl never has more pages in flight at its site than that.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select, text, update

from service.billing import ledger
from service.db.tables import job_pages, jobs
from service.jobs.batch_hot import finish_call_params
from service.jobs.batch_store import ACTIVE, Finish, room_for_a_job
from service.jobs.crawl_rules import Rules, url_key
from service.scrape.order import storable

TASK = "scrapespy.job_page"  # service.jobs.queue.TASK: the task that runs one page

_DEFER = text(
    "SELECT procrastinate_defer_jobs_v1(ARRAY("
    " SELECT ROW('default', :task, 0, 'crawl:' || :job || ':' || t.slot, NULL, t.args, NULL)"
    "::procrastinate_job_to_defer_v1"
    " FROM unnest(CAST(:args AS jsonb[]), CAST(:slot_ids AS bigint[])) AS t(args, slot)"
    "))"
)
# The pages a crawl's task runs, one after the other, under its lock: the pages one page's
# links added, a few at a time. A task each made procrastinate's worker take a task (a query
# that looks past the tasks of busy locks) for every page; one worker's fetches, one after the
# other, capped a crawl at about 240 pages a second here however many its slots.
PAGES_PER_TASK = 4

# Which of a page's links are pages of the job already, on PostgreSQL: one probe of the unique
# (job_seq, url_key) index a link. Asked as ``url_key IN (...)``, the planner read the whole job
# through the index's job_seq alone whenever its statistics said the job was small (a crawl
# growing faster than autovacuum's analyze): 1,700 rows for each page of a 3,000-page crawl. A
# lateral subquery with LIMIT 1 is a probe per link whatever the statistics say.
_KNOWN = text(
    "SELECT k.key FROM unnest(CAST(:keys AS varchar[])) AS k(key)"
    " CROSS JOIN LATERAL (SELECT 1 FROM job_pages AS p"
    "  WHERE p.job_seq = :job AND p.url_key = k.key LIMIT 1) AS found"
)


def create_crawl(
    conn: Connection,
    *,
    public_id: str,
    account_id: int,
    key_id: int,
    key_hash: str,
    options: dict[str, Any],
    seeds: list[str],
    limit: int,
    slots: int,
    webhook: dict[str, Any] | None = None,
) -> int:
    """Stores a crawl (with its webhook, as service.jobs.webhook_spec checked it) and its seed pages
    (normalised, without duplicates, at depth 0); raises TooManyJobs as a batch does. With no
    seed (a sitemap-only crawl of a site without one) the job is completed at once."""
    room_for_a_job(conn, account_id, limit)
    created = ledger.now()
    seq = int(
        conn.execute(
            insert(jobs)
            .values(
                public_id=public_id,
                account_id=account_id,
                key_id=key_id,
                key_hash=key_hash,
                kind="crawl",
                webhook=orjson.dumps(webhook).decode() if webhook else None,
                status="queued" if seeds else "completed",
                options=orjson.dumps(options).decode(),
                total=0,
                enqueued=True,
                created_at=created,
                finished_at=None if seeds else created,
            )
            .returning(jobs.c.seq)
        ).scalar_one()
    )
    add_pages(conn, seq, seeds, 0, options["crawl"]["max_pages"], slots)
    return seq


def add_pages(
    conn: Connection, job_seq: int, urls: list[str], depth: int, max_pages: int, slots: int
) -> int:
    """Adds the URLs (normalised) that are not pages of the job yet, while it has fewer than
    ``max_pages``; returns how many. The caller holds the job's row (see the module)."""
    if not urls:
        return 0
    # the job's count of pages, which only this function adds to (positions 0 to total - 1)
    total = conn.execute(select(jobs.c.total).where(jobs.c.seq == job_seq)).scalar_one()
    room = max_pages - int(total)
    if room <= 0:
        return 0
    keyed = {url_key(url): url for url in urls}
    known = _known(conn, job_seq, list(keyed))
    new = [(key, url) for key, url in keyed.items() if key not in known][:room]
    if not new:
        return 0
    now = ledger.now()
    rows = [
        {
            "job_seq": job_seq,
            "position": int(total) + n,
            "url": storable(url),
            "url_key": key,
            "depth": depth,
            "status": "pending",
            "attempt": 0,
            "updated_at": now,
        }
        for n, (key, url) in enumerate(new)
    ]
    made = conn.execute(insert(job_pages).returning(job_pages.c.id, job_pages.c.position), rows)
    pairs = [(int(row.id), int(row.position)) for row in made]
    conn.execute(update(jobs).where(jobs.c.seq == job_seq).values(total=int(total) + len(rows)))
    if conn.dialect.name == "postgresql":
        tasks = [
            pairs[start : start + PAGES_PER_TASK] for start in range(0, len(pairs), PAGES_PER_TASK)
        ]
        conn.execute(
            _DEFER,
            {
                "task": TASK,
                "job": str(job_seq),
                "args": [
                    orjson.dumps(
                        {"page_ids": [page for page, _ in task], "job_seq": job_seq}
                    ).decode()
                    for task in tasks
                ],
                # each task's lock: one of the crawl's ``slots``, in turn
                "slot_ids": [task[0][1] // PAGES_PER_TASK % slots for task in tasks],
            },
        )
    return len(rows)


def _known(conn: Connection, job_seq: int, keys: list[str]) -> set[str]:
    """Which of ``keys`` are the url_keys of pages of the job already."""
    if conn.dialect.name == "postgresql":
        return set(conn.execute(_KNOWN, {"job": job_seq, "keys": keys}).scalars())
    known: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        known.update(
            conn.execute(
                select(job_pages.c.url_key).where(
                    job_pages.c.job_seq == job_seq, job_pages.c.url_key.in_(chunk)
                )
            ).scalars()
        )
    return known


def add_links(
    conn: Connection,
    job_seq: int,
    page_id: int,
    links: list[str],
    slots: int,
    crawl: dict[str, Any] | None = None,
) -> int:
    """The links of a crawl's page whose result is being stored, as new pages one hop deeper,
    within the crawl's rules, depth and size; nothing for a batch's page, nor once the crawl
    stopped (cancelled, out of credits: its pending pages were skipped, and stay so), nor once
    it has its ``max_pages``. ``crawl``: the job's crawl options, when the caller has them."""
    found = conn.execute(
        select(jobs.c.total, job_pages.c.depth, jobs.c.options if crawl is None else jobs.c.seq)
        .join(jobs, jobs.c.seq == job_pages.c.job_seq)
        .where(job_pages.c.id == page_id, jobs.c.kind == "crawl", jobs.c.status.in_(ACTIVE))
    ).one_or_none()
    if found is None or found[1] is None:
        return 0
    total, depth = int(found[0]), int(found[1])
    if crawl is None:
        crawl = orjson.loads(found[2])["crawl"]
    if total >= crawl["max_pages"] or depth >= crawl["max_depth"] or crawl["sitemap"] == "only":
        return 0
    return add_pages(conn, job_seq, accepted(crawl, links), depth + 1, crawl["max_pages"], slots)


def accepted(crawl: dict[str, Any], links: list[str]) -> list[str]:
    """The links a crawl's rules accept, normalised, each once, in their order."""
    rules = _rules(orjson.dumps(crawl["rules"], option=orjson.OPT_SORT_KEYS))
    kept: dict[str, None] = {}
    for link in links:
        url = rules.accepts(link)
        if url is not None:
            kept[url] = None
    return list(kept)


def finish_crawl_params(
    finish: Finish, job_seq: int, crawl: dict[str, Any], links: list[str], slots: int
) -> dict[str, Any]:
    """The parameters of ``pg_finish_crawl_page`` (migration 0015), which does on the database
    server what ``batch_store.finish_pages`` does with ``add_links`` for a crawl's page."""
    keyed = {} if crawl["sitemap"] == "only" else {url_key(u): u for u in accepted(crawl, links)}
    return {
        **finish_call_params(finish, job_seq),
        "urls": list(keyed.values()),
        "keys": list(keyed),
        "max_pages": crawl["max_pages"],
        "max_depth": crawl["max_depth"],
        "slots": slots,
        "task": TASK,
        "per_task": PAGES_PER_TASK,
    }


@lru_cache(maxsize=64)
def _rules(stored: bytes) -> Rules:
    """A crawl's rules, made once for all its pages."""
    return Rules.from_stored(orjson.loads(stored))
