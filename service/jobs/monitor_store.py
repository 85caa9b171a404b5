"""The rows of monitors and their checks as the API reads and changes them (migration 0021):
each function is one transaction's work. A monitor's runs, claimed and finished once each, are
service.jobs.monitor_runs'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, delete, func, insert, select, update

from service.billing import ledger
from service.db.tables import monitor_checks, monitors
from service.db.times import timestamp
from service.jobs import batch_store
from service.jobs.monitor_spec import next_run, schedule_answer

CHECKS_LIMIT = 100
MONITORS_LIMIT = 100
RESULTS_KEPT = 100  # a check keeps the first pages' results (status, credits, change)
CHANGED = ("changed", "removed")
CHECK_STATUS = {
    "completed": "completed",
    "failed": "failed",
    "insufficient_credits": "insufficient_credits",
    "cancelled": "cancelled",
}
UNPAID_PAUSE = "insufficient_credits"


class TooManyMonitors(Exception):
    def __init__(self, limit: int):
        super().__init__(f"{limit} monitors")
        self.limit = limit


def create(
    conn: Connection,
    *,
    public_id: str,
    account_id: int,
    key_id: int,
    key_hash: str,
    request: Any,
    next_run_at: datetime,
    limit: int,
) -> dict[str, Any]:
    """Stores a monitor (a checked service.jobs.monitor_spec.MonitorRequest); its first run is
    due at ``next_run_at``. Raises TooManyMonitors when the account has ``limit``."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "SELECT 1 FROM accounts WHERE id = %(id)s FOR NO KEY UPDATE", {"id": account_id}
        )
    count = conn.execute(
        select(func.count()).select_from(monitors).where(monitors.c.account_id == account_id)
    ).scalar_one()
    if count >= limit:
        raise TooManyMonitors(limit)
    conn.execute(
        insert(monitors).values(
            public_id=public_id,
            account_id=account_id,
            key_id=key_id,
            key_hash=key_hash,
            name=request.name,
            url=request.url,
            kind=request.kind,
            options=orjson.dumps(request.options).decode(),
            schedule=request.schedule,
            webhook=orjson.dumps(request.webhook).decode() if request.webhook else None,
            status="active",
            paused_reason=None,
            next_run_at=next_run_at,
            last_run_at=None,
            unpaid_runs=0,
            created_at=ledger.now(),
        )
    )
    found = view(conn, account_id, public_id)
    assert found is not None
    return found


def _row(conn: Connection, account_id: int, public_id: str, lock: bool = False) -> Any:
    """The monitor, only when it is the account's: another account's does not exist."""
    query = select(monitors).where(
        monitors.c.public_id == public_id[:32], monitors.c.account_id == account_id
    )
    if lock and conn.dialect.name == "postgresql":
        query = query.with_for_update()
    return conn.execute(query).one_or_none()


def answer_of(conn: Connection, row: Any) -> dict[str, Any]:
    options = orjson.loads(row.options)
    crawl = options.pop("crawl", None)
    last = conn.execute(
        select(monitor_checks)
        .where(monitor_checks.c.monitor_id == row.id)
        .order_by(monitor_checks.c.id.desc())
        .limit(1)
    ).one_or_none()
    last_change = conn.execute(
        select(monitor_checks)
        .where(monitor_checks.c.monitor_id == row.id, monitor_checks.c.changed.is_(True))
        .order_by(monitor_checks.c.id.desc())
        .limit(1)
    ).one_or_none()
    return {
        "id": row.public_id,
        "name": row.name,
        "kind": row.kind,
        "url": row.url,
        "crawl": crawl,
        "schedule": schedule_answer(row.schedule),
        "status": row.status,
        "paused_reason": row.paused_reason,
        "options": options,
        "webhook": orjson.loads(row.webhook) if row.webhook else None,
        "next_run_at": timestamp(row.next_run_at) if row.status == "active" else None,
        "last_run_at": timestamp(row.last_run_at) if row.last_run_at else None,
        "created_at": timestamp(row.created_at),
        "last_check": check_answer(last, row.public_id) if last is not None else None,
        "last_change": check_answer(last_change, row.public_id) if last_change else None,
    }


def check_answer(row: Any, monitor_id: str) -> dict[str, Any]:
    summary = orjson.loads(row.summary) if row.summary else {}
    return {
        "id": str(row.id),
        "monitor_id": monitor_id,
        "job_id": row.job_public_id,
        "status": row.status,
        "scheduled_for": timestamp(row.scheduled_for),
        "started_at": timestamp(row.started_at),
        "finished_at": timestamp(row.finished_at) if row.finished_at else None,
        "changed": bool(row.changed),
        "credits_charged": int(row.credits_charged),
        "pages": summary.get("pages"),
        "changes": summary.get("changes", []),
        "results": summary.get("results", []),
        "error": summary.get("error"),
    }


def view(conn: Connection, account_id: int, public_id: str) -> dict[str, Any] | None:
    row = _row(conn, account_id, public_id)
    return None if row is None else answer_of(conn, row)


def listing(conn: Connection, account_id: int, before: int | None, limit: int) -> dict[str, Any]:
    """The account's monitors, newest first, each with its last check and last change."""
    query = select(monitors).where(monitors.c.account_id == account_id)
    if before is not None:
        query = query.where(monitors.c.id < before)
    rows = conn.execute(query.order_by(monitors.c.id.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "items": [answer_of(conn, row) for row in rows],
        "next_cursor": str(rows[-1].id) if more else None,
    }


def change(
    conn: Connection,
    account_id: int,
    public_id: str,
    changes: dict[str, Any],
    now: datetime,
) -> dict[str, Any] | None:
    """Pauses, resumes, reschedules, renames, or sets the webhook of the account's monitor. A
    resumed or rescheduled monitor runs next at its schedule's first time after ``now``: the
    runs a pause passed over are not made up."""
    row = _row(conn, account_id, public_id, lock=True)
    if row is None:
        return None
    values: dict[str, Any] = {}
    schedule = changes.get("schedule", row.schedule)
    status = changes.get("status", row.status)
    if "name" in changes:
        values["name"] = changes["name"]
    if "webhook" in changes:
        hook = changes["webhook"]
        values["webhook"] = orjson.dumps(hook).decode() if hook else None
    if status != row.status:
        values["status"] = status
        values["paused_reason"] = "paused" if status == "paused" else None
        values["unpaid_runs"] = 0
    if "schedule" in changes:
        values["schedule"] = schedule
    if "schedule" in changes or (status == "active" and row.status == "paused"):
        values["next_run_at"] = next_run(schedule, now)
    if values:
        conn.execute(update(monitors).where(monitors.c.id == row.id).values(**values))
    return view(conn, account_id, public_id)


def remove(conn: Connection, account_id: int, public_id: str) -> bool:
    """Deletes the account's monitor and its checks; a run in flight is cancelled."""
    row = _row(conn, account_id, public_id, lock=True)
    if row is None:
        return False
    running = conn.execute(
        select(monitor_checks.c.job_seq).where(
            monitor_checks.c.monitor_id == row.id,
            monitor_checks.c.status == "running",
            monitor_checks.c.job_seq.is_not(None),
        )
    ).scalars()
    for seq in list(running):
        batch_store.stop_job(conn, int(seq), "cancelled", "its monitor was deleted")
    conn.execute(delete(monitor_checks).where(monitor_checks.c.monitor_id == row.id))
    conn.execute(delete(monitors).where(monitors.c.id == row.id))
    return True


def checks(
    conn: Connection, account_id: int, public_id: str, before: int | None, limit: int
) -> dict[str, Any] | None:
    """The monitor's checks, newest first; None when the account has no such monitor."""
    row = _row(conn, account_id, public_id)
    if row is None:
        return None
    query = select(monitor_checks).where(monitor_checks.c.monitor_id == row.id)
    if before is not None:
        query = query.where(monitor_checks.c.id < before)
    found = conn.execute(query.order_by(monitor_checks.c.id.desc()).limit(limit + 1)).all()
    more = len(found) > limit
    found = found[:limit]
    return {
        "items": [check_answer(check, row.public_id) for check in found],
        "next_cursor": str(found[-1].id) if more else None,
    }


def purge_checks(conn: Connection, before: datetime) -> int:
    """Deletes the checks finished before ``before`` (the jobs' retention), but each monitor's
    latest check and latest change, which its answer shows; returns how many."""
    checks_ = monitor_checks.c
    latest = select(func.max(checks_.id)).group_by(checks_.monitor_id)
    latest_change = latest.where(checks_.changed.is_(True))
    return int(
        conn.execute(
            delete(monitor_checks).where(
                checks_.status != "running",
                checks_.finished_at < before,
                checks_.id.not_in(latest),
                checks_.id.not_in(latest_change),
            )
        ).rowcount
    )
