"""A monitor's runs (migration 0021): each function is one transaction's work.

A run happens once: :func:`claim_due` locks the due monitors' rows (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL: another instance's tick passes them by; SQLite's ``BEGIN IMMEDIATE`` writes one
transaction at a time), moves each one's ``next_run_at`` past the clock, and stores the run's job
and its check in that same transaction. A tick that dies before committing stored nothing and
moved nothing: the next tick, on any instance, makes the run. A run missed while no instance ran
is made once, at the first tick after: ``next_run_at`` then moves to the schedule's first time
after the clock, not one period on.

A check is finished once too (:func:`finish_check`): its row is locked and still ``running``, its
job done. What the job's pages found is copied into it (their ``change_tracking`` objects when
the scrape made them), what they were charged summed from their usage rows, and the webhook's
deliveries stored in the same transaction. The monitors' own rows: service.jobs.monitor_store.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, exists, func, insert, select, update

from service.billing import ledger
from service.db.tables import job_pages, jobs, monitor_checks, monitors, webhook_deliveries
from service.db.times import timestamp
from service.jobs import batch_store, crawl_store
from service.jobs.job_reads import ACTIVE, pages_charged, summary_of
from service.jobs.monitor_spec import next_run
from service.jobs.monitor_store import (
    CHANGED,
    CHECK_STATUS,
    RESULTS_KEPT,
    UNPAID_PAUSE,
    check_answer,
)


def claim_due(
    conn: Connection, now: datetime, limit: int, jobs_limit: int, slots: int
) -> list[tuple[int, str]]:
    """The runs due at ``now``, each stored once: its monitor's next time moved past ``now``,
    its job and its check made, in this transaction. The (job, kind) of each run. A monitor
    whose previous run has not finished is passed by until it has."""
    # a monitor whose previous run is still going waits for it: its run is made once that
    # one is finished, as a missed run is
    running = exists().where(
        monitor_checks.c.monitor_id == monitors.c.id, monitor_checks.c.status == "running"
    )
    query = (
        select(monitors)
        .where(monitors.c.status == "active", monitors.c.next_run_at <= now, ~running)
        .order_by(monitors.c.next_run_at, monitors.c.id)
        .limit(limit)
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    made: list[tuple[int, str]] = []
    for row in conn.execute(query).all():
        conn.execute(
            update(monitors)
            .where(monitors.c.id == row.id)
            .values(next_run_at=next_run(row.schedule, now, row.next_run_at), last_run_at=now)
        )
        options = orjson.loads(row.options)
        public_id = uuid.uuid4().hex
        terms: dict[str, Any] = {
            "public_id": public_id,
            "account_id": row.account_id,
            "key_id": row.key_id,
            "key_hash": row.key_hash,
            "options": options,
            "limit": jobs_limit,
        }
        try:
            if row.kind == "crawl":
                seq = crawl_store.create_crawl(conn, **terms, seeds=[row.url], slots=slots)
            else:
                seq = batch_store.create_job(conn, **terms, urls=[row.url])
        except batch_store.TooManyJobs:
            # refused before it stored anything: this run fails, the others go on
            _record_failed(conn, row, now, "the account has too many jobs in flight")
            continue
        conn.execute(
            insert(monitor_checks).values(
                monitor_id=row.id,
                job_seq=seq,
                job_public_id=public_id,
                status="running",
                scheduled_for=row.next_run_at,
                started_at=now,
                changed=False,
                credits_charged=0,
            )
        )
        made.append((seq, row.kind))
    return made


def _record_failed(conn: Connection, row: Any, now: datetime, error: str) -> None:
    summary: dict[str, Any] = {"pages": None, "results": [], "changes": [], "error": error}
    conn.execute(
        insert(monitor_checks).values(
            monitor_id=row.id,
            job_seq=None,
            job_public_id=None,
            status="failed",
            scheduled_for=row.next_run_at,
            started_at=now,
            finished_at=now,
            changed=False,
            credits_charged=0,
            summary=orjson.dumps(summary).decode(),
        )
    )


def finished_checks(conn: Connection, limit: int) -> list[int]:
    """Checks still ``running`` whose job is done (or was deleted)."""
    query = (
        select(monitor_checks.c.id)
        .select_from(monitor_checks.outerjoin(jobs, jobs.c.seq == monitor_checks.c.job_seq))
        .where(
            monitor_checks.c.status == "running",
            (jobs.c.seq.is_(None)) | (jobs.c.status.not_in(ACTIVE)),
            # a stopped job's page whose hold was refused is released after the job stops
            ~exists().where(
                job_pages.c.job_seq == monitor_checks.c.job_seq,
                job_pages.c.status.in_(("pending", "running")),
            ),
        )
        .order_by(monitor_checks.c.id)
        .limit(limit)
    )
    return [int(found) for found in conn.execute(query).scalars()]


def finish_check(conn: Connection, check_id: int, pause_after: int) -> bool:
    """Finishes a check whose job is done, once: what its pages found, what they cost, the
    monitor's count of unpaid runs (paused at ``pause_after``), and its webhook's deliveries."""
    found = conn.execute(
        select(monitor_checks.c.monitor_id).where(monitor_checks.c.id == check_id)
    ).scalar_one_or_none()
    if found is None:
        return False
    # the monitor's row, then the check's: the order DELETE takes them in (no deadlock); the
    # monitor's count of unpaid runs is then read and written by one transaction at a time
    locking = conn.dialect.name == "postgresql"
    query = select(monitors).where(monitors.c.id == found)
    monitor = conn.execute(query.with_for_update() if locking else query).one_or_none()
    query = select(monitor_checks).where(
        monitor_checks.c.id == check_id, monitor_checks.c.status == "running"
    )
    check = conn.execute(query.with_for_update() if locking else query).one_or_none()
    if monitor is None or check is None:
        return False
    first = not conn.execute(
        select(func.count())
        .select_from(monitor_checks)
        .where(monitor_checks.c.monitor_id == monitor.id, monitor_checks.c.id < check.id)
    ).scalar_one()
    now = ledger.now()
    if check.job_seq is None:
        status, credits, summary = "failed", 0, {"error": "the run's job was deleted"}
    else:
        status, credits, summary = _found(conn, int(check.job_seq), first)
    changed = bool(summary.get("changes_seen"))
    summary.pop("changes_seen", None)
    conn.execute(
        update(monitor_checks)
        .where(monitor_checks.c.id == check_id)
        .values(
            status=status,
            finished_at=now,
            changed=changed,
            credits_charged=credits,
            summary=orjson.dumps(summary).decode(),
        )
    )
    paused = False
    if status == "insufficient_credits":
        unpaid = int(monitor.unpaid_runs) + 1
        values: dict[str, Any] = {"unpaid_runs": unpaid}
        if unpaid >= pause_after and monitor.status == "active":
            values |= {"status": "paused", "paused_reason": UNPAID_PAUSE}
            paused = True
        conn.execute(update(monitors).where(monitors.c.id == monitor.id).values(**values))
    elif monitor.unpaid_runs:
        conn.execute(update(monitors).where(monitors.c.id == monitor.id).values(unpaid_runs=0))
    if monitor.webhook and check.job_seq is not None:
        hook = orjson.loads(monitor.webhook)
        done = conn.execute(select(monitor_checks).where(monitor_checks.c.id == check_id)).one()
        data: dict[str, Any] = {
            "monitor": {"id": monitor.public_id, "name": monitor.name, "url": monitor.url},
            "check": check_answer(done, monitor.public_id),
        }
        events = ["run"]
        if changed:
            events.append("change")
        if status != "completed" or paused:
            events.append("failed")
        for event in events:
            if event in hook["events"]:
                body = dict(data)
                if event == "failed":
                    body["paused"] = paused
                    if paused:
                        body["reason"] = (
                            f"{pause_after} runs in a row were skipped for want of credits; "
                            "the monitor is paused until it is resumed"
                        )
                _deliver(conn, int(check.job_seq), monitor, hook["url"], event, body)
    return True


def _found(conn: Connection, seq: int, first: bool) -> tuple[str, int, dict[str, Any]]:
    """A done job's check: its status, its charge, and its pages' summary."""
    job = summary_of(conn, seq)
    rows = conn.execute(
        pages_charged().where(job_pages.c.job_seq == seq).order_by(job_pages.c.position)
    ).all()
    results: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    seen = False
    for row in rows:
        result = orjson.loads(row.result) if row.result else {}
        tracking = result.get("change_tracking") if isinstance(result, dict) else None
        state = tracking.get("change_status") if isinstance(tracking, dict) else None
        if len(results) < RESULTS_KEPT:
            results.append(
                {
                    "url": row.url,
                    "status": row.status,
                    "credits": int(row.credits or 0),
                    "error": result.get("error") if isinstance(result, dict) else None,
                    "change_status": state,
                }
            )
        if state in CHANGED or (state == "new" and not first):
            seen = True
        if state is not None and state != "same":
            changes.append({"url": row.url, "change_status": state, "change_tracking": tracking})
    counts = dict(job["counts"])
    summary = {
        "pages": {"total": len(rows), **counts},
        "results": results,
        "changes": changes,
        "error": job["error"],
        "changes_seen": seen,
    }
    return CHECK_STATUS.get(job["status"], "failed"), int(job["credits_charged"]), summary


def _deliver(
    conn: Connection, seq: int, monitor: Any, url: str, event: str, data: dict[str, Any]
) -> None:
    """One delivery of ``monitor.<event>``, due now, sent by the jobs' webhook sender (signed
    with the account's secret, retried, service.jobs.webhooks) as the run's job's."""
    now = ledger.now()
    payload = {"type": f"monitor.{event}", "timestamp": timestamp(now), "data": data}
    conn.execute(
        insert(webhook_deliveries).values(
            message_id=f"msg_{uuid.uuid4().hex}",
            job_seq=seq,
            account_id=monitor.account_id,
            url=url,
            event=event,
            payload=orjson.dumps(payload).decode(),
            status="pending",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )
