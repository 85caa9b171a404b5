"""service.jobs.queue.take_over on a real PostgreSQL: a dead worker's tasks are put back in the
queue each by one instance, and never one a live worker holds.

procrastinate's own way, which the recovery used, read the stalled tasks and then retried each
by its id: a task another instance put back and a live worker took again between the two was
reset under that worker, and ran twice at once (issue 43). Here the live worker's taking of the
task is held open (its row locked, as during its fetch) while an instance recovers: the
recovery must leave the task to it. tests/test_e2e_takeover.py kills a whole instance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_twisted
from sqlalchemy.engine import make_url
from twisted.internet.defer import Deferred

from service.jobs.queue import TASK, take_over
from tests.conftest import a_database_of_its_own

pytestmark = pytest.mark.postgres

STALLED = 4.0  # seconds without a heartbeat after which a worker is dead


@pytest.fixture
def conninfo(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A database of its own, with procrastinate's schema (migration 0009)."""
    for url, _accounts in a_database_of_its_own(database_url, tmp_path):
        yield make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def on_loop(coroutine: Any) -> Deferred[Any]:
    return Deferred.fromFuture(asyncio.ensure_future(coroutine))


def setup(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """A dead worker (its heartbeat a minute old) holding tasks 'x' and 'y', and a live one."""
    made = {}
    for name, age in (("dead", 60), ("live", 0)):
        made[name] = conn.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat)"
            " VALUES (NOW() - make_interval(secs => %s)) RETURNING id",
            (age,),
        ).fetchone()[0]  # type: ignore[index]
    for name in ("x", "y"):
        made[name] = conn.execute(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, status, worker_id)"
            " VALUES ('default', %s, 'doing', %s) RETURNING id",
            (TASK, made["dead"]),
        ).fetchone()[0]  # type: ignore[index]
    return made


def state(conn: psycopg.Connection[Any], task: int) -> tuple[str, int | None]:
    row = conn.execute(
        "SELECT status, worker_id FROM procrastinate_jobs WHERE id = %s", (task,)
    ).fetchone()
    assert row is not None
    return str(row[0]), row[1]


async def waiting_on_a_lock(conn: psycopg.Connection[Any], done: asyncio.Future[Any]) -> bool:
    """Until the recovery's query waits for a row lock (True), or ends (False)."""
    for _ in range(2000):  # bounded: 100 s
        if done.done():
            return False
        waiting = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        if waiting and waiting[0]:
            return True
        await asyncio.sleep(0.05)
    raise AssertionError("the recovery neither ended nor waited")


@pytest_twisted.ensureDeferred
async def test_a_task_a_live_worker_is_taking_is_left_to_it(conninfo: str) -> None:
    from procrastinate import App, PsycopgConnector

    admin = psycopg.connect(conninfo, autocommit=True)
    taker = psycopg.connect(conninfo)  # the live worker, taking task x again
    app = App(connector=PsycopgConnector(conninfo=conninfo))
    try:
        made = setup(admin)
        await on_loop(app.open_async())
        # another instance put x back and the live worker is fetching it: its row is locked
        taker.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
            (made["live"], made["x"]),
        )
        recovery = asyncio.ensure_future(take_over(app, STALLED, alive=[]))
        await on_loop(waiting_on_a_lock(admin, recovery))
        taker.commit()  # the live worker holds x
        put_back = await on_loop(recovery)
        assert put_back == [made["y"]]
        assert state(admin, made["x"]) == ("doing", made["live"])
        assert state(admin, made["y"]) == ("todo", None)
        # a second instance, or the next round, finds nothing more to put back
        assert await on_loop(take_over(app, STALLED, alive=[])) == []
    finally:
        taker.close()
        await on_loop(app.close_async())
        admin.close()


@pytest_twisted.ensureDeferred
async def test_concurrent_recoveries_put_each_task_back_once(conninfo: str) -> None:
    from procrastinate import App, PsycopgConnector

    admin = psycopg.connect(conninfo, autocommit=True)
    apps = [App(connector=PsycopgConnector(conninfo=conninfo)) for _ in range(4)]
    try:
        made = setup(admin)
        for app in apps:
            await on_loop(app.open_async())
        rounds = [take_over(app, STALLED, alive=[]) for app in apps for _ in range(3)]
        put_back = await on_loop(asyncio.gather(*rounds))
        assert sorted(task for tasks in put_back for task in tasks) == [made["x"], made["y"]]
        # this instance's own worker is alive, whatever its heartbeat says
        admin.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s", (made["dead"],)
        )
        assert await on_loop(take_over(apps[0], STALLED, alive=[made["dead"]])) == []
    finally:
        for app in apps:
            await on_loop(app.close_async())
        admin.close()
