"""One download through curl_cffi, as Scrapy's HTTP/1.1 handler would have made it.

What libcurl would do on its own is switched off, so that the middlewares keep doing it as for
every static download: no redirects (``middlewares.redirects``), no decoding (the body comes
compressed, and ``middlewares.decompression`` caps what it inflates to), no cookie jar of the
session's (each scrape's jar is ``middlewares.cookies``'), no name resolution (the handler pins
the addresses the guarded resolver gave), no scheme but http and https. The size cap is Scrapy's
``download_maxsize``, counted as bytes arrive; curl's errors become the exceptions that
``middlewares.failure_codes`` already names.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from curl_cffi import CurlError, CurlHttpVersion, CurlOpt
from curl_cffi.requests import AsyncSession
from OpenSSL.SSL import Error as OpenSSLError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from scrapy.http import Headers, Request, Response
from scrapy.responsetypes import responsetypes

__all__ = ["CurlDownload", "new_session"]

# libcurl's error numbers (curl/curl.h) and what a static download calls them
_RESOLVE = frozenset((5, 6))  # couldn't resolve proxy, host
_CONNECT = frozenset((7,))
_TIMEOUT = frozenset((28,))
_TLS = frozenset((35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98))
_CUT = frozenset((18, 52, 56, 92))  # partial file, empty reply, recv error, HTTP/2 stream
_PROTOCOLS = b"http,https"


# curl_cffi takes low-level options per session only; each download sets its own here, read in
# its own asyncio task when curl_cffi sets up the handle (which it resets after each transfer)
_OPTIONS: ContextVar[dict[CurlOpt, Any] | None] = ContextVar("scrapespy_curl_options", default=None)


class _Session(AsyncSession[Any]):
    @property  # type: ignore[override]
    def curl_options(self) -> dict[CurlOpt, Any]:
        return _OPTIONS.get() or {}

    @curl_options.setter
    def curl_options(self, value: dict[CurlOpt, Any]) -> None:
        pass  # the session's own, empty: every download brings its options


def new_session(max_clients: int) -> AsyncSession[Any]:
    """One session per crawler: connections are reused, cookies never kept (see the docstring)."""
    return _Session(max_clients=max_clients, discard_cookies=True)


@dataclass(frozen=True, slots=True)
class CurlDownload:
    """What one download needs besides the request: the browser to present, the addresses the
    target (or the proxy) was resolved to, the proxy and its own headers, the limits."""

    impersonate: str
    resolve: Sequence[str]  # CURLOPT_RESOLVE lines, "host:port:addr[,addr]"
    proxy: str | None
    proxy_headers: Sequence[str]
    timeout: float
    maxsize: int

    async def run(self, session: AsyncSession[Any], request: Request, headers: Headers) -> Response:
        options: dict[CurlOpt, Any] = {
            CurlOpt.HTTP_CONTENT_DECODING: 0,
            CurlOpt.PROTOCOLS_STR: _PROTOCOLS,
            CurlOpt.REDIR_PROTOCOLS_STR: _PROTOCOLS,
        }
        if self.resolve:
            options[CurlOpt.RESOLVE] = [line.encode() for line in self.resolve]
        if self.proxy_headers:
            options[CurlOpt.PROXYHEADER] = [h.encode() for h in self.proxy_headers]
        token = _OPTIONS.set(options)
        try:
            return await self._fetch(session, request, headers)
        except CurlError as error:
            raise _as_scrapy_error(error, request) from error
        finally:
            _OPTIONS.reset(token)

    async def _fetch(
        self,
        session: AsyncSession[Any],
        request: Request,
        headers: Headers,
    ) -> Response:
        sent = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, values in headers.items()
            for v in values
        ]
        answer = await session.request(
            request.method,  # type: ignore[arg-type]
            request.url,
            headers=sent,
            data=request.body or None,
            impersonate=self.impersonate,  # type: ignore[arg-type]
            allow_redirects=False,
            verify=False,  # as Scrapy's default context factory: the page, not its certificate
            proxy=self.proxy,
            timeout=self.timeout,
            stream=True,
        )
        try:
            declared = answer.headers.get("content-length")
            if self.maxsize and declared and declared.isdigit() and int(declared) > self.maxsize:
                raise DownloadCancelledError(f"{request.url}: {declared} bytes announced")
            chunks: list[bytes] = []
            received = 0
            async for chunk in answer.aiter_content():
                received += len(chunk)
                if self.maxsize and received > self.maxsize:
                    raise DownloadCancelledError(f"{request.url}: over {self.maxsize} bytes")
                chunks.append(chunk)
        finally:
            await answer.aclose()
        body = b"".join(chunks)
        out = Headers()
        for name, value in answer.headers.multi_items():
            if value is not None:
                out.appendlist(name, value)
        cls = responsetypes.from_args(headers=out, url=request.url, body=body)
        h2 = answer.http_version == CurlHttpVersion.V2_0
        return cls(
            url=request.url,
            status=answer.status_code,
            headers=out,
            body=body,
            request=request,
            ip_address=_address(answer.primary_ip),
            protocol="h2" if h2 else "HTTP/1.1",
        )


def _address(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(ip)
    except ValueError:
        return None


def _as_scrapy_error(error: CurlError, request: Request) -> Exception:
    code = getattr(error, "code", 0) or 0
    message = f"{request.url}: {error}"
    if code in _TIMEOUT:
        return DownloadTimeoutError(message)
    if code in _RESOLVE:
        return CannotResolveHostError(message)
    if code in _CONNECT:
        return DownloadConnectionRefusedError(message)
    if code in _TLS:
        failed = DownloadFailedError(message)
        failed.__cause__ = OpenSSLError(message)  # middlewares.failure_codes: tls_error
        return failed
    if code in _CUT:
        return ResponseDataLossError(message)
    return DownloadFailedError(message)
