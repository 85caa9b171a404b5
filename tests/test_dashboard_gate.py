"""Who the visitor is, for the per-address limits: the peer, or a trusted proxy's last hop."""

from __future__ import annotations

from twisted.internet.address import IPv4Address
from twisted.web.test.requesthelper import DummyRequest

from service.dashboard.gate import client_address, origin_of, request_origin


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


def test_an_origin_is_compared_as_a_browser_writes_it():
    assert origin_of("https://Spy.Example.test:443/dashboard") == "https://spy.example.test"
    assert origin_of("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert origin_of("http://127.0.0.1:80/x?y") == "http://127.0.0.1"
    assert origin_of("http://[::1]:8080/") == "http://[::1]:8080"
    for nothing in ("null", "", "file:///etc/passwd", "http://", "http://x:99999", "spy.test"):
        assert origin_of(nothing) is None, nothing


def test_a_form_says_where_it_comes_from_by_origin_then_by_referer():
    made = request()
    assert request_origin(made) is None
    made.requestHeaders.setRawHeaders(b"Referer", [b"http://127.0.0.1:8081/dashboard/login"])
    assert request_origin(made) == "http://127.0.0.1:8081"
    made.requestHeaders.setRawHeaders(b"Origin", [b"null"])
    assert request_origin(made) is None  # an opaque origin is no origin, whatever the Referer
