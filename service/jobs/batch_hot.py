"""The hot path of a job's pages (service.db.hot): on SQLite each function is one transaction of
Database.run_hot; on PostgreSQL each statement is one call on the reactor (Database.call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from service.billing import ledger
from service.db import hot
from service.db.hot import HotConnection
from service.jobs.batch_store import Finish


def _same(value: Any) -> Any:
    return value


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
