"""Typed answers of the monitors (``POST /monitors`` and friends): a monitor, its checks (each
run: status, pages, changes with the scrape's ``change_tracking`` object, credits), and the
request bodies both clients send."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from scrapespy.models import Model


class CheckResult(Model):
    url: str
    status: str
    credits: int = 0
    error: str | None = None
    change_status: str | None = None


class CheckChange(Model):
    """A page whose ``change_status`` is not ``same``, with the scrape's whole
    ``change_tracking`` object (its diff)."""

    url: str
    change_status: str
    change_tracking: dict[str, Any] = Field(default_factory=dict)


class MonitorCheck(Model):
    """One run of a monitor; ``job_id`` is its job (``Scrapespy.job``)."""

    id: str
    monitor_id: str
    job_id: str | None = None
    status: str
    scheduled_for: datetime
    started_at: datetime
    finished_at: datetime | None = None
    changed: bool = False
    credits_charged: int = 0
    pages: dict[str, int] | None = None
    changes: list[CheckChange] = Field(default_factory=list)
    results: list[CheckResult] = Field(default_factory=list)
    error: str | None = None


class Monitor(Model):
    id: str
    name: str | None = None
    kind: str = "url"
    url: str
    crawl: dict[str, Any] | None = None
    schedule: int | str
    status: str
    paused_reason: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    webhook: dict[str, Any] | None = None
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    created_at: datetime
    last_check: MonitorCheck | None = None
    last_change: MonitorCheck | None = None


class MonitorsPage(Model):
    items: list[Monitor] = Field(default_factory=list)
    next_cursor: str | None = None


class ChecksPage(Model):
    items: list[MonitorCheck] = Field(default_factory=list)
    next_cursor: str | None = None


class MonitorDeleted(Model):
    id: str
    deleted: bool = True


def monitor_body(
    url: str | None,
    schedule: int | str,
    crawl: dict[str, Any] | None,
    name: str | None,
    webhook: dict[str, Any] | None,
    options: dict[str, Any],
) -> dict[str, Any]:
    """``POST /monitors``'s body: what it watches, its schedule, and the runs' scrape options."""
    fixed: dict[str, Any] = {"schedule": schedule}
    for field, value in (("url", url), ("crawl", crawl), ("name", name), ("webhook", webhook)):
        if value is not None:
            fixed[field] = value
    return {**options, **fixed}
