"""service.jobs.queue_worker: a worker that stops on a database error is started again.

procrastinate's ``Worker`` is replaced by a scripted stand-in here; the real worker against a
real PostgreSQL restart is tests/test_e2e_pg_restart.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from service.jobs import queue_worker
from service.jobs.queue_worker import QueueWorker, reason_of


class DatabaseError(Exception):
    """procrastinate's ConnectorException: says nothing, the driver's error is its cause."""


def lost_connection() -> DatabaseError:
    error = DatabaseError("\n    Database error.\n    ")
    error.__cause__ = OSError("connection refused\nIs the server running?")
    return error


class Pool:
    def __init__(self) -> None:
        self.checks = 0

    async def check(self) -> None:
        self.checks += 1


class JobManager:
    def __init__(self) -> None:
        self.unregistered: list[int] = []

    async def unregister_worker(self, worker_id: int) -> None:
        self.unregistered.append(worker_id)


class App:
    """What QueueWorker uses of procrastinate's App, and the script of the workers' runs."""

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.connector = type("Connector", (), {"pool": Pool()})()
        self.job_manager = JobManager()
        self.started = 0


class ScriptedWorker:
    def __init__(self, app: App, **options: Any) -> None:
        self.app = app
        self.worker_id: int | None = None

    async def run(self) -> None:
        self.app.started += 1
        step = self.app.script.pop(0) if self.app.script else "work"
        if step == "unreachable":  # fails before it registers
            raise lost_connection()
        self.worker_id = self.app.started
        if step == "lose":  # registers, then loses its connection and cannot unregister
            await asyncio.sleep(0)
            raise lost_connection()
        await asyncio.Event().wait()  # works until cancelled


@pytest.fixture(autouse=True)
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    import procrastinate.worker

    monkeypatch.setattr(procrastinate.worker, "Worker", ScriptedWorker)
    monkeypatch.setattr(queue_worker, "FIRST_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(queue_worker, "REGISTERED_POLL_SECONDS", 0.001)


def on_loop(coroutine: Any) -> Deferred[Any]:
    """An asyncio coroutine awaited from a test (a Twisted coroutine): the reactor's loop."""
    return Deferred.fromFuture(asyncio.ensure_future(coroutine))


async def working(worker: QueueWorker, starts: int, timeout: float = 5) -> None:
    """Until the ``starts``-th worker runs."""

    async def wait() -> None:
        while worker.app.started < starts or worker.trouble is not None:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(wait(), timeout)


@pytest_twisted.ensureDeferred
async def test_a_worker_that_loses_the_database_is_started_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = App(["lose", "unreachable", "unreachable"])
    worker = QueueWorker(app, "the job queue")
    with caplog.at_level(logging.WARNING, logger="service.jobs.queue_worker"):
        worker.start()
        await on_loop(working(worker, 4))
        await worker.stop()
    assert app.started == 4
    # the first worker could not unregister itself: the supervisor did once the fourth was up
    assert app.job_manager.unregistered == [1]
    assert app.connector.pool.checks == 3  # its broken idle connections dropped before each
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == (
        "the job queue's worker stopped: OSError: connection refused; it starts again in 0.0 s"
    )
    assert messages[-1] == "the job queue's worker is back"


@pytest_twisted.ensureDeferred
async def test_trouble_says_why_there_is_no_worker() -> None:
    app = App(["lose", "unreachable"])
    worker = QueueWorker(app, "the job queue")
    seen: list[str | None] = []

    async def watch() -> None:
        while app.started < 3:
            seen.append(worker.trouble)
            await asyncio.sleep(0.001)
        await working(worker, 3)
        seen.append(worker.trouble)

    assert worker.trouble is None  # the first worker starting is no outage
    worker.start()
    await on_loop(asyncio.wait_for(watch(), 5))
    await worker.stop()
    assert "its worker stopped (OSError: connection refused) and starts again" in seen
    assert seen[-1] is None


def test_reason_of_names_the_drivers_error() -> None:
    assert reason_of(lost_connection()) == "OSError: connection refused"
    assert reason_of(ValueError()) == "ValueError"
