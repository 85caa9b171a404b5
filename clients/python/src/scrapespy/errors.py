"""What the client raises: one class per kind of answer a program handles differently.

Each carries the API's own ``error`` message, its ``error_code`` (the stable part, from the
answer's ``X-Error-Code`` header, see the service's ``/openapi.json``), the HTTP status and the
decoded body (``{"error": ...}``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

# The header of an error answer that names its code; the body has the message alone.
ERROR_CODE_HEADER = "X-Error-Code"


class ScrapespyError(Exception):
    """Base of every error of this client. ``status_code`` is None when no answer came."""

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        error_code: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.error_code = error_code
        self.body = body

    def __str__(self) -> str:
        parts = [self.message]
        if self.error_code:
            parts.append(f"[{self.error_code}]")
        if self.status_code is not None:
            parts.append(f"(HTTP {self.status_code})")
        return " ".join(parts)


class InvalidRequest(ScrapespyError):
    """400 or 422: a field is wrong (the message names it), or an Idempotency-Key was reused
    with another body."""


class AuthenticationError(ScrapespyError):
    """401 (missing, wrong or revoked key) or 403 (residential trials used up)."""


class InsufficientCredits(ScrapespyError):
    """402: the balance, the key's monthly cap or ``max_credits`` does not cover the price.
    Nothing was fetched or charged; never retried."""


class NotFound(ScrapespyError):
    """404: no such job for this account (or no such path)."""


class RateLimited(ScrapespyError):
    """429 after the retries: ``retry_after`` is the seconds the service asked to wait."""

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        error_code: str | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status_code, error_code, body)
        self.retry_after = retry_after


class ServiceUnavailable(ScrapespyError):
    """503 after the retries: at capacity, database down, or not configured."""


class ScrapeFailed(ScrapespyError):
    """Raised by ``ScrapeResult.raise_for_failure()``: the scrape ran (HTTP 200) but failed or
    hit an anti-bot page; ``result`` is the whole result, ``error_code`` says why."""

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        error_code: str | None = None,
        body: Any = None,
        result: Any = None,
    ) -> None:
        super().__init__(message, status_code, error_code, body)
        self.result = result


class ConnectionFailed(ScrapespyError):
    """No answer: the service could not be reached, or the connection broke (after retries)."""


class WaitTimeout(ScrapespyError, TimeoutError):
    """``wait()`` ran out of its ``timeout`` before the job finished; ``body`` is the last
    JobStatus seen."""


_BY_STATUS: dict[int, type[ScrapespyError]] = {
    400: InvalidRequest,
    422: InvalidRequest,
    401: AuthenticationError,
    403: AuthenticationError,
    402: InsufficientCredits,
    404: NotFound,
    429: RateLimited,
    503: ServiceUnavailable,
}


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number, or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def from_response(response: httpx.Response) -> ScrapespyError:
    """The exception for an error answer, with the API's message and its X-Error-Code."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    message = f"HTTP {response.status_code}"
    code = response.headers.get(ERROR_CODE_HEADER) or None
    if isinstance(body, dict):
        message = str(body.get("error") or message)
    cls = _BY_STATUS.get(response.status_code, ScrapespyError)
    if cls is RateLimited:
        return RateLimited(message, response.status_code, code, body, retry_after(response))
    return cls(message, response.status_code, code, body)
