"""``AsyncScrapespy``: ``Scrapespy``'s twin for asyncio, the same methods awaited, on one
``httpx.AsyncClient``; close it (``await client.close()``) or use ``async with``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from scrapespy import _base
from scrapespy._base import Call, Progress
from scrapespy.errors import RateLimited, ServiceUnavailable, WaitTimeout
from scrapespy.models import (
    Account,
    AsyncJobRef,
    JobsPage,
    JobStatus,
    LedgerPage,
    MapResult,
    ScrapeResult,
    SessionEnded,
    SessionsList,
    UsagePage,
)
from scrapespy.monitors import (
    ChecksPage,
    Monitor,
    MonitorDeleted,
    MonitorsPage,
    monitor_body,
)
from scrapespy.search import SearchResult


class AsyncScrapespy:
    """The scrapespy API for asyncio; see :class:`scrapespy.Scrapespy` for each method."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout = _base.DEFAULT_TIMEOUT,
        max_retries: int = 3,
    ) -> None:
        key, url = _base.settings(api_key, base_url)
        self.base_url = url
        self.max_retries = max(0, max_retries)
        self._http = httpx.AsyncClient(base_url=url, headers=_base.headers(key), timeout=timeout)

    async def _send(self, call: Call) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, params=call.params, headers=call.headers
                )
            except httpx.TransportError as error:
                delay = _base.connection_retry_delay(error, call, attempt, self.max_retries)
                if delay is None:
                    raise _base.connection_failed(error, call) from error
            else:
                delay = _base.retry_delay(response, attempt, self.max_retries)
                if delay is None:
                    return response
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1

    async def scrape(
        self, url: str, *, idempotency_key: str | None = None, **options: Any
    ) -> ScrapeResult:
        call = Call("POST", "/scrape", _base.body({"url": url}, options))
        if idempotency_key is not None:
            call.headers["Idempotency-Key"] = idempotency_key
            call.idempotent = True
        return _base.scrape_result(await self._send(call))

    async def search(self, query: str, **options: Any) -> SearchResult:
        call = Call("POST", "/search", _base.body({"query": query}, options))
        return _base.read(await self._send(call), SearchResult)

    async def map(self, url: str, **options: Any) -> MapResult:
        call = Call("POST", "/map", _base.body({"url": url}, options))
        return _base.read(await self._send(call), MapResult)

    async def _submit(self, call: Call) -> AsyncJobRef:
        ref = _base.read(await self._send(call), AsyncJobRef)
        ref.idempotency_key = call.headers["Idempotency-Key"]
        ref._client = self
        return ref

    async def batch(
        self,
        urls: Sequence[str],
        webhook: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> AsyncJobRef:
        fields = _base.body({"urls": list(urls), "webhook": webhook}, options)
        return await self._submit(_base.job_submission("/batch", fields, idempotency_key))

    async def crawl(
        self, url: str, idempotency_key: str | None = None, **options: Any
    ) -> AsyncJobRef:
        fields = _base.body({"url": url}, options)
        return await self._submit(_base.job_submission("/crawl", fields, idempotency_key))

    async def job(
        self, job_id: str, cursor: str | None = None, limit: int | None = None
    ) -> JobStatus:
        path = f"/jobs/{quote(job_id, safe='')}"
        call = Call("GET", path, params=_base.query(cursor=cursor, limit=limit), idempotent=True)
        return _base.read(await self._send(call), JobStatus)

    async def jobs(self, cursor: str | None = None, limit: int | None = None) -> JobsPage:
        call = Call("GET", "/jobs", params=_base.query(cursor=cursor, limit=limit), idempotent=True)
        return _base.read(await self._send(call), JobsPage)

    async def cancel(self, job_id: str) -> JobStatus:
        call = Call("DELETE", f"/jobs/{quote(job_id, safe='')}", idempotent=True)
        return _base.read(await self._send(call), JobStatus)

    async def wait(
        self,
        job_id: str,
        poll_interval: float = 2.0,
        timeout: float | None = None,
        progress: Progress = False,
        limit: int | None = None,
    ) -> JobStatus:
        poller = _base.Poller(poll_interval, progress)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                status = await self.job(job_id, limit=1)
            except (RateLimited, ServiceUnavailable) as error:
                pause = getattr(error, "retry_after", None) or poller.interval
            else:
                poller.seen(status)
                if status.finished:
                    return status if limit == 1 else await self.job(job_id, limit=limit)
                pause = poller.interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WaitTimeout(f"job {job_id} did not finish within {timeout} s")
                pause = min(pause, left)
            await asyncio.sleep(pause)

    async def job_results(
        self, job_id: str, limit: int | None = None
    ) -> AsyncIterator[ScrapeResult]:
        cursor = None
        while True:
            status = await self.job(job_id, cursor=cursor, limit=limit)
            for result in _base.page_results(status):
                yield result
            cursor = status.next_cursor
            if not cursor:
                return

    async def account(self) -> Account:
        return _base.read(await self._send(Call("GET", "/account", idempotent=True)), Account)

    async def usage(self, **filters: Any) -> UsagePage:
        call = Call("GET", "/usage", params=_base.query(**filters), idempotent=True)
        return _base.read(await self._send(call), UsagePage)

    async def ledger(self, **filters: Any) -> LedgerPage:
        call = Call("GET", "/ledger", params=_base.query(**filters), idempotent=True)
        return _base.read(await self._send(call), LedgerPage)

    async def sessions(self) -> SessionsList:
        call = Call("GET", "/sessions", idempotent=True)
        return _base.read(await self._send(call), SessionsList)

    async def end_session(self, session_id: str) -> SessionEnded:
        call = Call("DELETE", f"/sessions/{quote(session_id, safe='')}", idempotent=True)
        return _base.read(await self._send(call), SessionEnded)

    # monitors

    async def create_monitor(
        self,
        url: str | None = None,
        *,
        schedule: int | str,
        crawl: dict[str, Any] | None = None,
        name: str | None = None,
        webhook: dict[str, Any] | None = None,
        **options: Any,
    ) -> Monitor:
        """``POST /monitors``: ``url`` (or ``crawl``, the fields of ``POST /crawl``) scraped on
        ``schedule`` (seconds, or a cron expression), each run with ``options`` (``formats``,
        ``change_tracking``, ``engine`` ...); ``webhook``: ``{"url", "events"}``."""
        body = monitor_body(url, schedule, crawl, name, webhook, options)
        return _base.read(await self._send(Call("POST", "/monitors", body)), Monitor)

    async def monitors(self, cursor: str | None = None, limit: int | None = None) -> MonitorsPage:
        """``GET /monitors``: the account's monitors, newest first, with their last checks."""
        call = Call(
            "GET", "/monitors", params=_base.query(cursor=cursor, limit=limit), idempotent=True
        )
        return _base.read(await self._send(call), MonitorsPage)

    async def monitor(self, monitor_id: str) -> Monitor:
        call = Call("GET", f"/monitors/{quote(monitor_id, safe='')}", idempotent=True)
        return _base.read(await self._send(call), Monitor)

    async def update_monitor(self, monitor_id: str, **changes: Any) -> Monitor:
        """``PATCH /monitors/{id}``: ``status``, ``schedule``, ``name``, ``webhook``."""
        call = Call("PATCH", f"/monitors/{quote(monitor_id, safe='')}", changes, idempotent=True)
        return _base.read(await self._send(call), Monitor)

    async def pause_monitor(self, monitor_id: str) -> Monitor:
        return await self.update_monitor(monitor_id, status="paused")

    async def resume_monitor(self, monitor_id: str) -> Monitor:
        """Resumed: its next run is its schedule's next time from now."""
        return await self.update_monitor(monitor_id, status="active")

    async def delete_monitor(self, monitor_id: str) -> MonitorDeleted:
        call = Call("DELETE", f"/monitors/{quote(monitor_id, safe='')}", idempotent=True)
        return _base.read(await self._send(call), MonitorDeleted)

    async def monitor_checks(
        self, monitor_id: str, cursor: str | None = None, limit: int | None = None
    ) -> ChecksPage:
        """``GET /monitors/{id}/checks``: its runs, newest first."""
        params = _base.query(cursor=cursor, limit=limit)
        path = f"/monitors/{quote(monitor_id, safe='')}/checks"
        call = Call("GET", path, params=params, idempotent=True)
        return _base.read(await self._send(call), ChecksPage)

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncScrapespy:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
