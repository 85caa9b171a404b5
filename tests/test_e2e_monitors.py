"""End to end: ``POST /monitors`` and friends on the real service, scraping the local site.

The monitors' schedules read a test clock (``SCRAPESPY_MONITOR_TEST_CLOCK_FILE``), which the
tests move on: a run is due when the clock passes its time, and each instance's tick makes it.
A monitor's runs are checks listed with their status, pages and credits, billed as the scrapes
they made (the ledger is exact); with the change_tracking format a check says what changed, with
the scrape's diff; a run missed for long is made once; a paused monitor does not
run, a resumed or rescheduled one runs at its schedule's next time; a schedule under the minimum
is a 400 naming ``schedule``; the webhook's deliveries verify with the ``standardwebhooks``
library; runs the balance cannot pay are skipped and pause the monitor after the operator's
number, with a ``failed`` webhook; another account can neither see nor touch the monitor; and
two instances on one PostgreSQL database make each due run exactly once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from standardwebhooks.webhooks import Webhook

from harness.monitor_clock import START, Clock
from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.db.tables import job_pages, jobs, monitor_checks, usage
from service.jobs import monitor_runs, webhook_store
from tests.conftest import BACKEND, a_database_of_its_own
from tests.dashboard_client import PublicService, member, new_key, text_of
from tests.test_e2e_dashboard_jobs import cell
from tests.test_e2e_webhooks import Receiver

pytestmark = pytest.mark.long(minutes=1)

TICK = "0.1"


class Changing:
    """A page whose text changes at each fetch: the N-th fetch says N."""

    def __init__(self, site: TargetSite, path: str):
        self.fetches = 0
        self.lock = threading.Lock()

        def route(_h: Any) -> tuple[int, dict[str, str], bytes]:
            with self.lock:
                self.fetches += 1
                n = self.fetches
            body = f"<html><head><title>Price</title></head><body><p>Fetch {n}</p></body></html>"
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()

        site.routes[path] = route
        self.url = site.url(path)


def start(database_url: str, workdir: Path, clock: Clock, **env: str) -> ServiceProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "SCRAPESPY_MONITOR_TEST_CLOCK_FILE": str(clock.path),
        "SCRAPESPY_MONITOR_TICK_SECONDS": TICK,
        "SCRAPESPY_WEBHOOK_RETRY_SECONDS": "0.2",
        "SCRAPESPY_JOB_STALLED_SECONDS": "4",
        **env,
    }
    return ServiceProcess(database_url, workdir, env=settings).start()


@pytest.fixture(scope="module")
def monitors_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("monitors-db"))


@pytest.fixture(scope="module")
def accounts(monitors_db: tuple[str, Accounts]) -> Accounts:
    return monitors_db[1]


@pytest.fixture(scope="module")
def clock(tmp_path_factory: pytest.TempPathFactory) -> Clock:
    return Clock(tmp_path_factory.mktemp("clock") / "now")


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture(scope="module")
def service(
    monitors_db: tuple[str, Accounts], clock: Clock, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(monitors_db[0], tmp_path_factory.mktemp("monitors"), clock)
    yield proc
    proc.stop()


def create(service: ServiceProcess, key: str, body: Any) -> Reply:
    return call("POST", service.url("/monitors"), body, key=key)


def checks(service: ServiceProcess, key: str, monitor_id: str) -> list[dict[str, Any]]:
    reply = call("GET", service.url(f"/monitors/{monitor_id}/checks"), key=key)
    assert reply.status == 200, reply.body
    found: list[dict[str, Any]] = reply.json["items"]
    return found


def finished_checks(
    service: ServiceProcess, key: str, monitor_id: str, count: int, timeout: float = 60
) -> list[dict[str, Any]]:
    """The monitor's checks, oldest first, once ``count`` of them are there and finished."""
    deadline = time.monotonic() + timeout
    while True:
        found = checks(service, key, monitor_id)
        if len(found) >= count and all(check["status"] != "running" for check in found):
            return list(reversed(found))
        assert time.monotonic() < deadline, f"{count} finished checks expected: {found}"
        time.sleep(0.1)


def monitor(service: ServiceProcess, key: str, monitor_id: str) -> dict[str, Any]:
    reply = call("GET", service.url(f"/monitors/{monitor_id}"), key=key)
    assert reply.status == 200, reply.body
    found: dict[str, Any] = reply.json
    return found


def at(moment: float) -> str:
    return (
        datetime.fromtimestamp(moment, UTC)
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


def charged(accounts: Accounts, account_id: int) -> tuple[int, int]:
    """(usage rows that charged, credits they charged) of the account."""

    def read(conn: Any) -> tuple[int, int]:
        row = conn.execute(
            select(func.count(), func.coalesce(func.sum(usage.c.credits), 0)).where(
                usage.c.account_id == account_id, usage.c.credits > 0
            )
        ).one()
        return int(row[0]), int(row[1])

    return accounts.database.run_sync(read)


def settle_ticks() -> None:
    """Long enough for many ticks (0.1 s each) to have looked for due runs."""
    time.sleep(1.5)


def test_a_monitor_runs_on_its_schedule_and_lists_its_checks(
    service: ServiceProcess, accounts: Accounts, site: TargetSite, clock: Clock
) -> None:
    account_id, key = accounts.create(credits=100)
    page = Changing(site, "/monitored-price")
    reply = create(service, key, {"url": page.url, "schedule": 3600, "name": "price"})
    assert reply.status == 201, reply.body
    made = reply.json
    assert (made["url"], made["schedule"], made["status"], made["name"]) == (
        page.url,
        3600,
        "active",
        "price",
    )
    first = finished_checks(service, key, made["id"], 1)  # due at once
    assert len(first) == 1 and page.fetches == 1
    check = first[0]
    assert check["status"] == "completed" and check["credits_charged"] == 1
    assert check["pages"]["total"] == 1 and check["pages"]["done"] == 1
    assert check["results"][0]["url"] == page.url and check["results"][0]["status"] == "done"
    # no change tracking in the scrape's result: the check says nothing changed
    assert check["changed"] is False and check["changes"] == []
    assert check["results"][0]["change_status"] is None
    job = call("GET", service.url(f"/jobs/{check['job_id']}"), key=key).json
    assert "Fetch 1" in job["results"][0]["result"]["text"]
    assert monitor(service, key, made["id"])["next_run_at"] == at(START + 3600)

    clock.advance(3600)
    second = finished_checks(service, key, made["id"], 2)
    assert second[1]["scheduled_for"] == at(START + 3600)
    assert page.fetches == 2

    # eleven hours missed: one run makes them up, and the next is on the hour after the clock
    clock.advance(11 * 3600 + 60)
    third = finished_checks(service, key, made["id"], 3)
    settle_ticks()
    assert len(checks(service, key, made["id"])) == 3 and page.fetches == 3
    assert third[2]["scheduled_for"] == at(START + 2 * 3600)
    assert monitor(service, key, made["id"])["next_run_at"] == at(START + 13 * 3600)
    assert monitor(service, key, made["id"])["last_check"]["id"] == third[2]["id"]

    # the ledger is exact: three scrapes of one credit each
    assert sum(check["credits_charged"] for check in third) == 3
    assert charged(accounts, account_id) == (3, 3)
    summary = accounts.summary(account_id)
    assert summary["balance"] == 97 and summary["held"] == 0
    clock.advance(3600)  # leave the clock past every monitor of this test's runs
    finished_checks(service, key, made["id"], 4)
    call("DELETE", service.url(f"/monitors/{made['id']}"), key=key)


def test_with_change_tracking_a_check_says_what_changed_with_its_diff(
    service: ServiceProcess,
    accounts: Accounts,
    site: TargetSite,
    clock: Clock,
    receiver: Receiver,
) -> None:
    """The scrape's own change_tracking format: the first run finds the page new (no change),
    the next finds it changed, and its check carries the scrape's object with the diff."""
    account_id, key = accounts.create(credits=100)
    page = Changing(site, "/monitored-tracked-live")
    hook = receiver.url("/monitor-change")
    body = {
        "url": page.url,
        "schedule": 600,
        "formats": ["markdown", "change_tracking"],
        "change_tracking": {"modes": ["git-diff"]},
        "webhook": {"url": hook, "events": ["change"]},
    }
    made = create(service, key, body)
    assert made.status == 201, made.body
    monitor_id = made.json["id"]
    assert made.json["options"]["change_tracking"] == {"modes": ["git-diff"]}
    first = finished_checks(service, key, monitor_id, 1)[0]
    assert first["status"] == "completed" and first["changed"] is False
    assert first["results"][0]["change_status"] == "new"
    clock.advance(600)
    second = finished_checks(service, key, monitor_id, 2)[1]
    assert second["changed"] is True and second["results"][0]["change_status"] == "changed"
    [change] = second["changes"]
    assert change["url"] == page.url and change["change_status"] == "changed"
    diff = change["change_tracking"]["diff"]["text"]
    assert "-Fetch 1" in diff and "+Fetch 2" in diff
    state = monitor(service, key, monitor_id)
    assert state["last_change"]["id"] == second["id"]
    got = receiver.wait("/monitor-change", 1)
    verifier = Webhook(accounts.database.run_sync(webhook_store.secret_of, account_id))
    payload = verifier.verify(got[0][1], got[0][0])
    assert payload["type"] == "monitor.change"
    assert payload["data"]["check"]["changes"] == second["changes"]
    time.sleep(0.5)
    assert len(receiver.at("/monitor-change")) == 1  # the first run (new) was no change
    assert charged(accounts, account_id) == (2, 2)
    call("DELETE", service.url(f"/monitors/{monitor_id}"), key=key)


def test_pause_resume_and_a_new_schedule(
    service: ServiceProcess, accounts: Accounts, site: TargetSite, clock: Clock
) -> None:
    _, key = accounts.create(credits=100)
    page = Changing(site, "/monitored-pause")
    made = create(service, key, {"url": page.url, "schedule": "0 * * * *"}).json
    assert made["schedule"] == "0 * * * *"
    finished_checks(service, key, made["id"], 1)
    url = service.url(f"/monitors/{made['id']}")
    paused = call("PATCH", url, {"status": "paused"}, key=key)
    assert paused.status == 200 and paused.json["status"] == "paused", paused.body
    assert paused.json["next_run_at"] is None
    clock.advance(7200)
    settle_ticks()
    assert len(checks(service, key, made["id"])) == 1 and page.fetches == 1

    resumed = call("PATCH", url, {"status": "active"}, key=key).json
    hour = (clock.now // 3600 + 1) * 3600  # the cron's next hour after the clock
    assert resumed["status"] == "active" and resumed["next_run_at"] == at(hour)
    settle_ticks()
    assert len(checks(service, key, made["id"])) == 1  # the paused hours are not made up

    moved = call("PATCH", url, {"schedule": 600}, key=key).json
    assert moved["schedule"] == 600 and moved["next_run_at"] == at(clock.now + 600)
    clock.advance(600)
    finished_checks(service, key, made["id"], 2)
    assert page.fetches == 2
    assert call("DELETE", url, key=key).json == {"id": made["id"], "deleted": True}
    assert call("GET", url, key=key).status == 404
    clock.advance(600)
    settle_ticks()
    assert page.fetches == 2  # a deleted monitor does not run


@pytest.mark.parametrize(
    ("schedule", "said"),
    [
        (60, "from 300"),
        ("*/2 * * * *", "more often than once every 300 seconds"),
        ("not a cron", "not a cron expression"),
        (True, "an interval in seconds"),
    ],
)
def test_a_schedule_under_the_minimum_is_a_400_naming_schedule(
    service: ServiceProcess, accounts: Accounts, schedule: Any, said: str
) -> None:
    _, key = accounts.create(credits=10)
    reply = create(service, key, {"url": "http://127.0.0.1:9/", "schedule": schedule})
    assert reply.status == 400, reply.body
    assert "'schedule'" in reply.json["error"] and said in reply.json["error"]
    assert call("GET", service.url("/monitors"), key=key).json["items"] == []


def test_bad_monitors_are_400s_naming_their_field(
    service: ServiceProcess, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    for body, field in [
        ({"schedule": 300}, "'url'"),
        ({"url": "ftp://x", "schedule": 300}, "'url'"),
        ({"url": "http://127.0.0.1:9/", "schedule": 300, "engine": "warp"}, "'engine'"),
        ({"url": "http://127.0.0.1:9/", "schedule": 300, "webhook": {"url": "x"}}, "webhook"),
        (
            {
                "url": "http://127.0.0.1:9/",
                "schedule": 300,
                "webhook": {"url": "http://a/", "events": ["page"]},
            },
            "events",
        ),
        ({"url": "http://127.0.0.1:9/", "crawl": {"url": "http://a/"}, "schedule": 300}, "'url'"),
    ]:
        reply = create(service, key, body)
        assert reply.status == 400, (body, reply.body)
        assert field in reply.json["error"], (body, reply.json)


def test_the_webhook_is_signed_and_verified_by_the_library(
    service: ServiceProcess,
    accounts: Accounts,
    site: TargetSite,
    clock: Clock,
    receiver: Receiver,
) -> None:
    account_id, key = accounts.create(credits=100)
    page = Changing(site, "/monitored-hook")
    hook = receiver.url("/monitor-hook")
    body = {"url": page.url, "schedule": 300, "webhook": {"url": hook, "events": ["run"]}}
    made = create(service, key, body).json
    assert made["webhook"] == {"url": hook, "events": ["run"]}
    got = receiver.wait("/monitor-hook", 1)
    secret = accounts.database.run_sync(webhook_store.secret_of, account_id)
    payload = Webhook(secret).verify(got[0][1], got[0][0])
    assert payload["type"] == "monitor.run"
    assert payload["data"]["monitor"]["id"] == made["id"]
    check = payload["data"]["check"]
    assert check["status"] == "completed" and check["credits_charged"] == 1
    assert check == finished_checks(service, key, made["id"], 1)[0]
    call("DELETE", service.url(f"/monitors/{made['id']}"), key=key)


def test_runs_without_credits_are_skipped_and_pause_the_monitor(
    service: ServiceProcess,
    accounts: Accounts,
    site: TargetSite,
    clock: Clock,
    receiver: Receiver,
) -> None:
    account_id, key = accounts.create(credits=0)
    page = Changing(site, "/monitored-unpaid")
    hook = receiver.url("/monitor-unpaid")
    made = create(service, key, {"url": page.url, "schedule": 300, "webhook": {"url": hook}}).json
    for n in range(1, 4):
        found = finished_checks(service, key, made["id"], n)
        assert found[-1]["status"] == "insufficient_credits"
        assert found[-1]["credits_charged"] == 0 and found[-1]["pages"]["skipped"] == 1
        if n < 3:
            assert monitor(service, key, made["id"])["status"] == "active"
            clock.advance(300)
    state = monitor(service, key, made["id"])
    assert (state["status"], state["paused_reason"]) == ("paused", "insufficient_credits")
    clock.advance(300)
    settle_ticks()
    assert len(checks(service, key, made["id"])) == 3 and page.fetches == 0
    assert charged(accounts, account_id) == (0, 0)
    assert accounts.summary(account_id)["balance"] == 0
    verifier = Webhook(accounts.database.run_sync(webhook_store.secret_of, account_id))
    deadline = time.monotonic() + 30
    while True:
        payloads = [verifier.verify(b, h) for h, b in receiver.at("/monitor-unpaid")]
        failed = [p for p in payloads if p["type"] == "monitor.failed"]
        if any(p["data"]["paused"] for p in failed):
            break
        assert time.monotonic() < deadline, payloads
        time.sleep(0.1)
    assert len(failed) == 3 and [p["data"]["paused"] for p in failed].count(True) == 1
    assert "paused" in next(p for p in failed if p["data"]["paused"])["data"]["reason"]
    assert sum(p["type"] == "monitor.run" for p in payloads) == 3
    assert not any(p["type"] == "monitor.change" for p in payloads)
    call("DELETE", service.url(f"/monitors/{made['id']}"), key=key)


def test_another_account_can_neither_read_nor_affect_a_monitor(
    service: ServiceProcess, accounts: Accounts, site: TargetSite, clock: Clock
) -> None:
    _, key = accounts.create(credits=100)
    _, other = accounts.create(credits=100)
    page = Changing(site, "/monitored-private")
    made = create(service, key, {"url": page.url, "schedule": 300}).json
    url = service.url(f"/monitors/{made['id']}")
    assert call("GET", url, key=other).status == 404
    assert call("GET", url + "/checks", key=other).status == 404
    assert call("PATCH", url, {"status": "paused"}, key=other).status == 404
    assert call("DELETE", url, key=other).status == 404
    assert call("GET", service.url("/monitors"), key=other).json["items"] == []
    assert call("GET", url).status == 401
    state = monitor(service, key, made["id"])
    assert state["status"] == "active"
    listed = call("GET", service.url("/monitors"), key=key).json["items"]
    assert [item["id"] for item in listed] == [made["id"]]
    finished_checks(service, key, made["id"], 1)
    call("DELETE", url, key=key)


def test_runs_missed_while_no_instance_ran_are_made_up_once_after_a_restart(
    database_url: str, site: TargetSite, tmp_path: Path
) -> None:
    made_db = a_database_of_its_own(database_url, tmp_path)
    url, accounts = next(made_db)
    clock = Clock(tmp_path / "now")
    try:
        account_id, key = accounts.create(credits=10)
        page = Changing(site, "/monitored-restart")
        first = start(url, tmp_path / "first", clock)
        try:
            made = create(first, key, {"url": page.url, "schedule": 300}).json
            finished_checks(first, key, made["id"], 1)
        finally:
            first.stop()
        clock.advance(5 * 300 + 10)  # five runs missed while nothing ran
        again = start(url, tmp_path / "again", clock)
        try:
            found = finished_checks(again, key, made["id"], 2)
            settle_ticks()
            assert len(checks(again, key, made["id"])) == 2 and page.fetches == 2
            assert found[1]["scheduled_for"] == at(START + 300)
            assert monitor(again, key, made["id"])["next_run_at"] == at(START + 6 * 300)
        finally:
            again.stop()
        assert charged(accounts, account_id) == (2, 2)
    finally:
        accounts.close()
        next(made_db, None)


def job_pages_of(accounts: Accounts, job_ids: list[str]) -> list[Any]:
    def read(conn: Any) -> list[Any]:
        return list(
            conn.execute(
                select(job_pages.c.status, job_pages.c.attempt)
                .join(jobs, jobs.c.seq == job_pages.c.job_seq)
                .where(jobs.c.public_id.in_(job_ids))
            ).all()
        )

    return accounts.database.run_sync(read)


@pytest.mark.postgres
def test_two_instances_make_each_due_run_exactly_once(
    database_url: str, site: TargetSite, tmp_path: Path
) -> None:
    assert BACKEND == "postgresql"
    made_db = a_database_of_its_own(database_url, tmp_path)
    url, accounts = next(made_db)
    clock = Clock(tmp_path / "now")
    one = start(url, tmp_path / "one", clock)
    two = start(url, tmp_path / "two", clock)
    try:
        account_id, key = accounts.create(credits=100)
        page = Changing(site, "/monitored-shared")
        made = create(one, key, {"url": page.url, "schedule": 300}).json
        runs = 6
        for n in range(1, runs + 1):
            finished_checks(two if n % 2 else one, key, made["id"], n)
            if n < runs:
                clock.advance(300)
        settle_ticks()
        found = finished_checks(one, key, made["id"], runs)
        assert len(found) == runs and page.fetches == runs
        assert [check["scheduled_for"] for check in found] == [
            at(START + 300 * n) for n in range(runs)
        ]

        def per_slot(conn: Any) -> list[int]:
            return list(
                conn.execute(
                    select(func.count())
                    .select_from(monitor_checks)
                    .group_by(monitor_checks.c.scheduled_for)
                ).scalars()
            )

        assert accounts.database.run_sync(per_slot) == [1] * runs
        pages = job_pages_of(accounts, [check["job_id"] for check in found])
        assert [row.status for row in pages] == ["done"] * runs
        assert charged(accounts, account_id) == (runs, runs)
        assert accounts.summary(account_id)["balance"] == 100 - runs
    finally:
        one.stop()
        two.stop()
        accounts.close()
        next(made_db, None)


def test_a_check_copies_the_page_s_change_tracking(
    service: ServiceProcess, accounts: Accounts, site: TargetSite, clock: Clock
) -> None:
    """When the scrape's result has ``change_tracking`` (the format that adds it), the check
    copies it, and a page that changed makes the check ``changed``: here the stored result is
    given the object the format adds, and the check is made again from it."""

    _, key = accounts.create(credits=10)
    page = Changing(site, "/monitored-tracked")
    made = create(service, key, {"url": page.url, "schedule": 300}).json
    job_id = finished_checks(service, key, made["id"], 1)[0]["job_id"]
    call("DELETE", service.url(f"/monitors/{made['id']}"), key=key)
    tracking = {
        "previous_scrape_at": "2030-01-01T00:00:00Z",
        "change_status": "changed",
        "visibility": "visible",
        "diff": {"text": "-Fetch 1\n+Fetch 2"},
    }

    def rewrite(conn: Any) -> int:
        seq = conn.execute(select(jobs.c.seq).where(jobs.c.public_id == job_id)).scalar_one()
        for row in conn.execute(
            select(job_pages.c.id, job_pages.c.result).where(job_pages.c.job_seq == seq)
        ).all():
            body = orjson.loads(row.result)
            body["change_tracking"] = tracking
            conn.execute(
                job_pages.update()
                .where(job_pages.c.id == row.id)
                .values(result=orjson.dumps(body).decode())
            )
        return int(seq)

    seq = accounts.database.run_sync(rewrite)
    status, credits, summary = accounts.database.run_sync(monitor_runs._found, seq, False)
    assert (status, credits, summary["changes_seen"]) == ("completed", 1, True)
    assert summary["changes"] == [
        {"url": page.url, "change_status": "changed", "change_tracking": tracking}
    ]
    assert summary["results"][0]["change_status"] == "changed"


@pytest.fixture(scope="module")
def public_service(
    monitors_db: tuple[str, Accounts], clock: Clock, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PublicService]:
    started = PublicService.start(
        monitors_db[0],
        tmp_path_factory.mktemp("monitors-dashboard"),
        SCRAPESPY_MONITOR_TEST_CLOCK_FILE=str(clock.path),
        SCRAPESPY_MONITOR_TICK_SECONDS=TICK,
    )
    yield started
    started.stop()


def test_the_dashboard_lists_monitors_their_last_change_and_pauses_resumes_deletes(
    public_service: PublicService, accounts: Accounts, site: TargetSite
) -> None:
    client, _, _ = member(public_service.public, accounts, "monitors", credits=50)
    key = new_key(client)
    assert "No monitors yet" in text_of(client.get("/dashboard/monitors"))
    page = Changing(site, "/monitored-dashboard")
    made = call(
        "POST",
        public_service.url("/monitors"),
        {"url": page.url, "schedule": 3600, "name": "shop"},
        key=key,
    ).json
    check = finished_checks(public_service.process, key, made["id"], 1)[0]
    diff = {"text": "-Fetch 1\n+Fetch <2>"}

    def changed(conn: Any) -> None:  # what a run with change_tracking stores
        summary = {
            "pages": {"total": 1, "done": 1},
            "results": [],
            "changes": [
                {
                    "url": page.url,
                    "change_status": "changed",
                    "change_tracking": {"change_status": "changed", "diff": diff},
                }
            ],
            "error": None,
        }
        conn.execute(
            monitor_checks.update()
            .where(monitor_checks.c.id == int(check["id"]))
            .values(changed=True, summary=orjson.dumps(summary).decode())
        )

    accounts.database.run_sync(changed)
    listing = client.get("/dashboard/monitors")
    assert listing.status == 200
    body = listing.body.decode()
    row = f"monitor-{made['id']}"
    assert cell(body, row, "monitor-status") == "active"
    assert cell(body, row, "monitor-last").startswith("completed, changed at ")
    assert "shop" in body and "Last change" in body
    assert "+Fetch &lt;2&gt;" in body  # the diff, escaped

    stranger, _, _ = member(public_service.public, accounts, "monitors-stranger")
    refused = stranger.post(
        f"/dashboard/monitors/{made['id']}/delete", {"csrf_token": stranger.csrf_token()}
    )
    assert refused.status == 404

    for action, status in (("pause", "paused"), ("resume", "active")):
        done = client.post(
            f"/dashboard/monitors/{made['id']}/{action}", {"csrf_token": client.csrf_token()}
        )
        assert done.status == 303, done.body
        page_text = client.get("/dashboard/monitors").body.decode()
        assert cell(page_text, row, "monitor-status") == status
    gone = client.post(
        f"/dashboard/monitors/{made['id']}/delete", {"csrf_token": client.csrf_token()}
    )
    assert gone.status == 303
    assert call("GET", public_service.url(f"/monitors/{made['id']}"), key=key).status == 404
