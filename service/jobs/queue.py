"""Hands a job's pages to :meth:`service.jobs.batches.Batches.run_page`, at most twice
``config.job_pages_in_flight`` at once per instance: ``run_page`` scrapes at most that many at
once, and the others are being claimed or stored meanwhile (``PAGES_PER_SCRAPE``).

PostgreSQL (:class:`PostgresQueue`): each page is one task of procrastinate, a maintained
PostgreSQL-backed queue (docs/decisions/0028 says why this one). Every instance runs a worker
on the reactor's own asyncio loop; workers take tasks with ``SELECT ... FOR UPDATE SKIP
LOCKED`` and wake on ``LISTEN/NOTIFY``, so the instances on one database share a job's pages.
A worker sends a heartbeat; the tasks of a worker whose heartbeat stopped (its instance died)
are put back in the queue by the other instances, each task by one (``TAKE_OVER``), and the
page's row tells the new attempt whether the dead one was billed
(service.jobs.page_claims.claim_page). A task that failed (the database was down, the service
shut down under it) is retried with a backoff, and a worker that stopped on a lost connection
is started again (service.jobs.queue_worker).

SQLite (:class:`LocalQueue`): the database is one host's file, so a loop in each process reads
the pages to run from their rows, oldest first, and claims one only at the attempt it read (the
processes of ``scrapespy serve --workers`` never run one page twice). A page left ``running`` by
a process that is gone is taken over the same way. It is not a distributed queue, and need not
be: SQLite is one host's database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

from sqlalchemy.engine import make_url
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.task import LoopingCall, deferLater

from service.core.reactor import running
from service.jobs import page_claims
from service.jobs.batches import Batches
from service.jobs.instances import is_dead
from service.jobs.page_runs import PageInterrupted
from service.jobs.queue_worker import QueueWorker, alive_workers, reason_of

log = logging.getLogger(__name__)

TASK = "scrapespy.job_page"
IDLE_POLL_SECONDS = 2.0  # LocalQueue: how often an idle loop looks for pages it was not told of
# PostgreSQL: a job stored by an instance that died before queueing its pages is queued by
# another after this long
NOT_ENQUEUED_AFTER = timedelta(seconds=60)
PAGES_PER_TASK_MOST = 16  # PostgresQueue: the most pages of a batch one task runs
# PostgresQueue: how often an idle worker looks for tasks it was not woken for. A wake-up (a
# task inserted; a crawl's lock set free, migration 0010) that arrives while the worker is
# fetching is lost: procrastinate clears its event after each fetch, and the worker then waits
# for the next one or this poll. Under load a two-instance test crawl of 19 pages took 15 s
# with 5 s here (procrastinate's default) and 9 s with 0.5; an idle worker's poll is one query.
TASK_POLL_SECONDS = 0.5
# Pages taken at once for each page a job may have in scraping (Batches.run_page): a page's
# claim and result are round trips to the database, and the pages beyond the scrapes' limit make
# them while the others are scraped. With one, a 1,000-page batch on PostgreSQL spent a quarter
# of each page's time on them, and its scrapes ran at two thirds of POST /scrape's rate.
PAGES_PER_SCRAPE = 2
# PostgresQueue: the longest a query of the queue waits for a connection of its pool. With the
# database away, procrastinate's worker noticed only after psycopg_pool's 30 s, twice (its
# fetch, then unregistering itself): a minute in which /healthz could not say so.
CONNECTION_WAIT_SECONDS = 5.0
# PostgresQueue: the tasks of dead workers put back in the queue, in one statement. procrastinate's
# own way (read the stalled tasks, then retry each by its id) let two instances both put back a
# task they had read stalled, the second after a live worker had taken it again: reset under
# that worker, it ran twice at once. Here each task is locked (SKIP LOCKED: another instance
# putting it back at the same moment keeps it), and its row is checked again once locked: a
# task a live worker took meanwhile no longer matches and is left alone (PostgreSQL checks the
# WHERE of an UPDATE again on a row changed since the statement began). A task of a worker
# that was unregistered has none. This instance's own running worker is alive whatever its
# heartbeat says: one late because the database was away a moment (the queue's pool was
# reconnecting) made the instance put back the tasks its own worker was running, which then ran
# twice. It takes every queue's tasks (the pages', the webhooks' of service.jobs.webhooks), as
# procrastinate's get_stalled_jobs did. Like procrastinate's retry (procrastinate_retry_job_v2)
# it counts an attempt; it also takes the dead worker off the task.
TAKE_OVER = """
WITH dead AS (
    SELECT id FROM procrastinate_workers
     WHERE last_heartbeat < NOW() - make_interval(secs => %(stalled)s)
       AND id <> ALL(%(alive)s::bigint[])
)
UPDATE procrastinate_jobs
   SET status = 'todo', attempts = attempts + 1, scheduled_at = NOW(), worker_id = NULL,
       abort_requested = false
 WHERE id IN (
           SELECT id FROM procrastinate_jobs
            WHERE status = 'doing'
              AND (worker_id IS NULL OR worker_id IN (SELECT id FROM dead))
            ORDER BY id
              FOR UPDATE SKIP LOCKED
       )
   AND status = 'doing'
   AND (worker_id IS NULL OR worker_id IN (SELECT id FROM dead))
RETURNING id
"""


class LocalQueue:
    def __init__(self, batches: Batches):
        self.batches = batches
        self.limit = PAGES_PER_SCRAPE * batches.config.job_pages_in_flight
        self.refill = max(1, self.limit // 4)
        self.busy: dict[int, Deferred[None]] = {}
        self._wake: Deferred[None] | None = None
        self._stopping = False
        self._loop: Deferred[None] | None = None

    def start(self) -> None:
        self._loop = Deferred.fromCoroutine(self._run())
        self._loop.addErrback(lambda failure: log.error("job loop stopped: %s", failure.value))

    async def enqueue(self, job_seq: int) -> None:
        self._poke()

    async def enqueue_many(self, job_seqs: list[int]) -> None:
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.called:
            self._wake.callback(None)

    async def _run(self) -> None:
        while not self._stopping:
            room = self.limit - len(self.busy)
            pages: list[tuple[int, int, int]] = []
            # a read for each page that finished was one more database call per page: read
            # again when a quarter of the slots are free, or when none is busy
            if room >= self.refill or not self.busy:
                try:
                    pages = await self.batches.database.run(
                        page_claims.next_pages,
                        set(self.busy),
                        room,
                        self._dead,
                        self.batches.config.crawl_pages_per_site,
                    )
                except Exception as exc:  # the database is down: look again later
                    log.warning("could not read the next pages of jobs: %s", exc)
            for page_id, attempt, job_seq in pages:
                self.busy[page_id] = Deferred.fromCoroutine(self._page(page_id, attempt, job_seq))
            if not pages or self.limit - len(self.busy) < self.refill:
                self._wake = Deferred()
                timer = running().callLater(IDLE_POLL_SECONDS, self._poke)
                await self._wake
                if timer.active():
                    timer.cancel()

    def _dead(self, instance: str | None) -> bool:
        return is_dead(instance, self.batches.instance)

    async def _page(self, page_id: int, attempt: int, job_seq: int) -> None:
        try:
            await self.batches.run_page(page_id, attempt, job_seq)
        except PageInterrupted:
            pass
        except Exception:
            log.exception("page %s of a job failed; it is tried again", page_id)
            await deferLater(running(), 1.0)
        finally:
            self.busy.pop(page_id, None)
            self._poke()

    def stop_taking(self) -> None:
        self._stopping = True
        self._poke()

    async def stop(self) -> None:
        self.stop_taking()
        if self.busy:
            await DeferredList(list(self.busy.values()))


def _await(awaitable: Awaitable[Any]) -> Deferred[Any]:
    """An asyncio awaitable as a Deferred: both run on the reactor's asyncio loop."""
    return Deferred.fromFuture(asyncio.ensure_future(awaitable))


def pages_per_task(pages: int, in_flight: int) -> int:
    """How many of a batch's pages one task runs: one while the batch has fewer than two pages
    for each of an instance's pages in flight (so that its pages spread over every worker's
    slots and every instance), up to ``PAGES_PER_TASK_MOST`` for a large batch. A task costs
    procrastinate two queries (take it, delete it when done) on the reactor's thread: per page,
    they cost a 1,000-page batch more CPU than the page's own database work."""
    return max(1, min(PAGES_PER_TASK_MOST, pages // (2 * max(1, in_flight))))


def _unchecked_pool(**kwargs: Any) -> Any:
    """procrastinate's pool without its check of each connection it lends: a round trip of its
    own before every query, two a page. A connection the server dropped fails its query once and
    is thrown away by the pool (psycopg_pool discards a broken connection when it is given back);
    the worker's next fetch, or the task's retry, gets a new one."""
    from psycopg_pool import AsyncConnectionPool

    kwargs.pop("check", None)
    return AsyncConnectionPool(**kwargs)


async def take_over(app: Any, stalled: float, alive: list[int]) -> list[int]:
    """Puts back in the queue the tasks of the workers whose heartbeat is older than
    ``stalled`` seconds (never those of ``alive``: this instance's running workers), each task
    by one instance only (``TAKE_OVER``); the ids of those this one put back. An asyncio
    coroutine, on procrastinate's connector."""
    rows = await app.connector.execute_query_all_async(
        TAKE_OVER, stalled=float(stalled), alive=alive
    )
    tasks = [int(row["id"]) for row in rows]
    for task in tasks:
        log.warning("page task %s of a dead worker is run again", task)
    return tasks


class PostgresQueue:
    def __init__(self, batches: Batches):
        from procrastinate import App, PsycopgConnector, RetryStrategy

        self.batches = batches
        config = batches.config
        # procrastinate logs each task's start and end at INFO: two lines per page of a job
        logging.getLogger("procrastinate").setLevel(logging.WARNING)
        url = make_url(config.database_url).set(drivername="postgresql")
        self.app = App(
            connector=PsycopgConnector(
                conninfo=url.render_as_string(hide_password=False),
                min_size=1,
                max_size=4,
                timeout=CONNECTION_WAIT_SECONDS,
                pool_factory=_unchecked_pool,
            )
        )
        self.task = self.app.task(
            name=TASK,
            retry=RetryStrategy(max_attempts=20, wait=1, exponential_wait=2),
        )(self._page)
        self.stalled = config.job_stalled_seconds
        self.worker = QueueWorker(
            self.app,
            "the job queue",
            # the pages' queue: webhooks have a worker of their own (service.jobs.webhooks)
            queues=["default"],
            concurrency=PAGES_PER_SCRAPE * config.job_pages_in_flight,
            name=batches.instance,
            install_signal_handlers=False,
            delete_jobs="successful",
            update_heartbeat_interval=max(0.5, self.stalled / 4),
            stalled_worker_timeout=self.stalled,
            fetch_job_polling_interval=TASK_POLL_SECONDS,
        )
        self._recovery = LoopingCall(lambda: Deferred.fromCoroutine(self._recover()))
        self._recovery.clock = running()

    async def open(self) -> None:
        await _await(self.app.open_async())

    def start(self) -> None:
        self.worker.start()
        self._recovery.start(max(1.0, self.stalled / 3), now=False).addErrback(
            lambda failure: log.error("job recovery stopped: %s", failure.value)
        )

    async def _page(
        self,
        page_id: int | None = None,
        page_ids: list[int] | None = None,
        job_seq: int | None = None,
    ) -> None:
        """The task: one page (a crawl's, service.jobs.crawl_store) or a few of a batch with their
        job, one after the other; runs on the worker, on the reactor's asyncio loop. Pages a
        run of the task already finished are not scraped again when it is retried
        (page_claims.claim_page)."""
        loop = asyncio.get_running_loop()
        for page in [page_id] if page_id is not None else page_ids or []:
            run = self.batches.run_page(page, job_seq=job_seq)
            await Deferred.fromCoroutine(run).asFuture(loop)

    async def enqueue(self, job_seq: int) -> None:
        await self.enqueue_many([job_seq])

    async def enqueue_many(self, job_seqs: list[int]) -> None:
        """The jobs' pending pages handed to the queue: one read, one batch of tasks and one
        write for them all (a monitors' tick queues up to DUE_PER_TICK one-page jobs at once)."""
        if not job_seqs:
            return
        pages_of = await self.batches.database.run(page_claims.pages_of_jobs, job_seqs)
        tasks: list[dict[str, Any]] = []
        for job_seq, pages in pages_of.items():
            size = pages_per_task(len(pages), self.batches.config.job_pages_in_flight)
            tasks += [
                {"page_ids": pages[start : start + size], "job_seq": job_seq}
                for start in range(0, len(pages), size)
            ]
        for start in range(0, len(tasks), 500):
            await _await(self.task.batch_defer_async(*tasks[start : start + 500]))
        await self.batches.database.run(page_claims.mark_enqueued, job_seqs)

    async def _recover(self) -> None:
        """Puts back the tasks of dead workers, and queues the jobs a dead instance stored but
        did not queue. A Twisted coroutine: it awaits the database's Deferreds."""
        try:
            await self._put_back()
        except Exception as exc:  # the database is down: next time
            log.warning("could not look for the pages of dead instances: %s", reason_of(exc))

    async def _put_back(self) -> None:
        await _await(take_over(self.app, self.stalled, alive_workers(self.app)))
        seqs = await self.batches.database.run(page_claims.not_enqueued, NOT_ENQUEUED_AFTER)
        await self.enqueue_many(seqs)

    def stop_taking(self) -> None:
        if self._recovery.running:
            self._recovery.stop()
        self.worker.stop_taking()

    async def stop(self) -> None:
        self.stop_taking()
        await self.worker.stop()
        await _await(self.app.close_async())
