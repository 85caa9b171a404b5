"""The rows of jobs and their pages (migration 0009): each function is one transaction's work.

A page moves ``pending`` -> ``running`` -> ``done`` | ``failed`` | ``blocked``, or to ``skipped``
when its job stopped first. Claiming a page counts one more ``attempt`` and records the instance;
the hold of the attempt is written in the transaction that makes it (service.jobs.batches), and a
result is stored only by the attempt that claimed it, so a page taken over after a crash cannot
be finished twice. What a job charged is never stored: it is summed from the usage rows of its
pages' holds, which the ledger writes in the settlement's own transaction, so it is exact at
any moment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import orjson
from sqlalchemy import Connection, and_, delete, exists, func, insert, select, update

from service.billing import ledger
from service.billing.answers import Page
from service.db import hot
from service.db.hot import HotConnection
from service.db.tables import holds, idempotency_keys, job_pages, jobs, usage
from service.db.times import timestamp
from service.jobs import webhook_store
from service.jobs.answers import Counts, Job, JobItem, JobResult, JobSummary
from service.scrape.order import storable

ACTIVE = ("queued", "running")
FINISHED_PAGE = ("done", "failed", "blocked")
DONE_PAGE = (*FINISHED_PAGE, "skipped")
# a page's webhook delivery carries its result up to this size (a POST body receivers accept)
WEBHOOK_RESULT_MAX_BYTES = 256 * 1024


def _same(value: Any) -> Any:
    return value


class TooManyJobs(Exception):
    def __init__(self, limit: int):
        super().__init__(f"{limit} jobs in flight")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Claim:
    """One attempt at one page: what to scrape, for whom, and a hold already captured."""

    page_id: int
    job_seq: int
    attempt: int
    url: str
    options: dict[str, Any]
    key_hash: str
    paid_hold: int | None  # a hold of an earlier attempt that was captured: billed already
    tells_pages: bool = False  # the job's webhook wants each page's result (finish_page)
    hot: bool = False  # the job's pages take the hot path (JobTerms.hot)


def room_for_a_job(conn: Connection, account_id: int, limit: int) -> None:
    """Locks the account's row and raises TooManyJobs when it has ``limit`` jobs in flight: the
    check every job (batch or crawl) makes before it is stored, in the same transaction."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "SELECT 1 FROM accounts WHERE id = %(id)s FOR NO KEY UPDATE", {"id": account_id}
        )
    in_flight = conn.execute(
        select(func.count())
        .select_from(jobs)
        .where(jobs.c.account_id == account_id, jobs.c.status.in_(ACTIVE))
    ).scalar_one()
    if in_flight >= limit:
        raise TooManyJobs(limit)


def create_job(
    conn: Connection,
    *,
    public_id: str,
    account_id: int,
    key_id: int,
    key_hash: str,
    options: dict[str, Any],
    urls: list[str],
    limit: int,
    webhook: dict[str, Any] | None = None,
    kind: str = "batch",
) -> int:
    """Stores a job and its pages; raises TooManyJobs when the account has ``limit`` in flight.

    The account's row is locked first (SQLite's BEGIN IMMEDIATE does it for the whole
    database), so two jobs made at once cannot both fit under the limit."""
    room_for_a_job(conn, account_id, limit)
    created = ledger.now()
    seq = conn.execute(
        insert(jobs)
        .values(
            public_id=public_id,
            account_id=account_id,
            key_id=key_id,
            key_hash=key_hash,
            kind=kind,
            status="queued",
            options=orjson.dumps(options).decode(),
            webhook=orjson.dumps(webhook).decode() if webhook else None,
            total=len(urls),
            enqueued=False,
            created_at=created,
        )
        .returning(jobs.c.seq)
    ).scalar_one()
    conn.execute(
        insert(job_pages),
        [
            {
                "job_seq": seq,
                "position": position,
                "url": storable(url),
                "status": "pending",
                "attempt": 0,
                "updated_at": created,
            }
            for position, url in enumerate(urls)
        ],
    )
    return int(seq)


def page_ids(conn: Connection, job_seq: int) -> list[int]:
    return list(
        conn.execute(
            select(job_pages.c.id)
            .where(job_pages.c.job_seq == job_seq, job_pages.c.status == "pending")
            .order_by(job_pages.c.position)
        ).scalars()
    )


def mark_enqueued(conn: Connection, job_seq: int) -> None:
    conn.execute(update(jobs).where(jobs.c.seq == job_seq).values(enqueued=True))


def not_enqueued(conn: Connection, older_than: timedelta) -> list[int]:
    """Jobs whose pages were never handed to the queue: their instance died right after
    storing them."""
    return list(
        conn.execute(
            select(jobs.c.seq).where(
                jobs.c.enqueued.is_(False),
                jobs.c.status.in_(ACTIVE),
                jobs.c.created_at < ledger.now() - older_than,
            )
        ).scalars()
    )


def next_pages(
    conn: Connection,
    busy: set[int],
    limit: int,
    dead: Callable[[str | None], bool],
    per_crawl: int | None = None,
) -> list[tuple[int, int, int]]:
    """SQLite: the next pages to run, with the attempt each is at and its job: the active jobs'
    in the order they were made, each job's oldest first. A page left ``running`` by a process
    that is gone (``dead``: it stopped or died) is among them: it is taken over. Those of live
    processes (``scrapespy serve --workers``) are not. A crawl has at most ``per_crawl`` pages
    running or ``busy``, whichever process runs them (its politeness to its site,
    service.jobs.crawls). Each job's pending pages are read by the ``(job_seq, status)`` index, as
    many as are wanted: a crawl with thousands of pages left costs no more than a small one."""
    found: list[tuple[int, int, int]] = []
    active = conn.execute(
        select(jobs.c.seq, jobs.c.kind).where(jobs.c.status.in_(ACTIVE)).order_by(jobs.c.seq)
    ).all()
    for job_seq, kind in active:
        want = limit - len(found)
        if want <= 0:
            break
        running = conn.execute(
            select(job_pages.c.id, job_pages.c.attempt, job_pages.c.instance).where(
                job_pages.c.job_seq == job_seq, job_pages.c.status == "running"
            )
        ).all()
        if per_crawl is not None and kind == "crawl":
            in_flight = sum(1 for row in running if row.id in busy or not dead(row.instance))
            if busy:  # this process's pages of the crawl picked and not claimed yet
                in_flight += conn.execute(
                    select(func.count()).where(
                        job_pages.c.job_seq == job_seq,
                        job_pages.c.status == "pending",
                        job_pages.c.id.in_(busy),
                    )
                ).scalar_one()
            want = min(want, per_crawl - in_flight)
            if want <= 0:
                continue
        taken = [
            (row.id, row.attempt, job_seq)
            for row in running
            if row.id not in busy and dead(row.instance)
        ][:want]
        if len(taken) < want:
            pending = conn.execute(
                select(job_pages.c.id, job_pages.c.attempt)
                .where(job_pages.c.job_seq == job_seq, job_pages.c.status == "pending")
                .order_by(job_pages.c.id)
                .limit(want - len(taken) + len(busy))
            )
            for row in pending:
                if row.id not in busy:
                    taken.append((row.id, row.attempt, job_seq))
                    if len(taken) >= want:
                        break
        found.extend(taken)
    return found


@dataclass(frozen=True, slots=True)
class JobTerms:
    """What every page of a job is scraped with, for whom: set when the job is made, and never
    changed, so that an instance may keep them (service.jobs.batches)."""

    options: dict[str, Any]
    key_hash: str
    tells_pages: bool  # the job's webhook wants each page's result (finish_page)
    quiet: bool  # the job has no webhook: its results write no event rows

    @property
    def hot(self) -> bool:
        """A job with neither webhook nor crawl: its pages' results are stored by the hot
        path's statements (service.db.hot), without a transaction of SQLAlchemy's (each finish
        locks the job's row before it counts the pages left, whichever way it takes)."""
        return _hot(self.options, self.quiet)

    @property
    def hot_crawl(self) -> bool:
        """A crawl without webhook: on PostgreSQL its pages' results and links are stored by
        one call (migration 0015)."""
        return self.quiet and "crawl" in self.options


def job_terms(conn: Connection, job_seq: int) -> JobTerms | None:
    """A job's terms (None when it is gone); the first time an instance reads them, the job
    starts (``running``) if it had not."""
    row = conn.execute(
        select(jobs.c.options, jobs.c.key_hash, jobs.c.webhook).where(jobs.c.seq == job_seq)
    ).one_or_none()
    if row is None:
        return None
    _start_job(conn, job_seq)
    return JobTerms(
        orjson.loads(row.options), row.key_hash, _tells_pages(row.webhook), not row.webhook
    )


def _hot(options: dict[str, Any], quiet: bool) -> bool:
    """A job with neither webhook (``quiet``) nor crawl (JobTerms.hot)."""
    return quiet and "crawl" not in options


def _tells_pages(webhook: str | None) -> bool:
    return bool(webhook) and "page" in orjson.loads(webhook or "{}").get("events", ())


def _start_job(conn: Connection, job_seq: int) -> None:
    started = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status == "queued")
        .values(status="running")
    ).rowcount
    if started:
        _tell(conn, job_seq, "running")


def claim_page(
    conn: Connection, page_id: int, instance: str, seen_attempt: int | None = None
) -> Claim | None:
    """Starts one more attempt at a page, or None when there is nothing to do (or, with
    ``seen_attempt``, when the page is no longer at that attempt: another process claimed it).

    A page already ``running`` was left by an attempt that died (the queue runs one attempt
    of a page at a time). Its hold says what happened: still held, it is released here (a
    conditional update: should the dead attempt settle after all, it finds it settled and
    charges nothing); captured, the page was billed, and the new attempt must not be billed
    again; released or expired, nothing was charged and the page is scraped afresh.
    """
    query = (
        select(
            job_pages.c.status,
            job_pages.c.attempt,
            job_pages.c.hold_id,
            job_pages.c.url,
            jobs.c.seq,
            jobs.c.status.label("job_status"),
            jobs.c.options,
            jobs.c.key_hash,
            jobs.c.webhook,
        )
        .join(jobs, jobs.c.seq == job_pages.c.job_seq)
        .where(job_pages.c.id == page_id)
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(of=job_pages)
    row = conn.execute(query).one_or_none()
    if row is None or row.status in DONE_PAGE:
        return None
    if seen_attempt is not None and row.attempt != seen_attempt:
        return None
    now = ledger.now()
    if row.job_status not in ACTIVE:
        conn.execute(
            update(job_pages)
            .where(job_pages.c.id == page_id)
            .values(status="skipped", updated_at=now)
        )
        return None
    paid_hold = None
    if row.hold_id is not None:
        if ledger.release(conn, row.hold_id).settled_here:
            status = "released"
        else:  # settled before: by the dead attempt, or expired by the sweeper
            status = conn.execute(
                select(holds.c.status).where(holds.c.id == row.hold_id)
            ).scalar_one()
        if status == "captured" and _charged(conn, row.hold_id):
            paid_hold = row.hold_id
    attempt = row.attempt + 1
    conn.execute(
        update(job_pages)
        .where(job_pages.c.id == page_id)
        .values(
            status="running", attempt=attempt, instance=instance, hold_id=paid_hold, updated_at=now
        )
    )
    if row.job_status == "queued":  # its first page: the job starts
        _start_job(conn, row.seq)
    options = orjson.loads(row.options)
    return Claim(
        page_id,
        row.seq,
        attempt,
        row.url,
        options,
        row.key_hash,
        paid_hold,
        _tells_pages(row.webhook),
        _hot(options, not row.webhook),
    )


def _charged(conn: Connection, hold_id: int) -> bool:
    """Whether a captured hold is still charged: a refund (pipelines.billing) may undo it."""
    credits = conn.execute(
        select(usage.c.credits, usage.c.trial).where(usage.c.hold_id == hold_id)
    ).one_or_none()
    return credits is None or bool(credits.credits or credits.trial)


def set_hold(conn: Connection, page_id: int, attempt: int, hold_id: int) -> bool:
    """Records the hold of an attempt, in the transaction that made it."""
    return (
        conn.execute(
            update(job_pages)
            .where(
                job_pages.c.id == page_id,
                job_pages.c.attempt == attempt,
                job_pages.c.status == "running",
            )
            .values(hold_id=hold_id)
        ).rowcount
        == 1
    )


@dataclass(frozen=True, slots=True)
class Finish:
    """An attempt's result, to store (:func:`finish_pages`)."""

    page_id: int
    attempt: int
    status: str
    result: str | None
    # adds the pages a crawl's page led to (service.jobs.crawl_store), in the same transaction
    found: Callable[[Connection, int], Any] | None = None
    job_seq: int | None = None  # the page's job, when its claim read it
    tell_page: bool = True  # False when the claim saw that the job's webhook wants no pages


def finish_page(
    conn: Connection,
    page_id: int,
    attempt: int,
    status: str,
    result: str | None,
    found: Callable[[Connection, int], Any] | None = None,
) -> bool:
    """Stores one attempt's result: :func:`finish_pages` of one."""
    return finish_pages(conn, [Finish(page_id, attempt, status, result, found)])[0]


def finish_pages(conn: Connection, finishes: list[Finish]) -> list[bool]:
    """Stores attempts' results (only the attempt that holds a page may: each says whether it
    did), and completes each job whose last page this was. A crawl's page adds the pages it
    led to before its job is seen to be done.

    On PostgreSQL the rows of the pages' jobs are locked first, in the order of their ids (two
    instances' transactions never wait for each other in a circle): two instances finishing a
    job's last two pages at once would each see the other's page still running, and neither
    would complete it; and a crawl's pages are added under the lock, so that two instances never
    pass its ``max_pages`` together."""
    seqs: list[int | None] = []
    for finish in finishes:
        job_seq = finish.job_seq
        if job_seq is None:
            job_seq = conn.execute(
                select(job_pages.c.job_seq).where(job_pages.c.id == finish.page_id)
            ).scalar_one_or_none()
        seqs.append(job_seq)
    touched = sorted({seq for seq in seqs if seq is not None})
    if conn.dialect.name == "postgresql":
        for job_seq in touched:
            _lock_job(conn, job_seq)
    done: list[bool] = []
    for finish, job_seq in zip(finishes, seqs, strict=True):
        stored = job_seq is not None and bool(
            conn.execute(
                update(job_pages)
                .where(
                    job_pages.c.id == finish.page_id,
                    job_pages.c.attempt == finish.attempt,
                    job_pages.c.status == "running",
                )
                .values(status=finish.status, result=finish.result, updated_at=ledger.now())
            ).rowcount
        )
        done.append(stored)
        if not stored or job_seq is None:
            continue
        if finish.found is not None:
            finish.found(conn, job_seq)
        if finish.tell_page:
            _tell_page(conn, job_seq, finish.page_id)
    for job_seq in touched:
        _complete_if_done(conn, job_seq)
    return done


# the hot path (service.db.hot): on SQLite, each function is one transaction of
# Database.run_hot; on PostgreSQL each statement is one call on the reactor (Database.call)


def claim_params(
    page_id: int, instance: str, seen_attempt: int | None, date: Callable[[Any], Any] = _same
) -> dict[str, Any]:
    return {
        "page_id": page_id,
        "instance": instance,
        "seen": seen_attempt,
        "now": date(ledger.now()),
    }


def hold_params(page_id: int, attempt: int, hold_id: int) -> dict[str, Any]:
    return {"page_id": page_id, "attempt": attempt, "hold_id": hold_id}


def finish_params(finish: Finish, date: Callable[[Any], Any] = _same) -> dict[str, Any]:
    return {
        "page_id": finish.page_id,
        "attempt": finish.attempt,
        "status": finish.status,
        "result": finish.result,
        "now": date(ledger.now()),
    }


def complete_params(job_seq: int, date: Callable[[Any], Any] = _same) -> dict[str, Any]:
    return {"job_seq": job_seq, "now": date(ledger.now())}


def finish_call_params(finish: Finish, job_seq: int) -> dict[str, Any]:
    return {**finish_params(finish), "job_seq": job_seq}


def _row(conn: HotConnection, statement: str, params: dict[str, Any]) -> Any:
    cur = hot.cursor(conn)
    hot.writing(conn)
    cur.execute(hot.hot_path(conn).sql[statement], params)
    return cur.fetchone()


def claim_hot(
    conn: HotConnection, page_id: int, instance: str, seen_attempt: int | None
) -> tuple[int, str, int] | None:
    """The claim of a page no attempt has started, of a job still active, by the hot path's
    statement: (its job, its URL, the attempt), or None when the page is not such a page, for
    :func:`claim_page` to say what it is."""
    date = hot.hot_path(conn).date
    row = _row(conn, "page_claim", claim_params(page_id, instance, seen_attempt, date))
    return None if row is None else (int(row[0]), str(row[1]), int(row[2]))


def set_hold_hot(conn: HotConnection, page_id: int, attempt: int, hold_id: int) -> bool:
    return _row(conn, "page_hold", hold_params(page_id, attempt, hold_id)) is not None


def finish_hot_all(conn: HotConnection, finishes: list[tuple[Finish, int]]) -> list[bool]:
    """SQLite: stores the results of hot jobs' pages that finished together and completes each
    job when no page is left, in one transaction (PostgreSQL: ``scrapespy_finish_page``,
    service.jobs.batches); whether each result was stored (only the attempt holding its
    page may)."""
    date = hot.hot_path(conn).date
    stored = [
        _row(conn, "page_finish", finish_params(finish, date)) is not None for finish, _ in finishes
    ]
    for job_seq in sorted({job_seq for _, job_seq in finishes}):
        _row(conn, "job_complete", complete_params(job_seq, date))
    return stored


def _lock_job(conn: Connection, job_seq: int) -> None:
    conn.execute(select(jobs.c.seq).where(jobs.c.seq == job_seq).with_for_update())


def _complete_if_done(conn: Connection, job_seq: int) -> None:
    left = exists().where(
        job_pages.c.job_seq == job_seq, job_pages.c.status.in_(("pending", "running"))
    )
    completed = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status.in_(ACTIVE), ~left)
        .values(status="completed", finished_at=ledger.now())
    ).rowcount
    if completed:
        _tell(conn, job_seq, "completed")


def release_page(conn: Connection, page_id: int, attempt: int) -> None:
    """An attempt that could not run (its job stopped before its hold): the page is skipped."""
    job_seq = conn.execute(
        select(job_pages.c.job_seq).where(job_pages.c.id == page_id)
    ).scalar_one_or_none()
    if job_seq is None:
        return
    if conn.dialect.name == "postgresql":
        conn.execute(select(jobs.c.seq).where(jobs.c.seq == job_seq).with_for_update())
    skipped = conn.execute(
        update(job_pages)
        .where(job_pages.c.id == page_id, job_pages.c.attempt == attempt)
        .values(status="skipped", updated_at=ledger.now())
    ).rowcount
    if skipped:
        _complete_if_done(conn, job_seq)


def stop_job(conn: Connection, job_seq: int, status: str, error: str | None) -> bool:
    """Stops an active job (``cancelled``, ``insufficient_credits`` or ``failed``): its pending
    pages are skipped; pages already running finish and settle as any scrape does."""
    stopped = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status.in_(ACTIVE))
        .values(status=status, error=error, finished_at=ledger.now())
    ).rowcount
    conn.execute(
        update(job_pages)
        .where(job_pages.c.job_seq == job_seq, job_pages.c.status == "pending")
        .values(status="skipped", updated_at=ledger.now())
    )
    if stopped:
        _tell(conn, job_seq, status)
    return bool(stopped)


def _tell(conn: Connection, job_seq: int, status: str) -> None:
    """The job's webhook delivery for its new ``status``, in the transaction that set it."""
    event = webhook_store.EVENT_OF_STATUS[status]
    hook = webhook_store.wanted(conn, job_seq, event)
    if hook is not None:
        account_id, url, _ = hook
        webhook_store.record(conn, job_seq, account_id, url, event, summary_of(conn, job_seq))


def _tell_page(conn: Connection, job_seq: int, page_id: int) -> None:
    """A finished page's delivery: its result as ``GET /jobs/{id}`` lists it, without the
    result when that is larger than WEBHOOK_RESULT_MAX_BYTES (the job's listing has it)."""
    hook = webhook_store.wanted(conn, job_seq, "page")
    if hook is None:
        return
    account_id, url, public_id = hook
    row = conn.execute(
        select(
            job_pages.c.position,
            job_pages.c.url,
            job_pages.c.status,
            job_pages.c.result,
            usage.c.credits,
        )
        .select_from(job_pages.outerjoin(usage, _charged_by_hold()))
        .where(job_pages.c.id == page_id)
    ).one()
    whole = row.result is not None and len(row.result) <= WEBHOOK_RESULT_MAX_BYTES
    page = {
        "index": row.position,
        "url": row.url,
        "status": row.status,
        "credits": int(row.credits or 0),
        "result": orjson.Fragment(row.result) if whole else None,
        "result_left_out": row.result is not None and not whole,
    }
    data = {"id": public_id, "page": page}
    webhook_store.record(conn, job_seq, account_id, url, "page", data)


def job_seq_of(conn: Connection, account_id: int, public_id: str) -> int | None:
    """The job's row, only when it is the account's: another account's job does not exist."""
    seq = conn.execute(
        select(jobs.c.seq).where(jobs.c.public_id == public_id, jobs.c.account_id == account_id)
    ).scalar_one_or_none()
    return None if seq is None else int(seq)


def cancel(conn: Connection, account_id: int, public_id: str) -> JobSummary | None:
    seq = job_seq_of(conn, account_id, public_id)
    if seq is None:
        return None
    stop_job(conn, seq, "cancelled", None)
    return summary_of(conn, seq)


def _job_row(conn: Connection, seq: int) -> Any:
    return conn.execute(select(jobs).where(jobs.c.seq == seq)).one()


def _charged_by_hold() -> Any:
    return and_(usage.c.hold_id == job_pages.c.hold_id, usage.c.hold_id.is_not(None))


def summary_of(conn: Connection, seq: int) -> JobSummary:
    job = _job_row(conn, seq)
    counts: Counts = {"done": 0, "failed": 0, "blocked": 0, "pending": 0, "skipped": 0}
    tally = cast(dict[str, int], counts)  # each status the pages' rows may have is a key
    for status, count in conn.execute(
        select(job_pages.c.status, func.count())
        .where(job_pages.c.job_seq == seq)
        .group_by(job_pages.c.status)
    ):
        tally["pending" if status == "running" else status] += count
    charged = conn.execute(
        select(func.coalesce(func.sum(usage.c.credits), 0))
        .select_from(job_pages.join(usage, _charged_by_hold()))
        .where(job_pages.c.job_seq == seq)
    ).scalar_one()
    return {
        "id": job.public_id,
        "kind": job.kind,
        "status": job.status,
        "created_at": timestamp(job.created_at),
        "finished_at": timestamp(job.finished_at) if job.finished_at else None,
        "error": job.error,
        "total": job.total,
        "counts": counts,
        "credits_charged": int(charged),
    }


def view(conn: Connection, account_id: int, public_id: str, after: int, limit: int) -> Job | None:
    """The job with one page of its finished pages' results, in the order of its URLs."""
    seq = job_seq_of(conn, account_id, public_id)
    if seq is None:
        return None
    summary = summary_of(conn, seq)
    rows = conn.execute(
        select(
            job_pages.c.position,
            job_pages.c.url,
            job_pages.c.status,
            job_pages.c.result,
            usage.c.credits,
        )
        .select_from(job_pages.outerjoin(usage, _charged_by_hold()))
        .where(
            job_pages.c.job_seq == seq,
            job_pages.c.position > after,
            job_pages.c.status.in_(FINISHED_PAGE),
        )
        .order_by(job_pages.c.position)
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    rows = rows[:limit]
    results: list[JobResult] = [
        {
            "index": row.position,
            "url": row.url,
            "status": row.status,
            "credits": int(row.credits or 0),
            "result": orjson.Fragment(row.result) if row.result else None,
        }
        for row in rows
    ]
    return {
        **summary,
        "results": results,
        "next_cursor": str(rows[-1].position) if more else None,
    }


def listing(conn: Connection, account_id: int, before: int | None, limit: int) -> Page[JobItem]:
    """The account's jobs, newest first."""
    query = select(jobs).where(jobs.c.account_id == account_id)
    if before is not None:
        query = query.where(jobs.c.seq < before)
    rows = conn.execute(query.order_by(jobs.c.seq.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "items": [
            {
                "id": row.public_id,
                "kind": row.kind,
                "status": row.status,
                "total": row.total,
                "created_at": timestamp(row.created_at),
                "finished_at": timestamp(row.finished_at) if row.finished_at else None,
            }
            for row in rows
        ],
        "next_cursor": str(rows[-1].seq) if more else None,
    }


def purge(conn: Connection, before: datetime, keys_before: datetime) -> int:
    """Deletes finished jobs (their pages with them) made before ``before``, and the
    Idempotency-Key answers made before ``keys_before``; returns how many jobs."""
    conn.execute(delete(idempotency_keys).where(idempotency_keys.c.created_at < keys_before))
    old = select(jobs.c.seq).where(jobs.c.created_at < before, jobs.c.status.not_in(ACTIVE))
    seqs = list(conn.execute(old.limit(500)).scalars())
    if not seqs:
        return 0
    webhook_store.purge(conn, seqs)
    conn.execute(delete(job_pages).where(job_pages.c.job_seq.in_(seqs)))
    conn.execute(delete(jobs).where(jobs.c.seq.in_(seqs)))
    return len(seqs)
