"""The guarded resolver: Twisted connects only to public addresses.

:class:`GuardedResolver` wraps the reactor's ``IHostnameResolver`` and drops every non-public
address (``service.egress.addresses``) before Twisted connects, so the check applies to the
address actually connected to (DNS rebinding cannot slip a private address in after a check).
A host whose addresses were all dropped is remembered for a while, so that the connection's
``DNSLookupError`` can be told apart from a real DNS failure (:meth:`GuardedResolver.was_blocked`).

:func:`install_guarded_resolver` puts it on a reactor, once per reactor;
:func:`uninstall_guarded_resolver` takes it off again. ``middlewares.egress_guard`` installs it
when the crawler builds the middleware.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.address import IPv6Address as TwistedIPv6Address
from twisted.internet.interfaces import IAddress, IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from service.egress.addresses import is_public_address, normalize_host

__all__ = [
    "STATS_KEY_DROPPED",
    "STATS_KEY_RESOLVER_BLOCKED",
    "GuardedResolver",
    "HostAllowList",
    "StatsLike",
    "find_guarded_resolver",
    "install_guarded_resolver",
    "uninstall_guarded_resolver",
]

logger = logging.getLogger(__name__)

STATS_KEY_DROPPED = "scrapespy/egress_guard/dropped_addresses"
STATS_KEY_RESOLVER_BLOCKED = "scrapespy/egress_guard/resolver_blocked"


class StatsLike(Protocol):
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


class HostAllowList:
    """Exact host names/IPs the operator lets through (its own proxies); spellings are not
    equated, so ``127.000.0.1`` is not ``127.0.0.1``."""

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        self.hosts: set[str] = set()
        self.add(hosts)

    def add(self, hosts: Iterable[str]) -> None:
        self.hosts.update(normalize_host(h) for h in hosts if h and h.strip())

    def __call__(self, host: str) -> bool:
        return normalize_host(host) in self.hosts


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
        stats: StatsLike | None = None,
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
        key = normalize_host(host)
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
        key = normalize_host(host)
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
            if isinstance(guard.allow_host, HostAllowList):
                guard.allow_host.add(allow_hosts)
            else:
                logger.warning(
                    "egress guard already installed with a custom allow_host; "
                    "ignoring allow_hosts %r",
                    allow_hosts,
                )
        return guard
    guard = GuardedResolver(reactor.nameResolver, allow_host=HostAllowList(allow_hosts))
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
