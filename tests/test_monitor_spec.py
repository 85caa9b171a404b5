"""A monitor's schedule (service.jobs.monitor_spec): what is refused with a 400 naming
``schedule``, and when the next run is, a missed run made up once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from service.core.config import Config
from service.core.errors import BadRequest
from service.jobs.monitor_spec import next_run, parse, parse_patch, schedule_text

CONFIG = Config()
T = datetime(2030, 3, 4, 10, 17, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "stored"),
    [(300, "300"), (3600.0, "3600"), ("0 * * * *", "0 * * * *"), (" 5  9 * * 1-5 ", "5 9 * * 1-5")],
)
def test_a_schedule_is_stored_as_given(given: object, stored: str) -> None:
    assert schedule_text(given, CONFIG) == stored


@pytest.mark.parametrize(
    "given",
    [299, 0, -5, 10**9, True, None, 3.5, "", "300", "* * * * *", "*/4 * * * *", "0 0 * *", "x y z"],
)
def test_a_schedule_under_the_minimum_or_not_one_is_a_400_naming_it(given: object) -> None:
    with pytest.raises(BadRequest) as refused:
        schedule_text(given, CONFIG)
    assert refused.value.message.startswith("invalid request: 'schedule':")


def test_the_minimum_is_the_operator_s() -> None:
    config = Config(monitor_min_interval_seconds=7200)
    with pytest.raises(BadRequest):
        schedule_text("0 * * * *", config)
    assert schedule_text("0 */2 * * *", config) == "0 */2 * * *"


def test_an_interval_keeps_its_times_and_makes_up_a_missed_run_once() -> None:
    due = T
    assert next_run("3600", T) == T + timedelta(hours=1)
    assert next_run("3600", T, after=due) == T + timedelta(hours=1)
    # eleven hours and a minute late: the next run is the first of the old times after now
    late = T + timedelta(hours=11, minutes=1)
    assert next_run("3600", late, after=due) == T + timedelta(hours=12)


def test_a_cron_runs_next_at_its_first_time_after_now() -> None:
    assert next_run("0 * * * *", T) == datetime(2030, 3, 4, 11, 0, tzinfo=UTC)
    assert next_run("30 9 * * *", T) == datetime(2030, 3, 5, 9, 30, tzinfo=UTC)


def test_a_body_watches_a_url_or_a_crawl_never_both() -> None:
    url = parse({"url": "https://example.com/", "schedule": 600, "formats": ["markdown"]}, CONFIG)
    assert (url.kind, url.url, url.schedule, url.options) == (
        "url",
        "https://example.com/",
        "600",
        {"formats": ["markdown"]},
    )
    crawl = parse(
        {"crawl": {"url": "https://example.com/", "max_pages": 3}, "schedule": 600}, CONFIG
    )
    assert crawl.kind == "crawl" and crawl.options["crawl"]["max_pages"] == 3
    for body in (
        {"schedule": 600},
        {"url": "https://example.com/", "crawl": {"url": "https://example.com/"}, "schedule": 600},
        {"url": "https://example.com/"},
        {"url": "https://example.com/", "schedule": 600, "engine": "warp"},
    ):
        with pytest.raises(BadRequest):
            parse(body, CONFIG)


def test_a_patch_names_what_it_changes() -> None:
    assert parse_patch({"status": "paused"}, CONFIG) == {"status": "paused"}
    assert parse_patch({"schedule": 900, "webhook": None}, CONFIG) == {
        "schedule": "900",
        "webhook": None,
    }
    for body in ({}, {"status": "stopped"}, {"url": "https://example.com/"}, {"schedule": 5}):
        with pytest.raises(BadRequest):
            parse_patch(body, CONFIG)
