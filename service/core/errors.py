"""The errors a caller can see: each one is a status, an ``error`` message for people (the
body, ``{"error": ...}`` alone, as docs/api.md's error body is) and a code from
:data:`ERROR_CODES` for programs, in the ``X-Error-Code`` header.

The same codes name why a scrape failed (``error_code`` in a result, pipelines.result), so a
caller handles both kinds of failure with one table.
"""

from __future__ import annotations

# code -> what it means; the codes are a stable interface, the messages are not.
ERROR_CODES: dict[str, str] = {
    # answers of the API itself, before or instead of a scrape
    "invalid_request": "the request is malformed or a field is invalid; the message names it",
    "unauthorized": "the API key is missing or invalid",
    "insufficient_credits": "the balance available does not cover the request's price",
    "max_credits_exceeded": "the request may cost more than its max_credits; nothing was "
    "fetched or held",
    "key_cap_reached": "this API key's monthly spending cap would be passed (what it spent this "
    "calendar month, UTC, what it holds for scrapes in progress and this request's price); the "
    "message names the cap. The account's other keys are not affected",
    "residential_locked": "the free residential trials are used up",
    "too_many_jobs": "the account has as many jobs queued or running as it may; wait for one "
    "to finish or cancel one",
    "too_many_monitors": "the account has as many monitors as it may; delete one first",
    "too_many_sessions": "the account has as many live sessions as it may; end one "
    "(DELETE /sessions/{id}) or let one expire",
    "idempotency_conflict": "this Idempotency-Key was used in the last 24 hours with another "
    "body; use a new key for a new request",
    "idempotency_in_progress": "the first request with this Idempotency-Key is still running; "
    "retry after it answered (see Retry-After)",
    "rate_limited": "too many requests for this key (or checkouts for this account); "
    "see Retry-After",
    "not_found": "no such resource",
    "method_not_allowed": "the resource does not take this method",
    "payment_provider_error": "the payment provider failed",
    "map_failed": "POST /map found no URL (its error says why: no sitemap, the start page "
    "not fetched, nothing within the rules); it was not charged",
    "map_timed_out": "Firecrawl's POST /v1/map or /v2/map found nothing within its timeout; "
    "it was not charged",
    "unavailable": "temporarily unavailable: at capacity, database down or not configured; "
    "retry later",
    "search_unavailable": "POST /search's backend failed, timed out or answered something "
    "else than its JSON; nothing was charged, retry later",
    # why a scrape failed (success false in a result); none of these is billed
    "robots_disallowed": "the target's robots.txt forbids the URL",
    "egress_blocked": "the target resolves to an address the service does not fetch from",
    "dns_error": "the target's host name could not be resolved",
    "connection_error": "the connection to the target was refused, reset or cut short",
    "tls_error": "the TLS handshake with the target failed",
    "timeout": "the scrape did not finish within its timeout",
    "http_error": "the target answered with an HTTP error status (4xx or 5xx)",
    "blocked": "the target answered with an anti-bot page",
    "too_large": "the page or an output is over a size limit",
    "redirect_failed": "the target redirected in a loop, too many times, or to an address the "
    "service does not follow (a scheme other than http and https)",
    "action_failed": "a browser action or wait_for failed; the message names the step",
    "document_encrypted": "the target answered a document (PDF) encrypted with a password",
    "document_no_text": "the target answered a document without text (a scanned PDF, an "
    "empty file); there is no OCR",
    "document_unreadable": "the target answered a document that could not be read (damaged)",
    "document_over_budget": "the target answered a document whose blocks of pages cost more "
    "than the balance available, the request's max_credits or the key's monthly cap allow",
    "llm_invalid_answer": "the language model's answer was not JSON, or did not validate "
    "against the request's schema, twice; the page and the extraction were not billed",
    "llm_timeout": "the language model did not answer within SCRAPESPY_LLM_TIMEOUT_SECONDS",
    "llm_unavailable": "the language model endpoint refused (429, an error status) or could "
    "not be reached",
    "llm_over_budget": "a job's page: the language model's worst case, added to the page's "
    "hold, is more than the balance available, the request's max_credits or the key's monthly "
    "cap allow",
    "internal": "an unexpected error in the service; nothing was billed",
}

# The codes a scrape's result can carry in ``error_code``: why it failed, or ``unavailable``
# when the service's shutdown cut it short.
FAILURE_CODES: tuple[str, ...] = (
    "robots_disallowed",
    "egress_blocked",
    "dns_error",
    "connection_error",
    "tls_error",
    "timeout",
    "http_error",
    "blocked",
    "too_large",
    "redirect_failed",
    "action_failed",
    "document_encrypted",
    "document_no_text",
    "document_unreadable",
    "document_over_budget",
    "llm_invalid_answer",
    "llm_timeout",
    "llm_unavailable",
    "llm_over_budget",
    "internal",
    "unavailable",
)
assert set(FAILURE_CODES) <= set(ERROR_CODES)

# The HTTP status an API error with the code answers; a code that is not here comes only in a
# result (a failed scrape's, or a POST /map's map_failed), with status 200.
ERROR_STATUSES: dict[str, int] = {
    "invalid_request": 400,
    "unauthorized": 401,
    "insufficient_credits": 402,
    "max_credits_exceeded": 402,
    "key_cap_reached": 402,
    "residential_locked": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "map_timed_out": 408,
    "idempotency_in_progress": 409,
    "idempotency_conflict": 422,
    "rate_limited": 429,
    "too_many_jobs": 429,
    "too_many_sessions": 409,
    "too_many_monitors": 429,
    "internal": 500,
    "payment_provider_error": 502,
    "unavailable": 503,
    "search_unavailable": 503,
}
assert set(ERROR_STATUSES) <= set(ERROR_CODES)
assert set(ERROR_CODES) <= set(ERROR_STATUSES) | set(FAILURE_CODES) | {"map_failed"}

# An error answer's code: a header, because the error body has one field (docs/api.md).
ERROR_CODE_HEADER = "X-Error-Code"
ERROR_CODE_HEADER_DESCRIPTION = "what went wrong, for programs: one of the error codes"


class ApiError(Exception):
    status = 500
    code = "internal"
    message = "internal error"

    def __init__(
        self,
        message: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.headers = headers or {}
        if code is not None:
            self.code = code

    def body(self) -> dict[str, str]:
        """What the caller reads; the code goes in :data:`ERROR_CODE_HEADER`."""
        return {"error": self.message}

    def answer_headers(self) -> dict[str, str]:
        """The headers of the answer: the error's own (Retry-After...) and its code."""
        return {**self.headers, ERROR_CODE_HEADER: self.code}


class BadRequest(ApiError):
    status = 400
    code = "invalid_request"
    message = "invalid request"


class Unauthorized(ApiError):
    status = 401
    code = "unauthorized"
    message = "API key (X-API-Key header) is missing or invalid"


class PaymentRequired(ApiError):
    status = 402
    code = "insufficient_credits"


class Forbidden(ApiError):
    status = 403
    code = "residential_locked"


class NotFound(ApiError):
    status = 404
    code = "not_found"
    message = "not found"


class MethodNotAllowed(ApiError):
    status = 405
    code = "method_not_allowed"
    message = "method not allowed"


class TooManyRequests(ApiError):
    status = 429
    code = "rate_limited"
    message = "rate limit exceeded, retry later"

    def __init__(self, retry_after: int):
        retry_after = max(1, int(retry_after))
        super().__init__(
            f"rate limit exceeded for this API key, retry later (in {retry_after} s)",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


class Conflict(ApiError):
    status = 409
    code = "idempotency_in_progress"


class Unprocessable(ApiError):
    status = 422
    code = "idempotency_conflict"


class BadGateway(ApiError):
    status = 502
    code = "payment_provider_error"
    message = "the payment provider failed"


class ServiceUnavailable(ApiError):
    status = 503
    code = "unavailable"
    message = "service temporarily unavailable, retry later"

    def __init__(self, message: str | None = None, *, retry_after: int | None = None):
        headers = {"Retry-After": str(retry_after)} if retry_after else None
        super().__init__(message, headers=headers)


RESIDENTIAL_LOCKED = (
    "the free residential trials are used up; residential proxies unlock at launch. "
    "Use proxy_type 'datacenter' or 'none' meanwhile"
)


def key_cap_reached(cap: int, spent: int, cost: int) -> PaymentRequired:
    return PaymentRequired(
        f"this API key's monthly cap of {cap} credits is reached ({spent} spent or held this "
        f"month; this request costs {cost}); raise or remove the cap on the dashboard's API key "
        "page, or wait for next month (UTC)",
        code="key_cap_reached",
    )


def insufficient_credits(cost: int, available: int) -> PaymentRequired:
    return PaymentRequired(
        f"insufficient credits: this request costs {cost} credits and the balance "
        f"available is {available}; buy credits and retry"
    )


def max_credits_exceeded(cost: int, max_credits: int) -> PaymentRequired:
    """The request's own cap is under the least it could be billed (service.billing.pricing)."""
    return PaymentRequired(
        f"this request may cost {cost} credits, more than its max_credits of {max_credits}; "
        "raise max_credits or ask for a cheaper engine or proxy_type",
        code="max_credits_exceeded",
    )
