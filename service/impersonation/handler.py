"""The download handler for http and https: a static download with a browser's fingerprint
through curl_cffi, everything else through the js engine's handler (which hands the other
static downloads to Scrapy's HTTP/1.1 handler).

Which fingerprint a static download presents is ``meta["scrapespy_fingerprint"]`` (an ``auto``
attempt's, written by ``middlewares.escalation``), else ``SCRAPESPY_STATIC_FINGERPRINT``.

The egress guard holds as for Scrapy's own downloads: libcurl never resolves a name. The target
(or, through a proxy, the proxy) is resolved here by the reactor's resolver, which the guard
replaced with one that drops every private address, and the addresses it gave are pinned with
``CURLOPT_RESOLVE``: a name left with none fails as a DNS lookup, which the guard's middleware
tells apart as ``egress_blocked``, and a name cannot resolve elsewhere between the check and the
connection. Through a proxy the guard's middleware has checked the target already.

    DOWNLOAD_HANDLERS = {"https": "service.impersonation.FingerprintDownloadHandler", ...}
    SCRAPESPY_STATIC_FINGERPRINT = "chrome"   # or "scrapy": Scrapy's own TLS and headers
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.exceptions import CannotResolveHostError
from scrapy.http import Headers
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet import defer
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IAddress, IResolutionReceiver
from zope.interface import implementer

from service.browser.handler import BrowserDownloadHandler
from service.egress.addresses import parse_host_literal
from service.impersonation.curl import CurlDownload, new_session
from service.scrape import meta as scrape_meta
from service.scrape.timings import StaticDownload

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["FINGERPRINTS", "FingerprintDownloadHandler"]

# a fingerprint's name (the setting's value, an attempt's "fingerprint") -> curl_cffi's target;
# "scrapy" is Scrapy's own stack. "chrome" is the newest Chrome of the pinned curl_cffi.
FINGERPRINTS: dict[str, str | None] = {"scrapy": None, "chrome": "chrome"}
# Scrapy's defaults that would give the browser away; a caller's own values are kept
_ALWAYS_DROPPED = (b"Accept-Encoding",)  # the browser's, decoded by middlewares.decompression


@implementer(IResolutionReceiver)
class _Addresses:
    def __init__(self) -> None:
        self.found: list[str] = []
        self.deferred: defer.Deferred[list[str]] = defer.Deferred()

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        pass

    def addressResolved(self, address: IAddress) -> None:
        if isinstance(address, IPv4Address | IPv6Address):
            self.found.append(address.host)

    def resolutionComplete(self) -> None:
        self.deferred.callback(self.found)


class FingerprintDownloadHandler:
    lazy = False
    _shared: weakref.WeakKeyDictionary[Crawler, FingerprintDownloadHandler] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.default = settings.get("SCRAPESPY_STATIC_FINGERPRINT")
        if self.default not in FINGERPRINTS:
            raise ValueError(f"SCRAPESPY_STATIC_FINGERPRINT: {self.default!r}")
        self.other = build_from_crawler(BrowserDownloadHandler, crawler)
        self.maxsize = settings.getint("DOWNLOAD_MAXSIZE")
        self.timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        self.defaults = {
            k.lower(): v for k, v in Headers(settings.getdict("DEFAULT_REQUEST_HEADERS")).items()
        }
        self.defaults[b"user-agent"] = [settings.get("USER_AGENT", "").encode()]
        self.session = new_session(settings.getint("CONCURRENT_REQUESTS"))
        from twisted.internet import reactor

        self.reactor: Any = reactor
        self.closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Scrapy builds one handler per scheme; http and https share one, and one session.
        handler = cls._shared.get(crawler)
        if handler is None:
            handler = cls._shared[crawler] = cls(crawler)
        return handler  # type: ignore[return-value]

    async def download_request(self, request: Request) -> Response:
        target = FINGERPRINTS[scrape_meta.fingerprint(request, self.default)]
        if target is None or scrape_meta.renders(request):
            return await self.other.download_request(request)
        download = await self._download_for(request, target)
        with StaticDownload(request):
            started = time.monotonic()
            response = await download.run(self.session, request, self._headers(request))
            request.meta["download_latency"] = time.monotonic() - started
            return response

    async def close(self) -> None:
        if self.closed:  # once for each scheme
            return
        self.closed = True
        await self.session.close()
        await self.other.close()

    async def _download_for(self, request: Request, target: str) -> CurlDownload:
        parsed = urlparse_cached(request)
        proxy = request.meta.get("proxy")
        if proxy:
            # Scrapy's HttpProxyMiddleware has moved the credentials into this header
            where = urlsplit(proxy if "://" in proxy else "http://" + proxy)
            host, port = where.hostname or "", where.port or 80
            # the port spelled out, so that libcurl connects where the pin says (its own default
            # for a proxy is 1080)
            spelled = f"[{host}]" if ":" in host else host
            proxy = f"{where.scheme}://{spelled}:{port}"
            auth = request.headers.get(b"Proxy-Authorization")
            extra = [f"Proxy-Authorization: {auth.decode('latin-1')}"] if auth else []
        else:
            host = parsed.hostname or ""
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            extra = []
        resolve = await self._pin(host, port, request)
        timeout = request.meta.get("download_timeout") or self.timeout
        maxsize = request.meta.get("download_maxsize", self.maxsize)
        return CurlDownload(target, resolve, proxy or None, extra, float(timeout), int(maxsize))

    async def _pin(self, host: str, port: int, request: Request) -> list[str]:
        """``CURLOPT_RESOLVE`` for ``host``: what the reactor's (guarded) resolver gives."""
        if parse_host_literal(host) is not None:
            return []  # a literal: checked by the guard's middleware, nothing to resolve
        receiver = _Addresses()
        self.reactor.nameResolver.resolveHostName(receiver, host, port)
        timeout = request.meta.get("download_timeout") or self.timeout
        receiver.deferred.addTimeout(float(timeout), self.reactor)
        try:
            found = await maybe_deferred_to_future(receiver.deferred)
        except defer.TimeoutError:
            raise CannotResolveHostError(f"timed out resolving {host}") from None
        if not found:
            raise CannotResolveHostError(f"no address for {host}")
        spelled = ",".join(f"[{a}]" if ":" in a else a for a in dict.fromkeys(found))
        return [f"{host}:{port}:{spelled}"]

    def _headers(self, request: Request) -> Headers:
        """The request's headers less Scrapy's defaults, which the browser's replace."""
        headers = Headers()
        for name, values in request.headers.items():
            lower = name.lower()
            if name in _ALWAYS_DROPPED or lower == b"proxy-authorization":
                continue
            if self.defaults.get(lower) == values:
                continue
            headers.setlist(name, values)
        return headers
