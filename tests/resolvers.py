"""Stand-ins for Twisted's name resolution, for the egress guard's tests: a resolver that
answers from a table, a receiver that records, stats and a reactor that keep what they are given."""

from __future__ import annotations

from typing import Any

from twisted.internet.address import IPv4Address, IPv6Address, UNIXAddress
from twisted.internet.interfaces import IHostnameResolver, IHostResolution, IResolutionReceiver
from zope.interface import implementer


@implementer(IHostResolution)
class Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        pass


@implementer(IHostnameResolver)
class FakeResolver:
    """Answers synchronously from a table; unknown names get zero addresses."""

    def __init__(self, table: dict[str, list[Any]]) -> None:
        self.table = table
        self.calls: list[str] = []

    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        self.calls.append(hostName)
        resolution = Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        for entry in self.table.get(hostName, []):
            if isinstance(entry, str):
                cls = IPv6Address if ":" in entry else IPv4Address
                entry = cls("TCP", entry, portNumber)
            resolutionReceiver.addressResolved(entry)
        resolutionReceiver.resolutionComplete()
        return resolution


@implementer(IResolutionReceiver)
class RecordingReceiver:
    def __init__(self) -> None:
        self.began: list[Any] = []
        self.addresses: list[str] = []
        self.completed = 0

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        self.began.append(resolutionInProgress)

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.completed += 1


class FakeStats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count


TABLE: dict[str, list[Any]] = {
    "mixed.example": ["10.0.0.1", "93.184.216.34", "::1", "2606:4700::1", "fe80::1%eth0"],
    "private.example": ["127.0.0.1", "::1", "169.254.169.254"],
    "public.example": ["93.184.216.34"],
    "rebind.example": ["127.0.0.1"],
    "proxy.internal": ["10.0.0.5"],
    "unix.example": [UNIXAddress("/tmp/sock")],
}


class FakeReactor:
    def __init__(self) -> None:
        self.nameResolver: Any = FakeResolver(TABLE)
        self.resolver: Any = object()

    def installNameResolver(self, resolver: Any) -> Any:
        previous, self.nameResolver = self.nameResolver, resolver
        self.resolver = ("simplified", resolver)
        return previous
