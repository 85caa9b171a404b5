"""Monitors (``POST /monitors`` and friends): a URL, or a crawl, scraped again on a schedule.

Each run is a job of the account (a batch of the one URL, or a crawl from its start), made by the
monitor's key and run by the job queue (service.jobs.queue) like any other, so its pages are held,
scraped, settled and billed as ``POST /scrape``'s; a run the balance cannot pay for stops at its
first page with ``insufficient_credits``, unbilled, and after
``config.monitor_pause_after_unpaid`` such runs in a row the monitor pauses. Each run is a check
(service.jobs.monitor_store): its time, status, pages, changes and credits.

Every instance ticks every ``config.monitor_tick_seconds``: it claims the due runs (each once,
whichever instance's tick gets it, service.jobs.monitor_runs.claim_due), hands their jobs to the
queue, and finishes the checks whose jobs are done. The schedules read the clock, or in tests the
time in ``config.monitor_test_clock_file``.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall

from service.billing import keys
from service.core.errors import ApiError, NotFound
from service.core.reactor import running
from service.core.schemas import parse_json_object
from service.jobs import monitor_runs, monitor_store
from service.jobs.batches import Batches, _count, _cursor
from service.jobs.monitor_spec import clock_now, parse, parse_patch

log = logging.getLogger(__name__)

DUE_PER_TICK = 50  # runs one claim (one transaction) takes at most
CLAIMS_PER_TICK = 40  # claims one tick makes at most; what is left waits for the next tick
FINISHED_PER_TICK = 500  # checks one tick finishes at most, one transaction each


class TooManyMonitors(ApiError):
    status = 429
    code = "too_many_monitors"


class Monitors:
    def __init__(self, batches: Batches):
        self.batches = batches
        self.config = batches.config
        self.database = batches.database
        self._ticker = LoopingCall(lambda: Deferred.fromCoroutine(self.tick()))
        self._ticker.clock = running()
        self._ticking = False

    def now(self) -> datetime:
        return clock_now(self.config)

    # the API ---------------------------------------------------------------------------------

    async def create(self, caller: keys.Caller, body: bytes) -> dict[str, Any]:
        request = parse(parse_json_object(body), self.config)
        await self.batches.start_session(caller, request.options)
        try:
            return await self.database.run(
                monitor_store.create,
                public_id=uuid.uuid4().hex,
                account_id=caller.account_id,
                key_id=caller.key_id,
                key_hash=caller.key_hash,
                request=request,
                next_run_at=self.now(),
                limit=self.config.max_monitors_per_account,
            )
        except monitor_store.TooManyMonitors as exc:
            raise TooManyMonitors(
                f"this account has {exc.limit} monitors, the most it may; delete one first"
            ) from None

    async def view(self, caller: keys.Caller, public_id: str) -> dict[str, Any]:
        found = await self.database.run(monitor_store.view, caller.account_id, public_id)
        if found is None:
            raise NotFound("no such monitor")
        return found

    async def listing(self, caller: keys.Caller, query: dict[bytes, Any]) -> dict[str, Any]:
        before = _cursor(query.get(b"cursor"))
        limit = _count("limit", query.get(b"limit"), monitor_store.MONITORS_LIMIT, 100)
        return await self.database.run(monitor_store.listing, caller.account_id, before, limit)

    async def change(self, caller: keys.Caller, public_id: str, body: bytes) -> dict[str, Any]:
        data = parse_json_object(body)
        changes = parse_patch(data, self.config)
        found = await self.database.run(
            monitor_store.change, caller.account_id, public_id, changes, self.now()
        )
        if found is None:
            raise NotFound("no such monitor")
        return found

    async def remove(self, caller: keys.Caller, public_id: str) -> dict[str, Any]:
        if not await self.database.run(monitor_store.remove, caller.account_id, public_id):
            raise NotFound("no such monitor")
        return {"id": public_id[:32], "deleted": True}

    async def checks(
        self, caller: keys.Caller, public_id: str, query: dict[bytes, Any]
    ) -> dict[str, Any]:
        before = _cursor(query.get(b"cursor"))
        limit = _count("limit", query.get(b"limit"), monitor_store.CHECKS_LIMIT, 100)
        found = await self.database.run(
            monitor_store.checks, caller.account_id, public_id, before, limit
        )
        if found is None:
            raise NotFound("no such monitor")
        return found

    # the runs --------------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker.start(self.config.monitor_tick_seconds, now=False).addErrback(
            lambda failure: log.error("monitor ticks stopped: %s", failure.value)
        )

    def stop(self) -> None:
        if self._ticker.running:
            self._ticker.stop()

    async def tick(self) -> None:
        """The due runs made and queued, then the finished ones' checks finished; a database
        that is down is tried again at the next tick."""
        if self._ticking:
            return
        self._ticking = True
        try:
            await self.run_due()
            await self.finish_checks()
        except Exception as exc:
            log.warning("could not run the due monitors: %s", exc)
        finally:
            self._ticking = False

    async def run_due(self) -> int:
        """The due runs, claimed DUE_PER_TICK to a transaction until none is left (at most
        CLAIMS_PER_TICK transactions): a thousand monitors due in the same minute all start
        within one tick, each claim short enough not to hold the other instances' ticks."""
        claimed = 0
        for _ in range(CLAIMS_PER_TICK):
            made = await self.database.run(
                monitor_runs.claim_due,
                self.now(),
                DUE_PER_TICK,
                # a monitor's run is not refused for the account's API jobs in flight: the
                # monitors are bounded by their own number
                self.config.max_jobs_per_account + self.config.max_monitors_per_account,
                self.config.crawl_pages_per_site,
            )
            # a crawl's pages on PostgreSQL were queued with it (service.jobs.crawl_store);
            # on SQLite the queue's loop finds them
            batches = [seq for seq, kind in made if kind == "url"]
            if any(kind == "crawl" for _, kind in made) and self.database.dialect != "postgresql":
                batches.append(0)
            try:
                await self.batches.queue.enqueue_many(batches)
            except Exception as exc:  # stored: the queue's recovery queues them
                log.warning("%d monitors' runs are stored but not queued yet: %s", len(made), exc)
            claimed += len(made)
            if len(made) < DUE_PER_TICK:
                break
        return claimed

    async def finish_checks(self) -> int:
        found = await self.database.run(monitor_runs.finished_checks, FINISHED_PER_TICK)
        finished = 0
        for check_id in found:
            if await self.database.run(
                monitor_runs.finish_check, check_id, self.config.monitor_pause_after_unpaid
            ):
                finished += 1
        return finished
