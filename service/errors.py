"""The errors a caller can see: each one is a status and a single ``error`` message."""

from __future__ import annotations


class ApiError(Exception):
    status = 500
    message = "internal error"

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.headers = headers or {}


class BadRequest(ApiError):
    status = 400
    message = "invalid request"


class Unauthorized(ApiError):
    status = 401
    message = "API key (X-API-Key header) is missing or invalid"


class PaymentRequired(ApiError):
    status = 402


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404
    message = "not found"


class MethodNotAllowed(ApiError):
    status = 405
    message = "method not allowed"


class TooManyRequests(ApiError):
    status = 429
    message = "rate limit exceeded, retry later"

    def __init__(self, retry_after: int):
        retry_after = max(1, int(retry_after))
        super().__init__(
            f"rate limit exceeded for this API key, retry later (in {retry_after} s)",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


class BadGateway(ApiError):
    status = 502
    message = "the payment provider failed"


class ServiceUnavailable(ApiError):
    status = 503
    message = "service temporarily unavailable, retry later"

    def __init__(self, message: str | None = None, *, retry_after: int | None = None):
        headers = {"Retry-After": str(retry_after)} if retry_after else None
        super().__init__(message, headers=headers)


RESIDENTIAL_LOCKED = (
    "the free residential trials are used up; residential proxies unlock at launch. "
    "Use proxy_type 'datacenter' or 'none' meanwhile"
)


def insufficient_credits(cost: int, available: int) -> PaymentRequired:
    return PaymentRequired(
        f"insufficient credits: this request costs {cost} credits and the balance "
        f"available is {available}; buy credits and retry"
    )
