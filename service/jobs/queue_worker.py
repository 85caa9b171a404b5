"""A procrastinate worker kept running through database outages (PostgreSQL).

procrastinate's worker stops for good at its first lost connection: a failed fetch ends its
loop, a failed heartbeat or a LISTEN connection it cannot open again stops it, and it then
fails to unregister itself. A PostgreSQL restart of two seconds (a failover, a minor upgrade)
thus stopped every background job until the service was restarted, while ``/healthz`` said
200. :class:`QueueWorker` starts a new worker after each stop, with a backoff: the new one
opens its own LISTEN connection and polls again; the tasks the old one held are put back by
the job queue's recovery once its heartbeat is old (service.jobs.queue), and each page's row
says whether it was billed (service.jobs.page_claims.claim_page). ``trouble`` says why the queue
cannot work, for ``/healthz``.

A worker that keeps running may still lose a connection under one of its tasks: the task's end
(procrastinate deletes the task, or schedules its retry) then failed, and procrastinate left the
task ``doing`` under a live worker, which no recovery takes, and its pages undone for good.
:class:`_Worker` records a task's end again, or stops when the database is still away (see
``_persist_job_status``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from functools import cache
from typing import Any

from twisted.internet.defer import Deferred

log = logging.getLogger(__name__)

FIRST_RETRY_SECONDS = 0.5
LAST_RETRY_SECONDS = 15.0  # the longest wait between two starts while the database is away
REGISTERED_POLL_SECONDS = 0.1  # while a new worker registers itself (its first query)
# tries at recording the end of a task (procrastinate's worker made one): a connection the
# server closed fails once, and the pool's next one works once the database answers
END_OF_TASK_TRIES = 2


def lost_connection(exc: BaseException) -> bool:
    """Whether a query failed because the database was away or its connection broke (not an
    error of the query itself): psycopg's ``OperationalError``, which psycopg_pool's timeout is
    too, wrapped by procrastinate's ``ConnectorException``."""
    import psycopg

    return isinstance(exc.__cause__ or exc, psycopg.OperationalError)


def reason_of(exc: BaseException) -> str:
    """One line on why a worker stopped: procrastinate's ``ConnectorException`` only says
    "Database error"; the driver's error it wraps says what happened."""
    cause = exc.__cause__ or exc
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0]}" if text else type(cause).__name__


# this process's queue workers (the job queue's, the webhook queue's), for alive_workers
_SUPERVISED: weakref.WeakSet[QueueWorker] = weakref.WeakSet()


def alive_workers(app: Any) -> list[int]:
    """The ids of this process's running workers of ``app``: alive, whatever their heartbeat
    says (a recovery never takes their tasks)."""
    return [
        worker.worker_id
        for worker in list(_SUPERVISED)
        if worker.app is app and worker.worker_id is not None
    ]


@cache
def _worker_class() -> type[Any]:
    from procrastinate.worker import Worker

    class _Worker(Worker):
        async def _persist_job_status(self, job: Any, *args: Any, **kwargs: Any) -> None:
            """Records the end of a task (``Worker._persist_job_status``: deleted, or scheduled
            again), once more after a lost connection: a task whose end was lost stayed
            ``doing`` under this worker, alive, and no recovery took it. When the database
            is still away the worker stops, as it does when its own queries fail; its tasks are
            put back once it is unregistered (by its own shutdown, or by
            :meth:`QueueWorker._unregister` once the next worker is up). Until the worker
            stops, a task retried here keeps its slot, so the worker fetches nothing more."""
            for tries in range(1, END_OF_TASK_TRIES + 1):
                try:
                    await super()._persist_job_status(job, *args, **kwargs)
                    return
                except Exception as exc:
                    error = exc
                    if self._stop_event.is_set() or not lost_connection(exc):
                        break  # an error of the query: the task was put back meanwhile
                    if tries < END_OF_TASK_TRIES:
                        log.warning(
                            "could not record the end of task %s: %s; tried again in %.1f s",
                            job.id,
                            reason_of(exc),
                            FIRST_RETRY_SECONDS,
                        )
                        await asyncio.sleep(FIRST_RETRY_SECONDS)
            if lost_connection(error) and not self._stop_event.is_set():
                log.warning(
                    "could not record the end of task %s: %s; the worker stops, and the task "
                    "is put back once it is unregistered",
                    job.id,
                    reason_of(error),
                )
                self.stop()
            else:
                log.warning("could not record the end of task %s: %s", job.id, reason_of(error))

    return _Worker


class QueueWorker:
    """Runs ``procrastinate.worker.Worker(app, **options)`` until :meth:`stop_taking`;
    ``what`` names the queue in logs and in ``/healthz`` ("the job queue")."""

    def __init__(self, app: Any, what: str, **options: Any) -> None:
        self.app = app
        self.what = what
        self.options = options
        self._worker: Any = None
        self._run: asyncio.Future[None] | None = None
        # why there is no worker; none while the first one starts, which is no outage (a
        # service that has just started answers /healthz 200, as it did before workers restarted)
        self._reason: str | None = None
        self._stopping = False
        self._task: asyncio.Future[None] | None = None
        _SUPERVISED.add(self)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._supervise())

    @property
    def worker_id(self) -> int | None:
        """The id of the worker running now, registered and not stopped; else None."""
        running = self._run is not None and not self._run.done()
        return self._worker.worker_id if running and self._worker is not None else None

    @property
    def trouble(self) -> str | None:
        """None while a worker is registered and running, or the first one starts; else why
        there is none."""
        running = self._run is not None and not self._run.done()
        if running and self._worker is not None and self._worker.worker_id is not None:
            return None
        return self._reason

    async def _supervise(self) -> None:
        try:
            await self._keep_running()
        except asyncio.CancelledError:  # stop_taking: the worker finishes the tasks it runs
            if self._run is not None:
                self._run.cancel()
                try:
                    await self._run
                except (Exception, asyncio.CancelledError):
                    pass
            raise

    async def _keep_running(self) -> None:
        wait = FIRST_RETRY_SECONDS
        stops = 0
        left: int | None = None  # the id of a stopped worker that could not unregister itself
        while not self._stopping:
            self._worker = _worker_class()(self.app, **self.options)
            self._run = run = asyncio.ensure_future(self._worker.run())
            if await self._registered(run):
                if stops:
                    log.warning("%s's worker is back", self.what)
                if left is not None:
                    await self._unregister(left)
                    left = None
                wait = FIRST_RETRY_SECONDS
            try:
                await run
                reason = "it stopped"  # a side task (heartbeat, LISTEN) failed: it stopped itself
            except Exception as exc:
                reason = reason_of(exc)
            if self._stopping:
                return
            # still set when unregistering failed: the worker had waited for its tasks first
            left = self._worker.worker_id if left is None else left
            stops += 1
            self._reason = f"its worker stopped ({reason}) and starts again"
            log.error("%s's worker stopped: %s; it starts again in %.1f s", self.what, reason, wait)
            await asyncio.sleep(wait)
            wait = min(LAST_RETRY_SECONDS, wait * 2)
            await self._drop_broken_connections()

    async def _registered(self, run: asyncio.Future[None]) -> bool:
        """Whether the new worker registered itself before ``run`` ended."""
        while self._worker.worker_id is None and not run.done():
            await asyncio.sleep(REGISTERED_POLL_SECONDS)
        return not run.done()

    async def _unregister(self, worker_id: int) -> None:
        """Unregisters a stopped worker: its tasks, which it no longer runs, lose their worker
        and are put back by the job queue's next recovery round, not ``job_stalled_seconds``
        after its last heartbeat."""
        try:
            await self.app.job_manager.unregister_worker(worker_id)
        except Exception as exc:  # its heartbeat ages: the recovery takes its tasks later
            log.warning("could not unregister a stopped worker: %s", reason_of(exc))

    async def _drop_broken_connections(self) -> None:
        """The pool lends its idle connections unchecked (service.jobs.queue._unchecked_pool):
        those the server closed would each fail one query of the new worker."""
        try:
            await self.app.connector.pool.check()
        except Exception as exc:  # the database is still away: the new worker will say so
            log.debug("could not check the queue's connections: %s", exc)

    def stop_taking(self) -> None:
        """The worker takes no more tasks; those it runs finish (:meth:`stop` waits)."""
        self._stopping = True
        if self._task is not None and not self._task.done():
            self._task.cancel()  # cancels the worker's run, which waits for its tasks

    async def stop(self) -> None:
        """A Twisted coroutine (Service.stop): it awaits the worker through a Deferred."""
        self.stop_taking()
        if self._task is not None:
            try:
                await Deferred.fromFuture(self._task)
            except (Exception, asyncio.CancelledError):  # cancelled, as it was asked to be
                pass
