"""service.jobs.queue_worker: a worker that stops on a database error is started again, and a
running worker records a task's end once the database answers again.

procrastinate's ``Worker`` is replaced by a scripted stand-in here, and its job manager by one
whose queries fail as a lost connection does; the real worker against a
real PostgreSQL restart is tests/test_e2e_pg_restart.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from service.jobs import queue_worker
from service.jobs.queue_worker import QueueWorker, _worker_class, alive_workers, reason_of


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
    monkeypatch.setattr(queue_worker, "_worker_class", lambda: ScriptedWorker)
    monkeypatch.setattr(queue_worker, "FIRST_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(queue_worker, "REGISTERED_POLL_SECONDS", 0.001)


def on_loop(coroutine: Any) -> Deferred[Any]:
    """An asyncio coroutine awaited from a test (a Twisted coroutine): the reactor's loop."""
    return Deferred.fromFuture(asyncio.ensure_future(coroutine))


async def working(worker: QueueWorker, starts: int, timeout: float = 5) -> None:
    """Until the ``starts``-th worker runs."""
    await until(lambda: worker.app.started >= starts and worker.trouble is None, timeout)


async def until(condition: Callable[[], object], timeout: float = 5) -> None:
    """Until ``condition()`` holds (a TimeoutError after ``timeout`` s)."""

    async def wait() -> None:
        while not condition():
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
        # the supervisor unregisters the first worker once it has seen the fourth register,
        # which may be after the test saw it run (a busy machine)
        await on_loop(until(lambda: app.job_manager.unregistered))
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


class EndsOfTasks:
    """procrastinate's job manager recording tasks' ends, whose first ``failures`` fail as
    given."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.tries = 0
        self.retried: list[int] = []
        self.finished: list[int] = []

    def _fail(self) -> None:
        self.tries += 1
        if self.failures:
            raise self.failures.pop(0)

    async def retry_job(self, job: Any, **_: Any) -> None:
        self._fail()
        self.retried.append(job.id)

    async def finish_job(self, job: Any, **_: Any) -> None:
        self._fail()
        self.finished.append(job.id)


def connector_error(cause: Exception) -> Exception:
    from procrastinate.exceptions import ConnectorException

    error = ConnectorException()
    error.__cause__ = cause
    return error


def a_task(task_id: int) -> Any:
    from procrastinate import jobs

    return jobs.Job(
        id=task_id,
        queue="default",
        lock=None,
        queueing_lock=None,
        task_name="scrapespy.job_page",
        task_kwargs={},
    )


async def persist(manager: EndsOfTasks, task_id: int, retry: bool, stopping: bool = False) -> Any:
    from procrastinate import jobs
    from procrastinate.retry import RetryDecision

    app = type("App", (), {"job_manager": manager})()
    worker = _worker_class()(app, name="test", install_signal_handlers=False)
    if stopping:
        worker.stop()
    job = a_task(task_id)
    decision = RetryDecision(retry_in={"seconds": 1}) if retry else None
    status = jobs.Status.FAILED if retry else jobs.Status.SUCCEEDED
    context = type("Context", (), {"job": job})()
    await worker._persist_job_status(job, status, decision, context, None)
    return worker


@pytest_twisted.ensureDeferred
async def test_the_end_of_a_task_lost_with_its_connection_is_recorded_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PostgreSQL restarted under a running worker: the failed task's retry, and a finished
    task's deletion, each failed once on a connection the server had closed. procrastinate
    left both ``doing`` under the live worker for good (issue 43)."""
    import psycopg

    broken = [connector_error(psycopg.OperationalError("server closed the connection"))]
    manager = EndsOfTasks(list(broken))
    with caplog.at_level(logging.WARNING, logger="service.jobs.queue_worker"):
        await on_loop(persist(manager, 7, retry=True))
        manager.failures = list(broken)
        await on_loop(persist(manager, 8, retry=False))
    assert manager.retried == [7] and manager.finished == [8]
    assert manager.tries == 4
    assert caplog.records[0].getMessage() == (
        "could not record the end of task 7: OperationalError: server closed the connection;"
        " tried again in 0.0 s"
    )


@pytest_twisted.ensureDeferred
async def test_an_error_of_the_query_or_a_stopping_worker_is_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import psycopg

    refused = connector_error(psycopg.errors.RaiseException("Job was not found"))
    manager = EndsOfTasks([refused])
    with caplog.at_level(logging.WARNING, logger="service.jobs.queue_worker"):
        await on_loop(persist(manager, 3, retry=False))  # put back by a recovery meanwhile
        manager.failures = [connector_error(psycopg.OperationalError("no connection"))]
        await on_loop(persist(manager, 4, retry=True, stopping=True))
    assert manager.tries == 2 and manager.finished == [] and manager.retried == []
    assert [record.getMessage() for record in caplog.records] == [
        "could not record the end of task 3: RaiseException: Job was not found",
        "could not record the end of task 4: OperationalError: no connection",
    ]


@pytest_twisted.ensureDeferred
async def test_a_worker_whose_database_stays_away_stops(caplog: pytest.LogCaptureFixture) -> None:
    """It stops as it does when its own queries fail (QueueWorker starts another); the task,
    left ``doing`` under it, is put back once it is unregistered. Retrying until the database
    answered kept every slot of the worker: it fetched nothing, never stopped, and ``/healthz``
    did not say the queue was down."""
    import psycopg

    away = connector_error(psycopg.OperationalError("connection refused"))
    manager = EndsOfTasks([away, away])
    with caplog.at_level(logging.WARNING, logger="service.jobs.queue_worker"):
        worker = await on_loop(persist(manager, 9, retry=True))
    assert manager.tries == 2 and manager.retried == []
    assert worker._stop_event.is_set()
    assert caplog.records[-1].getMessage() == (
        "could not record the end of task 9: OperationalError: connection refused; the worker"
        " stops, and the task is put back once it is unregistered"
    )


@pytest_twisted.ensureDeferred
async def test_alive_workers_are_this_process_running_workers_of_the_app() -> None:
    """The job queue's recovery never takes their tasks, whatever their heartbeat says."""
    app, other = App(["work", "lose", "work"]), App([])
    pages, webhooks = QueueWorker(app, "the job queue"), QueueWorker(app, "the webhook queue")
    elsewhere = QueueWorker(other, "the job queue")
    for worker in (pages, webhooks, elsewhere):
        worker.start()
    await on_loop(working(pages, 3))  # the webhook queue's first worker stopped: its second
    await on_loop(working(webhooks, 3))
    alive = alive_workers(app)
    assert set(alive) == {pages.worker_id, webhooks.worker_id} and len(set(alive)) == 2
    await pages.stop()
    assert alive_workers(app) == [webhooks.worker_id]
    await webhooks.stop()
    await elsewhere.stop()
    assert alive_workers(app) == []
