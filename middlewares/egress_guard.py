"""Keep scrapes away from the server's own networks (SSRF guard).

By default nothing on a loopback, private, link-local, CGNAT, multicast, reserved, unspecified,
documentation/benchmarking or unique-local address is fetched, whatever spelling the URL uses
(``localhost``, ``127.1``, ``2130706433``, ``0x7f000001``, ``[::ffff:127.0.0.1]``, a name that
resolves there, a redirect that goes there).

Two layers do the work:

* the guarded resolver (``service.egress.resolver``) wraps the reactor's ``IHostnameResolver``
  and drops every non-public address before Twisted connects, so the check applies to the
  address actually connected to (DNS rebinding cannot slip a private address in after a check);
* :class:`EgressGuardMiddleware` rejects unsupported schemes and private IP literals up front,
  resolves the *target* itself when the download goes through a proxy (the connection then goes
  to the proxy, so the resolver never sees the target), and turns a connection that failed
  because the resolver dropped everything into :class:`BlockedRequest`, whose message users see.

The library's errors (``service.egress.addresses``) know no Scrapy; the middleware raises them as
:class:`BlockedRequest` and :class:`RefusedScheme`, Scrapy's ``IgnoreRequest``: the spider's
errback takes them, and the proxy pool does not blame a proxy for them.

Switch it on in the Scrapy settings, after ``HttpProxyMiddleware`` (750) so that proxies taken
from the environment are already in ``request.meta["proxy"]``::

    DOWNLOADER_MIDDLEWARES = {"middlewares.egress_guard.EgressGuardMiddleware": 760}
    SCRAPESPY_ALLOW_PRIVATE_TARGETS = False      # True switches the guard off (NotConfigured)
    SCRAPESPY_EGRESS_ALLOW_HOSTS = ["127.0.0.1"]  # the server's own proxies, may be on loopback

The resolver is installed on the running reactor the first time the middleware is built (once
per reactor); ``service.egress.resolver.uninstall_guarded_resolver`` takes it off again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import defer
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.address import IPv6Address as TwistedIPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IAddress, IResolutionReceiver
from zope.interface import implementer

from service.egress.addresses import (
    EgressBlocked,
    UnsupportedScheme,
    is_public_address,
    parse_host_literal,
)
from service.egress.resolver import (
    GuardedResolver,
    HostAllowList,
    StatsLike,
    find_guarded_resolver,
    install_guarded_resolver,
)

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

try:
    from scrapy.exceptions import CannotResolveHostError
except ImportError:  # Scrapy < 2.14 passes Twisted's DNSLookupError through unchanged
    CannotResolveHostError = DNSLookupError  # type: ignore[assignment,misc]

__all__ = ["STATS_KEY_BLOCKED", "BlockedRequest", "EgressGuardMiddleware", "RefusedScheme"]

logger = logging.getLogger(__name__)

STATS_KEY_BLOCKED = "scrapespy/egress_guard/blocked"


class BlockedRequest(EgressBlocked, IgnoreRequest):
    """:class:`EgressBlocked` as Scrapy's ``IgnoreRequest``."""


class RefusedScheme(UnsupportedScheme, IgnoreRequest):
    """:class:`UnsupportedScheme` as Scrapy's ``IgnoreRequest``."""


@implementer(IResolutionReceiver)
class _CollectingReceiver:
    def __init__(self) -> None:
        self.addresses: list[IAddress] = []
        self.deferred: defer.Deferred[list[IAddress]] = defer.Deferred()

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        pass

    def addressResolved(self, address: IAddress) -> None:
        self.addresses.append(address)

    def resolutionComplete(self) -> None:
        if not self.deferred.called:
            self.deferred.callback(self.addresses)


def _proxy_host(proxy: str) -> str | None:
    if "://" not in proxy:
        proxy = "http://" + proxy
    try:
        return urlsplit(proxy).hostname
    except ValueError:
        return None


class EgressGuardMiddleware:
    """Downloader middleware refusing targets on non-public networks (see module docstring)."""

    def __init__(
        self,
        guard: GuardedResolver,
        *,
        allow_hosts: Iterable[str] = (),
        stats: StatsLike | None = None,
        reactor: Any = None,
        dns_timeout: float = 60.0,
    ) -> None:
        self.guard = guard
        self.allow_hosts = HostAllowList(allow_hosts)
        self.stats = stats
        self.dns_timeout = dns_timeout
        # Only set when built from a crawler: lets the middleware re-install a guard that
        # something else replaced on the reactor.
        self._reactor = reactor

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if settings.getbool("SCRAPESPY_ALLOW_PRIVATE_TARGETS"):
            raise NotConfigured("SCRAPESPY_ALLOW_PRIVATE_TARGETS is set")
        from twisted.internet import reactor

        allow_hosts = settings.getlist("SCRAPESPY_EGRESS_ALLOW_HOSTS")
        guard = install_guarded_resolver(reactor, allow_private=False, allow_hosts=allow_hosts)
        assert guard is not None
        cls._warn_about_handlers(settings.getdict("DOWNLOAD_HANDLERS"))
        return cls(
            guard,
            allow_hosts=allow_hosts,
            stats=crawler.stats,
            reactor=reactor,
            dns_timeout=settings.getfloat("DNS_TIMEOUT", 60.0) or 60.0,
        )

    @staticmethod
    def _warn_about_handlers(handlers: dict[str, Any]) -> None:
        for scheme in ("http", "https"):
            handler = handlers.get(scheme)
            path = handler if isinstance(handler, str) else getattr(handler, "__module__", "")
            if path and ("_httpx" in path or "_aiohttp" in path):
                logger.warning(
                    "egress guard: the %s download handler %s does not resolve through the "
                    "Twisted reactor; only the URL literal is checked for it",
                    scheme,
                    path,
                )

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        parsed = urlparse_cached(request)
        scheme = (parsed.scheme or "").lower()
        if scheme not in ("http", "https"):
            self._count()
            raise RefusedScheme(scheme)
        host = parsed.hostname or ""
        self._check_target_host(host)
        self._ensure_installed()

        proxy = request.meta.get("proxy")
        if not proxy:
            # A direct download: the guarded resolver checks the address actually connected to.
            return None
        proxy_host = _proxy_host(str(proxy))
        if proxy_host is None:
            self._block(host)
        proxy_literal = parse_host_literal(proxy_host)
        if (
            proxy_literal is not None
            and not is_public_address(proxy_literal)
            and not self.allow_hosts(proxy_host)
            and not (self.guard.allow_host is not None and self.guard.allow_host(proxy_host))
        ):
            # connectTCP() does not resolve dotted-quad literals, so the resolver never sees it.
            self._block(proxy_host)
        if parse_host_literal(host) is not None:
            return None
        await self._check_resolved_target(host, parsed.port or (443 if scheme == "https" else 80))
        return None

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | Response | None:
        # A host whose addresses were all dropped fails as a DNS lookup, and only so: a timeout
        # or refusal means some public address was tried.
        if not isinstance(exception, DNSLookupError | CannotResolveHostError):
            return None
        host = urlparse_cached(request).hostname or ""
        if self.guard.was_blocked(host):
            self._block(host, exception)
        proxy = request.meta.get("proxy")
        if proxy:
            proxy_host = _proxy_host(str(proxy))
            if proxy_host and self.guard.was_blocked(proxy_host):
                self._block(proxy_host, exception)
        return None

    def _check_target_host(self, host: str) -> None:
        if not host:
            # An empty host connects to 0.0.0.0, i.e. this machine.
            self._block(host)
        # The allow list is for the server's own proxies; they are never a target.
        if self.allow_hosts(host) or (
            self.guard.allow_host is not None and self.guard.allow_host(host)
        ):
            self._block(host)
        literal = parse_host_literal(host)
        if literal is not None and not is_public_address(literal):
            self._block(host)

    async def _check_resolved_target(self, host: str, port: int) -> None:
        # Through a proxy the connection goes to the proxy, so look the target up here, with the
        # unguarded resolver so that private answers are seen rather than silently dropped.
        receiver = _CollectingReceiver()
        self.guard.wrapped.resolveHostName(receiver, host, port)
        d = receiver.deferred
        if self._reactor is not None:
            d.addTimeout(self.dns_timeout, self._reactor)
        try:
            addresses = await maybe_deferred_to_future(d)
        except defer.TimeoutError:
            raise DNSLookupError(f"timed out resolving {host} for the egress check") from None
        if not addresses:
            raise DNSLookupError(f"no results for hostname lookup: {host}")
        for address in addresses:
            if not (
                isinstance(address, TwistedIPv4Address | TwistedIPv6Address)
                and is_public_address(address.host)
            ):
                self._block(host)

    def _ensure_installed(self) -> None:
        if self._reactor is None:
            return
        if self._reactor.nameResolver is self.guard:
            return
        guard = find_guarded_resolver(self._reactor)
        if guard is None:
            logger.warning("egress guard: the reactor's resolver was replaced; re-installing")
            guard = install_guarded_resolver(
                self._reactor, allow_private=False, allow_hosts=self.allow_hosts.hosts
            )
            assert guard is not None
        self.guard = guard

    def _count(self) -> None:
        if self.stats is not None:
            self.stats.inc_value(STATS_KEY_BLOCKED)

    def _block(self, host: str, cause: BaseException | None = None) -> NoReturn:
        self._count()
        logger.debug("egress guard: refused %r", host)
        raise BlockedRequest(host=host) from cause
