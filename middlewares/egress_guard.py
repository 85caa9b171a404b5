"""Keep scrapes away from the server's own networks (SSRF guard).

By default nothing on a loopback, private, link-local, CGNAT, multicast, reserved, unspecified,
documentation/benchmarking or unique-local address is fetched, whatever spelling the URL uses
(``localhost``, ``127.1``, ``2130706433``, ``0x7f000001``, ``[::ffff:127.0.0.1]``, a name that
resolves there, a redirect that goes there).

Two layers do the work:

* :class:`GuardedResolver` wraps the reactor's ``IHostnameResolver`` and drops every non-public
  address before Twisted connects, so the check applies to the address actually connected to
  (DNS rebinding cannot slip a private address in after a check).
* :class:`EgressGuardMiddleware` rejects unsupported schemes and private IP literals up front,
  resolves the *target* itself when the download goes through a proxy (the connection then goes
  to the proxy, so the resolver never sees the target), and turns a connection that failed
  because the resolver dropped everything into :class:`EgressBlocked`, whose message users see.

Switch it on in the Scrapy settings, after ``HttpProxyMiddleware`` (750) so that proxies taken
from the environment are already in ``request.meta["proxy"]``::

    DOWNLOADER_MIDDLEWARES = {"middlewares.egress_guard.EgressGuardMiddleware": 760}
    SCRAPESPY_ALLOW_PRIVATE_TARGETS = False      # True switches the guard off (NotConfigured)
    SCRAPESPY_EGRESS_ALLOW_HOSTS = ["127.0.0.1"]  # the server's own proxies, may be on loopback

The resolver is installed on the running reactor the first time the middleware is built (once
per reactor); :func:`uninstall_guarded_resolver` takes it off again.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import defer
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.address import IPv6Address as TwistedIPv6Address
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IAddress, IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

try:
    from scrapy.exceptions import CannotResolveHostError
except ImportError:  # Scrapy < 2.14 passes Twisted's DNSLookupError through unchanged
    CannotResolveHostError = DNSLookupError  # type: ignore[assignment,misc]

__all__ = [
    "BLOCKED_MESSAGE",
    "STATS_KEY_BLOCKED",
    "UNSUPPORTED_SCHEME_MESSAGE",
    "EgressBlocked",
    "EgressGuardMiddleware",
    "GuardedResolver",
    "UnsupportedScheme",
    "find_guarded_resolver",
    "install_guarded_resolver",
    "is_public_address",
    "parse_host_literal",
    "uninstall_guarded_resolver",
]

logger = logging.getLogger(__name__)

BLOCKED_MESSAGE = "target address is not allowed (private, loopback or reserved network)"
UNSUPPORTED_SCHEME_MESSAGE = "unsupported URL scheme"
STATS_KEY_BLOCKED = "scrapespy/egress_guard/blocked"
STATS_KEY_DROPPED = "scrapespy/egress_guard/dropped_addresses"
STATS_KEY_RESOLVER_BLOCKED = "scrapespy/egress_guard/resolver_blocked"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressBlocked(IgnoreRequest):
    """The request's target (or its proxy) is on a network the service must not reach."""

    def __init__(self, message: str = BLOCKED_MESSAGE, *, host: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.host = host

    def __str__(self) -> str:
        return self.message


class UnsupportedScheme(IgnoreRequest):
    """Only http and https may be fetched (file:, ftp:, s3:, data: ... are refused)."""

    def __init__(self, scheme: str = "") -> None:
        super().__init__(UNSUPPORTED_SCHEME_MESSAGE)
        self.scheme = scheme

    def __str__(self) -> str:
        return UNSUPPORTED_SCHEME_MESSAGE


# ---------------------------------------------------------------------------------------------
# Address classification

_BLOCKED_V4 = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # "this network", includes the unspecified address
        "10.0.0.0/8",
        "100.64.0.0/10",  # CGNAT shared address space
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata endpoints
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # TEST-NET-1
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # TEST-NET-2
        "203.0.113.0/24",  # TEST-NET-3
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, includes limited broadcast
    )
)

_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_BLOCKED_V6 = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "2001::/23",  # IETF protocol assignments: Teredo, benchmarking, ORCHID ...
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
    )
)
# Forms that carry an IPv4 address in the low 32 bits: judged by that IPv4 address.
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")


def _is_public_v4(ip: ipaddress.IPv4Address) -> bool:
    if any(ip in net for net in _BLOCKED_V4):
        return False
    # The stdlib list changes between Python patch releases; both must agree it is public.
    return ip.is_global and not ip.is_multicast


def _is_public_v6(ip: ipaddress.IPv6Address) -> bool:
    if ip.ipv4_mapped is not None:
        return _is_public_v4(ip.ipv4_mapped)
    if ip in _IPV4_COMPATIBLE:
        # :: and ::1 live here too; the embedded 0.0.0.0 / 0.0.0.1 are refused by the v4 rules.
        return _is_public_v4(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _NAT64_WELL_KNOWN:
        return _is_public_v4(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        return _is_public_v4(ip.sixtofour)
    # Only 2000::/3 is allocated for global unicast; everything else (ULA fc00::/7, link-local
    # fe80::/10, site-local, multicast ff00::/8, discard 100::/64, 64:ff9b:1::/48 ...) is not.
    if ip not in _GLOBAL_UNICAST_V6:
        return False
    return not any(ip in net for net in _BLOCKED_V6)


def _strip_zone(text: str) -> str:
    return text.split("%", 1)[0]


def is_public_address(ip: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True only for a globally routable unicast address; anything unparsable is not public."""
    if isinstance(ip, str):
        text = ip.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        try:
            ip = ipaddress.ip_address(_strip_zone(text))
        except ValueError:
            return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(_strip_zone(str(ip)))
        return _is_public_v6(ip)
    return _is_public_v4(ip)


_V4_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


def _parse_inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """IPv4 the way inet_aton()/getaddrinfo() read it: 1-4 parts, decimal, 0x hex or 0 octal."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if not _V4_PART.fullmatch(part):
            return None
        if part[:2] in ("0x", "0X"):
            values.append(int(part, 16))
        elif part.startswith("0") and len(part) > 1:
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def parse_host_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a host spells, or None when it is a name that needs DNS.

    Accepts every IPv4 form the C library accepts (``127.1``, ``2130706433``, ``0x7f000001``,
    ``017700000001``, ``0x7f.1``), IPv6 with or without brackets and zone, and one trailing dot.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            address = ipaddress.IPv6Address(_strip_zone(text))
        except ValueError:
            return None
        return address
    if text.endswith("."):
        text = text[:-1]
    if not text:
        return None
    return _parse_inet_aton(text)


def _normalize_host(host: str | bytes) -> str:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


# ---------------------------------------------------------------------------------------------
# Resolver


class _StatsLike(Protocol):
    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


# Structural stand-ins for Twisted's zope interfaces, which mypy cannot check without a plugin.
class _ResolutionReceiver(Protocol):
    def resolutionBegan(self, resolutionInProgress: Any) -> None: ...

    def addressResolved(self, address: IAddress) -> None: ...

    def resolutionComplete(self) -> None: ...


class _HostnameResolver(Protocol):
    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> Any: ...


class _HostAllowList:
    """Exact host names/IPs the operator lets through (its own proxies); spellings are not
    equated, so ``127.000.0.1`` is not ``127.0.0.1``."""

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        self.hosts: set[str] = set()
        self.add(hosts)

    def add(self, hosts: Iterable[str]) -> None:
        self.hosts.update(_normalize_host(h) for h in hosts if h and h.strip())

    def __call__(self, host: str) -> bool:
        return _normalize_host(host) in self.hosts


@implementer(IResolutionReceiver)
class _FilteringReceiver:
    def __init__(self, guard: GuardedResolver, receiver: _ResolutionReceiver, host: str) -> None:
        self._guard = guard
        self._receiver = receiver
        self._host = host
        self.forwarded = 0
        self.dropped = 0

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        self._receiver.resolutionBegan(resolutionInProgress)

    def addressResolved(self, address: IAddress) -> None:
        if isinstance(address, TwistedIPv4Address | TwistedIPv6Address) and is_public_address(
            address.host
        ):
            self.forwarded += 1
            self._receiver.addressResolved(address)
        else:
            self.dropped += 1

    def resolutionComplete(self) -> None:
        self._guard._resolution_finished(self._host, self.forwarded, self.dropped)
        self._receiver.resolutionComplete()


@implementer(IHostnameResolver)
class GuardedResolver:
    """An ``IHostnameResolver`` that forwards only public addresses of the wrapped resolver.

    When every address of a host is dropped the receiver gets none, so Twisted fails the
    connection with ``DNSLookupError``; the host is remembered for ``block_ttl`` seconds so that
    :meth:`was_blocked` can tell that failure apart from a real DNS error.
    """

    def __init__(
        self,
        wrapped: _HostnameResolver,
        *,
        allow_host: Callable[[str], bool] | None = None,
        stats: _StatsLike | None = None,
        block_ttl: float = 60.0,
        max_remembered: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.wrapped = wrapped
        self.allow_host = allow_host
        self.stats = stats
        self.block_ttl = block_ttl
        self.max_remembered = max_remembered
        self._clock = clock
        self._blocked: OrderedDict[str, float] = OrderedDict()
        self.dropped_count = 0
        self.blocked_count = 0
        # What install_guarded_resolver() replaced, so that uninstall can put it back.
        self._previous_simple_resolver: Any = None

    def resolveHostName(
        self,
        resolutionReceiver: _ResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        if self.allow_host is not None and self.allow_host(hostName):
            return self.wrapped.resolveHostName(
                resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
            )
        receiver = _FilteringReceiver(self, resolutionReceiver, hostName)
        return self.wrapped.resolveHostName(
            receiver, hostName, portNumber, addressTypes, transportSemantics
        )

    def was_blocked(self, host: str) -> bool:
        """Whether a recent resolution of ``host`` had only non-public addresses."""
        key = _normalize_host(host)
        expires = self._blocked.get(key)
        if expires is None:
            return False
        if expires < self._clock():
            self._blocked.pop(key, None)
            return False
        return True

    def _resolution_finished(self, host: str, forwarded: int, dropped: int) -> None:
        if dropped:
            self.dropped_count += dropped
            self._inc(STATS_KEY_DROPPED, dropped)
        if forwarded or not dropped:
            return
        self.blocked_count += 1
        self._inc(STATS_KEY_RESOLVER_BLOCKED)
        logger.debug("egress guard: %s resolves only to non-public addresses", host)
        key = _normalize_host(host)
        self._blocked.pop(key, None)
        self._blocked[key] = self._clock() + self.block_ttl
        while len(self._blocked) > self.max_remembered:
            self._blocked.popitem(last=False)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


_WRAPPER_ATTRIBUTES = ("wrapped", "original_resolver", "_wrapped", "_resolver")


def find_guarded_resolver(reactor: Any) -> GuardedResolver | None:
    """The GuardedResolver in the reactor's resolver chain, if any (others may wrap it)."""
    resolver = getattr(reactor, "nameResolver", None)
    for _ in range(8):
        if resolver is None:
            return None
        if isinstance(resolver, GuardedResolver):
            return resolver
        resolver = next(
            (
                getattr(resolver, name)
                for name in _WRAPPER_ATTRIBUTES
                if getattr(resolver, name, None) is not None
            ),
            None,
        )
    return None


def install_guarded_resolver(
    reactor: Any, *, allow_private: bool, allow_hosts: Iterable[str] = ()
) -> GuardedResolver | None:
    """Wrap ``reactor.nameResolver`` in a GuardedResolver, once per reactor.

    A later call reuses the installed guard and adds its ``allow_hosts`` to it. Returns None
    (and installs nothing) when private targets are allowed.
    """
    if allow_private:
        return None
    allow_hosts = list(allow_hosts)
    guard = find_guarded_resolver(reactor)
    if guard is not None:
        if allow_hosts:
            if isinstance(guard.allow_host, _HostAllowList):
                guard.allow_host.add(allow_hosts)
            else:
                logger.warning(
                    "egress guard already installed with a custom allow_host; "
                    "ignoring allow_hosts %r",
                    allow_hosts,
                )
        return guard
    guard = GuardedResolver(reactor.nameResolver, allow_host=_HostAllowList(allow_hosts))
    guard._previous_simple_resolver = getattr(reactor, "resolver", None)
    # installNameResolver also routes reactor.resolve()/connectTCP(name) through the guard.
    reactor.installNameResolver(guard)
    return guard


def uninstall_guarded_resolver(reactor: Any) -> bool:
    """Put back the resolvers install_guarded_resolver() replaced; False if it is not on top."""
    guard = reactor.nameResolver
    if not isinstance(guard, GuardedResolver):
        return False
    reactor.installNameResolver(guard.wrapped)
    if guard._previous_simple_resolver is not None:
        reactor.resolver = guard._previous_simple_resolver
    return True


# ---------------------------------------------------------------------------------------------
# Downloader middleware


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
        stats: _StatsLike | None = None,
        reactor: Any = None,
        dns_timeout: float = 60.0,
    ) -> None:
        self.guard = guard
        self.allow_hosts = _HostAllowList(allow_hosts)
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
            raise UnsupportedScheme(scheme)
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
        raise EgressBlocked(host=host) from cause
