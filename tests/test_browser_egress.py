"""The browser egress guard, through real sockets: what it relays, what it refuses, and why."""

from __future__ import annotations

import asyncio
import base64
import socket
import socketserver
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from service.browser.egress import (
    MARKER_HEADER,
    BrowserEgressGuard,
    EgressRoute,
    Upstream,
    parse_test_public_hosts,
)
from service.browser.wire import CHUNKED, body_framing

ORIGIN_ADDRESS = "127.0.0.2"  # declared public for the names below, and only for them


class GuardLoop:
    """An asyncio loop of its own in a thread, so the tests can talk with blocking sockets."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 10) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        async def call() -> Any:
            return fn(*args)

        return self.run(call())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class Recorder(socketserver.ThreadingTCPServer):
    """A TCP server that counts connections and runs ``answer(data, sock)`` on what it reads."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: str, answer: Any = None) -> None:
        self.connections = 0
        self.received: list[bytes] = []
        self.answer = answer or _http_ok
        self._lock = threading.Lock()
        recorder = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with recorder._lock:
                    recorder.connections += 1
                self.request.settimeout(5)
                try:
                    recorder.answer(recorder, self.request)
                except OSError:
                    pass

        super().__init__((address, 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _http_ok(server: Recorder, sock: socket.socket) -> None:
    head = _read_head(sock)
    server.received.append(head)
    body = b"hello from " + head.split(b" ")[1]
    sock.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n%s"
        % (len(body), body)
    )


def _echo(server: Recorder, sock: socket.socket) -> None:
    while data := sock.recv(4096):
        sock.sendall(data)


def _upstream_proxy(server: Recorder, sock: socket.socket) -> None:
    """A stand-in for an operator's proxy: accepts CONNECT and echoes, or answers plain GETs."""
    head = _read_head(sock)
    server.received.append(head)
    if head.startswith(b"CONNECT "):
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        _echo(server, sock)
    else:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nupstream")


def _refusing_proxy(server: Recorder, sock: socket.socket) -> None:
    server.received.append(_read_head(sock))
    sock.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture(scope="module")
def loop() -> Iterator[GuardLoop]:
    guard_loop = GuardLoop()
    yield guard_loop
    guard_loop.close()


@pytest.fixture
def canary() -> Iterator[Recorder]:
    server = Recorder("127.0.0.1")
    yield server
    server.stop()


@pytest.fixture
def origin() -> Iterator[Recorder]:
    server = Recorder(ORIGIN_ADDRESS)
    yield server
    server.stop()


@pytest.fixture
def echo() -> Iterator[Recorder]:
    server = Recorder(ORIGIN_ADDRESS, _echo)
    yield server
    server.stop()


def make_guard(loop: GuardLoop, **kwargs: Any) -> BrowserEgressGuard:
    kwargs.setdefault(
        "test_public_hosts", {"origin.test": ORIGIN_ADDRESS, "echo.test": ORIGIN_ADDRESS}
    )
    return loop.call(lambda: BrowserEgressGuard(connect_timeout=3, **kwargs))


def open_route(loop: GuardLoop, guard: BrowserEgressGuard, **kwargs: Any) -> EgressRoute:
    return loop.run(guard.open_route(**kwargs))


def ask(route_port: int, head: bytes, *, timeout: float = 5) -> bytes:
    """Send one request head to the guard and read until it closes (or the timeout)."""
    with socket.create_connection(("127.0.0.1", route_port), timeout=timeout) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_plain_http_is_relayed_in_origin_form_without_proxy_credentials(loop, origin):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    answer = ask(
        route.port,
        b"GET http://origin.test:%d/page?q=1 HTTP/1.1\r\nHost: origin.test:%d\r\n"
        b"Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\nProxy-Connection: keep-alive\r\n"
        b"Accept: text/html\r\n\r\n" % (origin.port, origin.port),
    )
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == b"hello from /page?q=1"
    # the browser is told not to send its next request (maybe for another host) down this one
    assert b"Connection: close" in head and b"keep-alive" not in head
    (seen,) = origin.received
    # the target gets the browser's headers as it would directly: its Proxy-Connection as
    # Connection, in the same place, and nothing for the proxy
    assert seen == (
        b"GET /page?q=1 HTTP/1.1\r\nHost: origin.test:%d\r\nConnection: keep-alive\r\n"
        b"Accept: text/html\r\n\r\n" % origin.port
    )
    assert route.failures == {}


def _kept_open(*answers: bytes) -> Any:
    """A target that answers, then keeps the connection open until the guard closes it."""

    def answer(server: Recorder, sock: socket.socket) -> None:
        server.received.append(_read_head(sock))
        for part in answers:
            sock.sendall(part)
        while sock.recv(4096):
            pass

    return answer


@pytest.mark.parametrize(
    ("method", "answer", "body"),
    [
        ("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"he", b"llo"], b"hello"),
        (
            "GET",
            [
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"5;ext=1\r\nhello\r\n",
                b"6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
            ],
            b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
        ),
        ("HEAD", [b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"], b""),
        ("GET", [b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n"], b""),
    ],
    ids=["length", "chunked", "head", "not-modified"],
)
def test_a_kept_alive_target_is_let_go_once_its_body_is_through(loop, method, answer, body):
    target = Recorder(ORIGIN_ADDRESS, _kept_open(*answer))
    try:
        route = open_route(loop, make_guard(loop))
        reply = ask(
            route.port,
            b"%s http://origin.test:%d/ HTTP/1.1\r\nHost: origin.test:%d\r\n"
            b"Proxy-Connection: keep-alive\r\n\r\n" % (method.encode(), target.port, target.port),
            timeout=3,  # the target holds the connection far longer: only the framing ends it
        )
        assert reply.partition(b"\r\n\r\n")[2] == body
        assert b"Connection: keep-alive" in target.received[0]
    finally:
        target.stop()


def test_connect_tunnel_relays_both_ways(loop, echo):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    with socket.create_connection(("127.0.0.1", route.port), timeout=5) as sock:
        sock.sendall(b"CONNECT echo.test:%d HTTP/1.1\r\nHost: echo.test\r\n\r\n" % echo.port)
        assert _read_head(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"ping through the tunnel")
        assert sock.recv(100) == b"ping through the tunnel"
    assert echo.connections == 1


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.1",
        "2130706433",
        "0x7f000001",
        "017700000001",
        "localhost",
        "LOCALHOST.",
        "[::ffff:127.0.0.1]",
        ORIGIN_ADDRESS,  # the test mapping is for names, never for the address itself
    ],
)
def test_private_targets_are_refused_before_any_connection(loop, canary, host):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    plain = ask(route.port, b"GET http://%s:%d/x HTTP/1.1\r\n\r\n" % (host.encode(), canary.port))
    tunnel = ask(route.port, b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (host.encode(), canary.port))
    for answer in (plain, tunnel):
        assert answer.startswith(b"HTTP/1.1 403 ")
        assert f"{MARKER_HEADER}: blocked".encode() in answer
    assert canary.connections == 0
    assert route.failure_for(host, canary.port) == "blocked"
    assert route.failure_for_url(f"http://{host}:{canary.port}/x") == "blocked"


def test_allow_private_lets_loopback_through(loop, canary):
    guard = make_guard(loop, allow_private=True)
    route = open_route(loop, guard)
    answer = ask(route.port, b"GET http://127.0.0.1:%d/open HTTP/1.1\r\n\r\n" % canary.port)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello from /open")
    assert canary.connections == 1


def test_failures_are_told_apart(loop):
    closed = socket.socket()
    closed.bind((ORIGIN_ADDRESS, 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    guard = make_guard(loop, test_public_hosts={"closed.test": ORIGIN_ADDRESS})
    route = open_route(loop, guard)
    refused = ask(route.port, b"CONNECT closed.test:%d HTTP/1.1\r\n\r\n" % port)
    unresolvable = ask(route.port, b"GET http://nothing.invalid/ HTTP/1.1\r\n\r\n")
    assert refused.startswith(b"HTTP/1.1 502") and b"refused" in refused
    assert unresolvable.startswith(b"HTTP/1.1 502") and b"unresolvable" in unresolvable
    assert route.failure_for("closed.test", port) == "refused"
    assert route.failure_for("nothing.invalid", 80) == "unresolvable"


def test_malformed_requests_get_400(loop):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    assert ask(route.port, b"GET /relative HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert ask(route.port, b"GET ftp://origin.test/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert ask(route.port, b"CONNECT origin.test:0 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")


def test_the_default_route_refuses_everything(loop, origin):
    guard = make_guard(loop)
    loop.run(guard.start())
    port = int(guard.proxy_server.rsplit(":", 1)[1])
    answer = ask(port, b"CONNECT origin.test:%d HTTP/1.1\r\n\r\n" % origin.port)
    assert answer.startswith(b"HTTP/1.1 403") and b"unrouted" in answer
    assert origin.connections == 0
    loop.run(guard.stop())


def test_upstream_proxy_gets_the_checked_target_and_our_credentials(loop):
    upstream = Recorder("127.0.0.1", _upstream_proxy)
    try:
        guard = make_guard(loop)
        proxy = Upstream.from_url(f"http://us%40er:p%3Ass@127.0.0.1:{upstream.port}")
        route = open_route(loop, guard, upstream=proxy)
        with socket.create_connection(("127.0.0.1", route.port), timeout=5) as sock:
            sock.sendall(b"CONNECT echo.test:443 HTTP/1.1\r\n\r\n")
            assert _read_head(sock).startswith(b"HTTP/1.1 200")
            sock.sendall(b"via upstream")
            assert sock.recv(100) == b"via upstream"
        credentials = base64.b64encode(b"us@er:p:ss")
        assert upstream.received[0].startswith(b"CONNECT echo.test:443 HTTP/1.1\r\n")
        assert b"Proxy-Authorization: Basic " + credentials in upstream.received[0]
        get = b"GET http://echo.test/doc HTTP/1.1\r\nProxy-Authorization: x\r\n\r\n"
        plain = ask(route.port, get)
        assert plain.endswith(b"upstream")
        assert upstream.received[1].startswith(b"GET http://echo.test/doc HTTP/1.1\r\n")
        assert upstream.received[1].count(b"Proxy-Authorization") == 1
        assert b"Proxy-Authorization: Basic " + credentials in upstream.received[1]
        # a private target is refused here, before the upstream hears of it
        blocked = ask(route.port, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n")
        assert blocked.startswith(b"HTTP/1.1 403")
        assert upstream.connections == 2
    finally:
        upstream.stop()


def test_an_upstream_refusing_our_credentials_is_a_proxy_failure(loop):
    upstream = Recorder("127.0.0.1", _refusing_proxy)
    try:
        guard = make_guard(loop)
        route = open_route(loop, guard, upstream=Upstream("127.0.0.1", upstream.port))
        tunnel = ask(route.port, b"CONNECT echo.test:443 HTTP/1.1\r\n\r\n")
        plain = ask(route.port, b"GET http://echo.test/ HTTP/1.1\r\n\r\n")
        assert tunnel.startswith(b"HTTP/1.1 502") and plain.startswith(b"HTTP/1.1 502")
        assert route.failure_for("echo.test", 443) == "proxy"
        assert route.failure_for("echo.test", 80) == "proxy"
    finally:
        upstream.stop()


def test_closing_a_route_cuts_its_tunnels_and_stops_listening(loop, echo):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    sock = socket.create_connection(("127.0.0.1", route.port), timeout=5)
    try:
        sock.sendall(b"CONNECT echo.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        assert _read_head(sock).startswith(b"HTTP/1.1 200")
        loop.call(route.close)
        assert sock.recv(100) == b""
    finally:
        sock.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", route.port), timeout=5).close()
    assert guard.open_routes == 0


def test_a_stalled_client_does_not_hold_up_others(loop, origin):
    guard = make_guard(loop)
    route = open_route(loop, guard)
    with socket.create_connection(("127.0.0.1", route.port), timeout=5) as stalled:
        stalled.sendall(b"GET http://origin.test:%d/" % origin.port)  # never finishes its head
        answer = ask(route.port, b"GET http://origin.test:%d/other HTTP/1.1\r\n\r\n" % origin.port)
        assert answer.endswith(b"hello from /other")


def test_test_public_hosts_are_name_address_pairs():
    assert parse_test_public_hosts(["Page.Test.=127.0.0.2", "b.test=::1"]) == {
        "page.test": "127.0.0.2",
        "b.test": "::1",
    }
    for bad in ("page.test", "page.test=", "=127.0.0.2", "page.test=not-an-ip"):
        with pytest.raises(ValueError):
            parse_test_public_hosts([bad])


def test_a_guard_that_authenticates_lets_in_only_its_route_s_credentials(loop, origin):
    # a guard other hosts can reach (browser servers): each route has credentials of its own
    guard = make_guard(loop, authenticate=True)
    route, other = open_route(loop, guard), open_route(loop, guard)
    assert route.secret and other.secret and route.secret != other.secret
    assert route.credentials == {
        "server": route.url,
        "username": "scrapespy",
        "password": route.secret,
    }
    request = b"GET http://origin.test:%d/page HTTP/1.1\r\nHost: origin.test\r\n" % origin.port

    def basic(secret: str) -> bytes:
        return base64.b64encode(f"scrapespy:{secret}".encode())

    for credentials in (b"", b"Proxy-Authorization: Basic " + basic(other.secret) + b"\r\n"):
        answer = ask(route.port, request + credentials + b"\r\n")
        assert answer.startswith(b"HTTP/1.1 407 ")
        assert b'Proxy-Authenticate: Basic realm="scrapespy egress"' in answer
    tunnel = b"CONNECT origin.test:%d HTTP/1.1\r\n\r\n" % origin.port
    assert ask(route.port, tunnel).startswith(b"HTTP/1.1 407 ")
    assert origin.connections == 0 and route.failures == {}
    answer = ask(
        route.port,
        request + b"Proxy-Authorization: Basic " + basic(route.secret) + b"\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"hello from /page")
    (seen,) = origin.received
    assert b"Proxy-" not in seen  # the credentials stay between the browser and the guard


def test_a_guard_on_loopback_asks_for_no_credentials(loop):
    route = open_route(loop, make_guard(loop))
    assert route.secret is None and route.credentials == {"server": route.url}


@pytest.mark.parametrize(
    ("head", "method", "framing"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", b"GET", 12),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", b"GET", CHUNKED),
        # chunked wins over a length; a coding other than chunked last ends at the close
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET",
            CHUNKED,
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", b"GET", None),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", b"GET", None),
        (b"HTTP/1.1 200 OK\r\n\r\n", b"GET", None),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", b"HEAD", 0),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b"GET", 0),
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", b"GET", None),
    ],
)
def test_a_response_body_ends_as_its_head_says(head, method, framing):
    assert body_framing(head, method) == framing
