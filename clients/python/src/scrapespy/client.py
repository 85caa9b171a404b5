"""``Scrapespy``: the blocking client (``AsyncScrapespy`` in scrapespy.async_client is its
twin). One ``httpx.Client`` per instance, kept alive between calls; close it, or use ``with``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from scrapespy import _base
from scrapespy._base import Call, Progress
from scrapespy.errors import RateLimited, ServiceUnavailable, WaitTimeout
from scrapespy.models import (
    Account,
    JobRef,
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


class Scrapespy:
    """The scrapespy API. ``api_key`` defaults to ``$SCRAPESPY_API_KEY``, ``base_url`` to
    ``$SCRAPESPY_URL`` or http://127.0.0.1:8080. 429 and 503 are retried up to
    ``max_retries`` times (honouring Retry-After), a 402 never."""

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
        self._http = httpx.Client(base_url=url, headers=_base.headers(key), timeout=timeout)

    # plumbing

    def _send(self, call: Call) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(
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
                response.close()
            time.sleep(delay)
            attempt += 1

    # scrapes

    def scrape(
        self, url: str, *, idempotency_key: str | None = None, **options: Any
    ) -> ScrapeResult:
        """``POST /scrape``: ``options`` are its fields (``engine``, ``formats``,
        ``only_main_content``, ``selectors``, ``proxy_type``, ``location``, ``max_credits``,
        ``max_age``, ``actions`` ...). A failed scrape is returned (``success`` false), not
        raised: see ``ScrapeResult.raise_for_failure()``. With ``idempotency_key`` a broken
        connection is retried too (the service replays the first answer, charging nothing
        more)."""
        call = Call("POST", "/scrape", _base.body({"url": url}, options))
        if idempotency_key is not None:
            call.headers["Idempotency-Key"] = idempotency_key
            call.idempotent = True
        return _base.scrape_result(self._send(call))

    def search(self, query: str, **options: Any) -> SearchResult:
        """``POST /search`` on the server's search backend: ``options`` are its fields
        (``limit``, ``sources``, ``lang``, ``country``, ``tbs``, ``include_domains``,
        ``exclude_domains``, ``timeout``, and ``scrape``: ``POST /scrape``'s options for every
        web result, whose result is then each item's ``page``)."""
        call = Call("POST", "/search", _base.body({"query": query}, options))
        return _base.read(self._send(call), SearchResult)

    def map(self, url: str, **options: Any) -> MapResult:
        """``POST /map``: the site's URLs (``max_urls``, ``include_paths``, ``sitemap`` ...)."""
        call = Call("POST", "/map", _base.body({"url": url}, options))
        return _base.read(self._send(call), MapResult)

    # jobs

    def _submit(self, call: Call) -> JobRef:
        ref = _base.read(self._send(call), JobRef)
        ref.idempotency_key = call.headers["Idempotency-Key"]
        ref._client = self
        return ref

    def batch(
        self,
        urls: Sequence[str],
        webhook: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> JobRef:
        """``POST /batch``: every URL scraped with ``options``; always sent with an
        Idempotency-Key (a new uuid4 unless given), the same on every retry."""
        fields = _base.body({"urls": list(urls), "webhook": webhook}, options)
        return self._submit(_base.job_submission("/batch", fields, idempotency_key))

    def crawl(self, url: str, idempotency_key: str | None = None, **options: Any) -> JobRef:
        """``POST /crawl``: ``max_pages``, ``max_depth``, ``include_paths`` ... and any scrape
        option for every page; sent with an Idempotency-Key as ``batch`` is."""
        fields = _base.body({"url": url}, options)
        return self._submit(_base.job_submission("/crawl", fields, idempotency_key))

    def job(self, job_id: str, cursor: str | None = None, limit: int | None = None) -> JobStatus:
        """``GET /jobs/{id}``: status, counts, credits and one page of results."""
        path = f"/jobs/{quote(job_id, safe='')}"
        call = Call("GET", path, params=_base.query(cursor=cursor, limit=limit), idempotent=True)
        return _base.read(self._send(call), JobStatus)

    def jobs(self, cursor: str | None = None, limit: int | None = None) -> JobsPage:
        """``GET /jobs``: the account's jobs, newest first, one page."""
        call = Call("GET", "/jobs", params=_base.query(cursor=cursor, limit=limit), idempotent=True)
        return _base.read(self._send(call), JobsPage)

    def cancel(self, job_id: str) -> JobStatus:
        """``DELETE /jobs/{id}``: pages not started are skipped; answers the job (no results)."""
        call = Call("DELETE", f"/jobs/{quote(job_id, safe='')}", idempotent=True)
        return _base.read(self._send(call), JobStatus)

    def wait(
        self,
        job_id: str,
        poll_interval: float = 2.0,
        timeout: float | None = None,
        progress: Progress = False,
        limit: int | None = None,
    ) -> JobStatus:
        """Poll the job until it is finished and return its final status (with the first
        ``limit`` results). Polls light (one result a poll), more slowly while nothing moves (up
        to every 10 s); a 429 or 503 past the retries waits its Retry-After. ``progress=True``
        prints a progress line on stderr; a callable gets each new JobStatus. Past ``timeout``
        seconds, raises WaitTimeout."""
        poller = _base.Poller(poll_interval, progress)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                status = self.job(job_id, limit=1)
            except (RateLimited, ServiceUnavailable) as error:
                pause = getattr(error, "retry_after", None) or poller.interval
            else:
                poller.seen(status)
                if status.finished:
                    return status if limit == 1 else self.job(job_id, limit=limit)
                pause = poller.interval
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WaitTimeout(f"job {job_id} did not finish within {timeout} s")
                pause = min(pause, left)
            time.sleep(pause)

    def job_results(self, job_id: str, limit: int | None = None) -> Iterator[ScrapeResult]:
        """Every result of the job, in the order of its URLs, across the pages of results.
        Walk it once the job is finished (``wait``): a running job shows what finished so far."""
        cursor = None
        while True:
            status = self.job(job_id, cursor=cursor, limit=limit)
            yield from _base.page_results(status)
            cursor = status.next_cursor
            if not cursor:
                return

    # the account

    def account(self) -> Account:
        """``GET /account``: balance, held, available, residential trials, rate limits."""
        return _base.read(self._send(Call("GET", "/account", idempotent=True)), Account)

    def usage(self, **filters: Any) -> UsagePage:
        """``GET /usage``: one page of scrapes as billed (``since``, ``until``, ``cursor``,
        ``limit``; dates and datetimes are accepted)."""
        call = Call("GET", "/usage", params=_base.query(**filters), idempotent=True)
        return _base.read(self._send(call), UsagePage)

    def ledger(self, **filters: Any) -> LedgerPage:
        """``GET /ledger``: one page of changes of balance (the filters of ``usage``)."""
        call = Call("GET", "/ledger", params=_base.query(**filters), idempotent=True)
        return _base.read(self._send(call), LedgerPage)

    # sessions

    def sessions(self) -> SessionsList:
        """``GET /sessions``: the account's live sessions (a scrape's ``session=`` names one)."""
        return _base.read(self._send(Call("GET", "/sessions", idempotent=True)), SessionsList)

    def end_session(self, session_id: str) -> SessionEnded:
        """``DELETE /sessions/{id}``: its cookies, storage and proxy exit are forgotten."""
        call = Call("DELETE", f"/sessions/{quote(session_id, safe='')}", idempotent=True)
        return _base.read(self._send(call), SessionEnded)

    # monitors

    def create_monitor(
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
        return _base.read(self._send(Call("POST", "/monitors", body)), Monitor)

    def monitors(self, cursor: str | None = None, limit: int | None = None) -> MonitorsPage:
        """``GET /monitors``: the account's monitors, newest first, with their last checks."""
        call = Call(
            "GET", "/monitors", params=_base.query(cursor=cursor, limit=limit), idempotent=True
        )
        return _base.read(self._send(call), MonitorsPage)

    def monitor(self, monitor_id: str) -> Monitor:
        call = Call("GET", f"/monitors/{quote(monitor_id, safe='')}", idempotent=True)
        return _base.read(self._send(call), Monitor)

    def update_monitor(self, monitor_id: str, **changes: Any) -> Monitor:
        """``PATCH /monitors/{id}``: ``status``, ``schedule``, ``name``, ``webhook``."""
        call = Call("PATCH", f"/monitors/{quote(monitor_id, safe='')}", changes, idempotent=True)
        return _base.read(self._send(call), Monitor)

    def pause_monitor(self, monitor_id: str) -> Monitor:
        return self.update_monitor(monitor_id, status="paused")

    def resume_monitor(self, monitor_id: str) -> Monitor:
        """Resumed: its next run is its schedule's next time from now."""
        return self.update_monitor(monitor_id, status="active")

    def delete_monitor(self, monitor_id: str) -> MonitorDeleted:
        call = Call("DELETE", f"/monitors/{quote(monitor_id, safe='')}", idempotent=True)
        return _base.read(self._send(call), MonitorDeleted)

    def monitor_checks(
        self, monitor_id: str, cursor: str | None = None, limit: int | None = None
    ) -> ChecksPage:
        """``GET /monitors/{id}/checks``: its runs, newest first."""
        params = _base.query(cursor=cursor, limit=limit)
        path = f"/monitors/{quote(monitor_id, safe='')}/checks"
        call = Call("GET", path, params=params, idempotent=True)
        return _base.read(self._send(call), ChecksPage)

    # life cycle

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Scrapespy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
