"""Tests for service.egress.addresses: which addresses are public, how host literals read."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.egress.addresses import (
    BLOCKED_MESSAGE,
    EgressBlocked,
    is_public_address,
    parse_host_literal,
)

# ---------------------------------------------------------------------------------------------
# is_public_address

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "2606:4700::1",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "[2606:4700::1]",
]

NOT_PUBLIC = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.254",
    "224.0.0.1",
    "239.255.255.250",
    "0.0.0.0",
    "0.1.2.3",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.0.1",
    "192.0.2.1",
    "198.18.0.1",
    "198.51.100.7",
    "203.0.113.9",
    "::1",
    "::",
    "fe80::1",
    "fe80::1%eth0",
    "[fe80::1%25eth0]",
    "fc00::1",
    "fd12:3456:789a::1",
    "fec0::1",
    "ff02::1",
    "100::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",  # IPv4-compatible
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b:1::a00:1",  # local-use NAT64
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001::1",  # Teredo
    "2001:2::1",  # benchmarking
    "2001:db8::1",
    "3fff::1",
    "[::1]",
    "localhost",
    "not an address",
    "",
]


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_non_public_addresses(address: str) -> None:
    assert not is_public_address(address)


def test_is_public_address_takes_ipaddress_objects() -> None:
    assert is_public_address(ipaddress.ip_address("8.8.8.8"))
    assert is_public_address(ipaddress.ip_address("2606:4700::1"))
    assert not is_public_address(ipaddress.ip_address("127.0.0.1"))
    assert not is_public_address(ipaddress.ip_address("::ffff:127.0.0.1"))
    assert not is_public_address(ipaddress.IPv6Address("fe80::1%eth0"))


# ---------------------------------------------------------------------------------------------
# parse_host_literal

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", LOOPBACK),
        ("127.1", LOOPBACK),
        ("127.0.1", LOOPBACK),
        ("2130706433", LOOPBACK),
        ("0x7f000001", LOOPBACK),
        ("0X7F000001", LOOPBACK),
        ("017700000001", LOOPBACK),
        ("0x7f.1", LOOPBACK),
        ("0177.0.0.01", LOOPBACK),
        ("127.0.0.1.", LOOPBACK),
        ("0", ipaddress.IPv4Address("0.0.0.0")),
        ("0.0.0.0", ipaddress.IPv4Address("0.0.0.0")),
        ("4294967295", ipaddress.IPv4Address("255.255.255.255")),
        ("[::1]", ipaddress.IPv6Address("::1")),
        ("::1", ipaddress.IPv6Address("::1")),
        ("[::ffff:127.0.0.1]", ipaddress.IPv6Address("::ffff:127.0.0.1")),
        ("[fe80::1%25eth0]", ipaddress.IPv6Address("fe80::1")),
        ("[::]", ipaddress.IPv6Address("::")),
        ("8.8.8.8", ipaddress.IPv4Address("8.8.8.8")),
    ],
)
def test_parse_host_literal(host: str, expected: ipaddress.IPv4Address) -> None:
    assert parse_host_literal(host) == expected


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "example.com",
        "",
        "4294967296",
        "256.0.0.1",
        "1.2.3.4.5",
        "08",
        "0x",
        "1..2",
        "+1",
        "1_0",
        "[not-ipv6]",
        "0x7f.example",
    ],
)
def test_parse_host_literal_names(host: str) -> None:
    assert parse_host_literal(host) is None


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


@given(st.text(alphabet="0123456789xXaAfF.", max_size=24))
def test_parse_host_literal_agrees_with_inet_aton(text: str) -> None:
    # The C library is what getaddrinfo() uses, so every form it accepts must be recognised.
    if text.endswith("."):
        return
    assert parse_host_literal(text) == _inet_aton(text)


def test_egress_blocked_message() -> None:
    error = EgressBlocked(host="127.0.0.1")
    assert str(error) == BLOCKED_MESSAGE
    assert error.host == "127.0.0.1"
    # as Scrapy's IgnoreRequest it is middlewares.egress_guard.BlockedRequest: see its tests
