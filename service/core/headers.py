"""The headers of every answer, and of every HTML page this service serves (the dashboard's
and the demo checkout's, ``service.billing.payments.demo``)."""

from __future__ import annotations

from twisted.web.server import Request

NOSNIFF = (b"X-Content-Type-Options", b"nosniff")
# A year, the common floor; no includeSubDomains nor preload: the operator's other hosts under
# the same domain are not the service's to commit to HTTPS.
HSTS = (b"Strict-Transport-Security", b"max-age=31536000")


def security_headers(public_url: str) -> tuple[tuple[bytes, bytes], ...]:
    """The headers of every answer: HSTS only when the service is reached over HTTPS."""
    if public_url.lower().startswith("https://"):
        return (NOSNIFF, HSTS)
    return (NOSNIFF,)


# No form-action: the buy form's answer redirects to the payment provider's checkout page, and
# browsers apply form-action to that redirect too.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    b"Content-Type": b"text/html; charset=utf-8",
    b"Cache-Control": b"no-store",
    b"Content-Security-Policy": CONTENT_SECURITY_POLICY.encode(),
    NOSNIFF[0]: NOSNIFF[1],
    b"X-Frame-Options": b"DENY",
    # Page addresses (a checkout's session id) stay on this site.
    b"Referrer-Policy": b"same-origin",
}


def set_page_headers(request: Request) -> None:
    """The headers of every HTML page this service serves: the dashboard's and the demo
    checkout's (``service.billing.payments.demo``)."""
    for name, value in PAGE_HEADERS.items():
        request.setHeader(name, value)
