"""A monitor's request (``POST /monitors``, ``PATCH /monitors/{id}``): what it watches (``url``,
or ``crawl`` with the fields of ``POST /crawl``), its ``schedule``, its ``webhook`` and the scrape
options of its runs, checked; and when a schedule's next run is.

A schedule is an interval in seconds (an integer) or a cron expression (a string of five fields,
UTC), read by croniter. Neither may bring two runs closer than
``config.monitor_min_interval_seconds``: a cron expression is checked over its next runs. The
scrape options are checked as ``POST /scrape`` (or ``POST /crawl``) checks them and are handed to
each run's job unchanged: a format or option the scrape learns (``change_tracking``) reaches the
runs with no change here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from croniter import croniter
from pydantic import Field

from service.core.config import Config
from service.core.errors import BadRequest
from service.core.schemas import _Strict, checked_scrape, validate
from service.db.times import as_utc
from service.jobs.crawl_rules import CRAWL_FIELDS, CrawlRules, Rules, normalised
from service.jobs.webhook_spec import WebhookSpec, reachable

MonitorEvent = Literal["change", "run", "failed"]
MONITOR_EVENTS: tuple[MonitorEvent, ...] = ("change", "run", "failed")
MAX_NAME = 200
MAX_CRON = 200
LONGEST_INTERVAL = 366 * 24 * 3600
CRON_RUNS_CHECKED = 200  # a cron expression's runs whose gaps are checked against the minimum
OWN_FIELDS = ("url", "crawl", "schedule", "name", "webhook")
Schedule = int | str


class MonitorWebhook(WebhookSpec):
    """A monitor's ``webhook``: the job's, with the monitor's events (all three when left out)."""

    events: list[MonitorEvent] = Field(  # type: ignore[assignment]
        default_factory=lambda: list(MONITOR_EVENTS), min_length=1, max_length=3
    )


class _WithWebhook(_Strict):
    webhook: MonitorWebhook


@dataclass(frozen=True, slots=True)
class MonitorRequest:
    """A checked ``POST /monitors``: ``options`` are the runs' scrape options (a crawl's stored
    rules under ``crawl``), ``url`` the page or the crawl's start."""

    kind: Literal["url", "crawl"]
    url: str
    schedule: str
    options: dict[str, Any]
    name: str | None
    webhook: dict[str, Any] | None


def schedule_text(value: Any, config: Config) -> str:
    """``schedule`` as stored (an interval's digits, or the cron expression), checked; a 400
    names ``schedule``."""
    least = config.monitor_min_interval_seconds
    if isinstance(value, float) and value.is_integer():  # JSON's 3600.0 is an integer
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not least <= value <= LONGEST_INTERVAL:
            raise BadRequest(
                f"invalid request: 'schedule': an interval must be from {least} to "
                f"{LONGEST_INTERVAL} seconds"
            )
        return str(value)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_CRON:
        raise BadRequest(
            "invalid request: 'schedule': an interval in seconds (an integer) or a cron "
            "expression (a string)"
        )
    expression = " ".join(value.split())
    if expression.isdigit() or len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise BadRequest(
            f"invalid request: 'schedule': {value!r} is not a cron expression of five fields"
        )
    runs = croniter(expression, datetime(2026, 1, 1))
    previous = runs.get_next(datetime)
    for _ in range(CRON_RUNS_CHECKED):
        run = runs.get_next(datetime)
        if (run - previous).total_seconds() < least:
            raise BadRequest(
                f"invalid request: 'schedule': {expression!r} runs more often than once every "
                f"{least} seconds"
            )
        previous = run
    return expression


def clock_now(config: Config) -> datetime:
    """The monitors' clock: the time in the test clock's file when one is set (tests only)."""
    path = config.monitor_test_clock_file
    if path:
        try:
            return datetime.fromtimestamp(float(Path(path).read_text().strip()), UTC)
        except (OSError, ValueError):
            pass
    return datetime.now(UTC)


def schedule_answer(stored: str) -> Schedule:
    return int(stored) if stored.isdigit() else stored


def next_run(stored: str, now: datetime, after: datetime | None = None) -> datetime:
    """The first run of the schedule strictly after ``now``. An interval counts from ``after``
    (the run just due) when given, so runs keep their times; one that was missed is made up by
    one run, never by as many as were missed."""
    now = as_utc(now)
    if stored.isdigit():
        step = timedelta(seconds=int(stored))
        if after is None:
            return now + step
        start = as_utc(after)
        missed = max(0, int((now - start) / step))
        run = start + step * missed
        while run <= now:
            run += step
        return run
    return as_utc(croniter(stored, now).get_next(datetime))


def parse(data: dict[str, Any], config: Config) -> MonitorRequest:
    """A monitor's body, checked; a 400 names the field."""
    data = dict(data)
    own = {name: data.pop(name) for name in OWN_FIELDS if name in data}
    if "schedule" not in own:
        raise BadRequest("invalid request: 'schedule': missing")
    schedule = schedule_text(own["schedule"], config)
    name = own.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME):
        raise BadRequest(f"invalid request: 'name': a string of at most {MAX_NAME} characters")
    webhook = checked_webhook(own["webhook"], config) if "webhook" in own else None
    if ("url" in own) == ("crawl" in own):
        raise BadRequest("invalid request: 'url': give either 'url' or 'crawl', not both")
    if "url" in own:
        checked_scrape({**data, "url": own["url"]}, config.countries, model=config.model_configured)
        return MonitorRequest("url", own["url"].strip(), schedule, data, name, webhook)
    crawl = own["crawl"]
    if not isinstance(crawl, dict):
        raise BadRequest("invalid request: 'crawl': an object with the fields of POST /crawl")
    crawl = dict(crawl)
    if "webhook" in crawl:
        raise BadRequest("invalid request: 'crawl.webhook': a monitor's webhook is its own")
    rules = {field: crawl.pop(field) for field in CRAWL_FIELDS if field in crawl}
    asked = validate(CrawlRules, rules)
    # the crawl's own scrape options, if any, over the monitor's
    options = {**data, **{field: value for field, value in crawl.items() if field != "url"}}
    request, _ = checked_scrape(
        {**options, "url": crawl.get("url")}, config.countries, model=config.model_configured
    )
    start = normalised(request.url)
    if start is None:
        raise BadRequest("invalid request: 'crawl.url': must be an http(s) URL")
    options["crawl"] = {
        "rules": Rules.of(request.url, asked).stored(),
        "max_pages": asked.max_pages,
        "max_depth": asked.max_depth,
        "sitemap": asked.sitemap,
    }
    return MonitorRequest("crawl", start, schedule, options, name, webhook)


def checked_webhook(value: Any, config: Config) -> dict[str, Any]:
    spec = validate(_WithWebhook, {"webhook": value}).webhook
    stored = {"url": spec.url, "events": [e for e in MONITOR_EVENTS if e in spec.events]}
    return reachable(stored, config)


def parse_patch(data: dict[str, Any], config: Config) -> dict[str, Any]:
    """``PATCH /monitors/{id}``: ``status`` (``paused`` or ``active``), ``schedule``, ``name``
    and ``webhook`` (null removes it); what to change, checked."""
    unknown = sorted(set(data) - {"status", "schedule", "name", "webhook"})
    if unknown:
        raise BadRequest(f"unknown field '{unknown[0]}'")
    if not data:
        raise BadRequest("invalid request: give 'status', 'schedule', 'name' or 'webhook'")
    changes: dict[str, Any] = {}
    if "status" in data:
        if data["status"] not in ("active", "paused"):
            raise BadRequest("invalid request: 'status': 'active' or 'paused'")
        changes["status"] = data["status"]
    if "schedule" in data:
        changes["schedule"] = schedule_text(data["schedule"], config)
    if "name" in data:
        name = data["name"]
        if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME):
            raise BadRequest(f"invalid request: 'name': a string of at most {MAX_NAME} characters")
        changes["name"] = name
    if "webhook" in data:
        changes["webhook"] = (
            None if data["webhook"] is None else checked_webhook(data["webhook"], config)
        )
    return changes
