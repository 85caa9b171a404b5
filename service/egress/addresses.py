"""Which addresses a scrape may reach: the rules the SSRF guard applies everywhere.

By default nothing on a loopback, private, link-local, CGNAT, multicast, reserved, unspecified,
documentation/benchmarking or unique-local address is fetched, whatever spelling the URL uses
(``localhost``, ``127.1``, ``2130706433``, ``0x7f000001``, ``[::ffff:127.0.0.1]``, a name that
resolves there, a redirect that goes there).

:func:`is_public_address` judges an address, :func:`parse_host_literal` reads the address a
host spells the way the C library does, and :class:`EgressBlocked` / :class:`UnsupportedScheme`
carry the messages users see. Both guards use them: the guarded resolver and the downloader
middleware of ``middlewares.egress_guard`` for static downloads, the browser's forward proxy
(``service.browser.egress``) for the ``js`` engine. The module knows no Scrapy: the middleware
raises these errors as Scrapy's ``IgnoreRequest`` (``middlewares.egress_guard.BlockedRequest``).
"""

from __future__ import annotations

import ipaddress
import re

__all__ = [
    "BLOCKED_MESSAGE",
    "UNSUPPORTED_SCHEME_MESSAGE",
    "EgressBlocked",
    "UnsupportedScheme",
    "is_public_address",
    "normalize_host",
    "parse_host_literal",
]

BLOCKED_MESSAGE = "target address is not allowed (private, loopback or reserved network)"
UNSUPPORTED_SCHEME_MESSAGE = "unsupported URL scheme"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressBlocked(Exception):
    """The request's target (or its proxy) is on a network the service must not reach."""

    def __init__(self, message: str = BLOCKED_MESSAGE, *, host: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.host = host

    def __str__(self) -> str:
        return self.message


class UnsupportedScheme(Exception):
    """Only http and https may be fetched (file:, ftp:, s3:, data: ... are refused)."""

    def __init__(self, scheme: str = "") -> None:
        super().__init__(UNSUPPORTED_SCHEME_MESSAGE)
        self.scheme = scheme

    def __str__(self) -> str:
        return UNSUPPORTED_SCHEME_MESSAGE


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


def normalize_host(host: str | bytes) -> str:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")
