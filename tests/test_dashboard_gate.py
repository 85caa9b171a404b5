"""Who the visitor is, for the per-address limits: the peer, or a trusted proxy's last hop."""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.web.test.requesthelper import DummyRequest

from service.dashboard.gate import client_address


def request(forwarded: str | None = None) -> DummyRequest:
    made = DummyRequest([b"dashboard", b"login"])
    made.client = IPv4Address("TCP", "192.0.2.10", 40000)
    if forwarded is not None:
        made.requestHeaders.setRawHeaders(b"X-Forwarded-For", [forwarded.encode()])
    return made


def test_without_a_trusted_proxy_the_header_is_ignored():
    assert client_address(request()) == "192.0.2.10"
    assert client_address(request("203.0.113.5")) == "192.0.2.10"


def test_behind_a_trusted_proxy_the_last_hop_counts():
    trusted = {"trust_forwarded_for": True}
    assert client_address(request("203.0.113.5"), **trusted) == "203.0.113.5"
    assert client_address(request("1.2.3.4, 203.0.113.5"), **trusted) == "203.0.113.5"
    assert client_address(request("1.2.3.4,203.0.113.7 "), **trusted) == "203.0.113.7"
    assert client_address(request(), **trusted) == "192.0.2.10"
    assert client_address(request(" , "), **trusted) == "192.0.2.10"
