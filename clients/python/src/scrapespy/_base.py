"""What the sync and the async client share: configuration, the retry policy, how a request
is built and how an answer is read. Neither does any I/O here."""

from __future__ import annotations

import os
import random
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, TypeVar

import httpx

from scrapespy._version import __version__
from scrapespy.errors import (
    ERROR_CODE_HEADER,
    ConnectionFailed,
    ScrapespyError,
    from_response,
    retry_after,
)
from scrapespy.models import JobStatus, Model, ScrapeResult

DEFAULT_URL = "http://127.0.0.1:8080"
# a scrape may take its own `timeout` (at most 120 s) plus its parse: the read timeout is above
DEFAULT_TIMEOUT: httpx.Timeout = httpx.Timeout(180.0, connect=10.0)
BACKOFF_BASE = 0.5
BACKOFF_CAP = 10.0
RETRY_STATUSES = frozenset({429, 503})
WAIT_INTERVAL_CAP = 10.0

M = TypeVar("M", bound=Model)
Progress = bool | Callable[[JobStatus], object]


def settings(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    key = api_key if api_key is not None else os.environ.get("SCRAPESPY_API_KEY")
    if not key:
        raise ScrapespyError(
            "no API key: pass api_key= or set SCRAPESPY_API_KEY (keys start with spy_)"
        )
    url = base_url or os.environ.get("SCRAPESPY_URL") or DEFAULT_URL
    return key, url.rstrip("/")


def headers(api_key: str) -> dict[str, str]:
    return {
        "X-API-Key": api_key,
        "User-Agent": f"scrapespy-python/{__version__} httpx/{httpx.__version__}",
        "Accept": "application/json",
    }


@dataclass
class Call:
    """One API call: what is sent on every attempt, and whether a broken connection may be
    retried (the call is a read, or carries an Idempotency-Key the service replays)."""

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False


def job_submission(path: str, body: dict[str, Any], idempotency_key: str | None) -> Call:
    """A POST /batch or /crawl: always with an Idempotency-Key, the same on every retry."""
    key = idempotency_key or str(uuid.uuid4())
    return Call("POST", path, body, headers={"Idempotency-Key": key}, idempotent=True)


def body(fixed: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The request body: the call's own fields and the caller's options, None ones left out
    (the service's defaults apply)."""
    merged = {**fixed, **options}
    return {name: value for name, value in merged.items() if value is not None}


def query(**params: Any) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, datetime | date):
            value = value.isoformat()
        out[name] = value
    return out or None


def backoff(attempt: int) -> float:
    """Capped exponential backoff with jitter: ~0.5 s, 1 s, 2 s ... at most BACKOFF_CAP."""
    return min(BACKOFF_CAP, BACKOFF_BASE * 2.0**attempt) * random.uniform(0.75, 1.0)


def retry_delay(response: httpx.Response, attempt: int, max_retries: int) -> float | None:
    """Seconds to wait before trying an answered call again, or None to stop here.

    429 and 503 are retried, honouring Retry-After; so is a 409 idempotency_in_progress (a retry
    of ours that reached the service while its first try was still running: the API says to
    retry it). Any other 4xx, a 402 above all, is final."""
    if attempt >= max_retries:
        return None
    status = response.status_code
    if status == 409 and response.headers.get("Retry-After") is not None:
        if response.headers.get(ERROR_CODE_HEADER) != "idempotency_in_progress":
            return None
    elif status not in RETRY_STATUSES:
        return None
    asked = retry_after(response)
    return asked if asked is not None else backoff(attempt)


def connection_retry_delay(
    error: httpx.TransportError, call: Call, attempt: int, max_retries: int
) -> float | None:
    """A connection that was never made is safe to retry for any call; one that broke after the
    request went out only for a call the service will not perform twice."""
    if attempt >= max_retries:
        return None
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout) or call.idempotent:
        return backoff(attempt)
    return None


def connection_failed(error: httpx.TransportError, call: Call) -> ConnectionFailed:
    return ConnectionFailed(f"{call.method} {call.path}: {type(error).__name__}: {error}")


def read(response: httpx.Response, model: type[M]) -> M:
    """The answer as ``model``, or the error it is."""
    if response.status_code >= 400:
        raise from_response(response)
    try:
        data = response.json()
    except ValueError as exc:
        raise ScrapespyError(
            f"the service answered HTTP {response.status_code} with a body that is not JSON",
            response.status_code,
            body=response.text,
        ) from exc
    return model.model_validate(data)


def scrape_result(response: httpx.Response) -> ScrapeResult:
    result = read(response, ScrapeResult)
    remaining = response.headers.get("X-Credits-Remaining")
    if remaining is not None and remaining.isdigit():
        result.credits_remaining = int(remaining)
    return result


def page_results(status: JobStatus) -> list[ScrapeResult]:
    """The scrape results of one page of a job's results; a page stored without its result
    is given as a failed result that says so."""
    out = []
    for page in status.results:
        if page.result is not None:
            out.append(page.result)
        else:
            out.append(
                ScrapeResult(url=page.url, success=False, error=f"no result stored ({page.status})")
            )
    return out


class Poller:
    """``wait()``'s politeness: the interval grows 1.5 times per unchanged poll, up to
    WAIT_INTERVAL_CAP, and starts again when the job moved; the progress line or callback."""

    def __init__(self, poll_interval: float, progress: Progress) -> None:
        self.first = max(0.05, poll_interval)
        self.interval = self.first
        self.progress = progress
        self.last: tuple[Any, ...] | None = None

    def seen(self, status: JobStatus) -> None:
        state = (status.status, status.total, status.counts)
        if state != self.last:
            self.interval = self.first
            self.report(status)
        else:
            self.interval = min(WAIT_INTERVAL_CAP, self.interval * 1.5)
        self.last = state

    def report(self, status: JobStatus) -> None:
        if callable(self.progress):
            self.progress(status)
        elif self.progress:
            # on a terminal the line is rewritten in place; in a log, a line per change
            if sys.stderr.isatty():
                end = "\n" if status.finished else ""
                print("\r\033[K" + status.progress, end=end, file=sys.stderr, flush=True)
            else:
                print(status.progress, file=sys.stderr, flush=True)
