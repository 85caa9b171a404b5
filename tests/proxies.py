"""Real forward proxies on 127.0.0.1 for the tests, and proxies that are dead in two ways.

:class:`ForwardProxy` answers what a commercial HTTP proxy answers: absolute-URI requests
(``GET http://host/path HTTP/1.1``) are forwarded to the target, ``CONNECT host:port`` opens a
byte tunnel (for https targets). With credentials it demands Basic ``Proxy-Authorization`` and
answers 407 otherwise. Every request that reaches it is recorded in :attr:`ForwardProxy.seen`.
With a ``stamp`` it adds ``X-Test-Proxy: <stamp>`` to what it forwards, so that a test target can
tell which pool a request came through (a site that blocks datacenter addresses, say).

Dead proxies: :func:`closed_port` is a port nothing listens on (connection refused), and
:class:`DroppingProxy` accepts a connection, reads the request and closes it unanswered.
"""

from __future__ import annotations

import base64
import http.client
import selectors
import socket
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseRequestHandler, ThreadingTCPServer
from typing import Any
from urllib.parse import quote, urlsplit

# Headers that concern one connection only; a proxy never passes them on (RFC 9110, 7.6.1).
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}


@dataclass(frozen=True)
class Seen:
    """One request as the proxy saw it."""

    method: str
    target: str  # the absolute URL, or host:port for CONNECT
    credentials: tuple[str, str] | None  # decoded Proxy-Authorization, when sent
    authorized: bool


def closed_port() -> int:
    """A loopback port with nothing listening: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _decode_basic(value: str | None) -> tuple[str, str] | None:
    if not value or not value.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(value[6:].strip()).decode("latin-1").partition(":")
    except ValueError:
        return None
    return user, password


def _relay(a: socket.socket, b: socket.socket, idle_timeout: float = 30.0) -> None:
    """Copy bytes both ways until one side closes or nothing moves for ``idle_timeout``."""
    with selectors.DefaultSelector() as sel:
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        while True:
            events = sel.select(idle_timeout)
            if not events:
                return
            for key, _ in events:
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                try:
                    key.data.sendall(data)
                except OSError:
                    return


class ForwardProxy:
    """A threaded HTTP forward proxy (absolute-URI requests and CONNECT) that counts."""

    def __init__(
        self,
        username: str | None = None,
        password: str | None = None,
        *,
        port: int = 0,
        stamp: str | None = None,
    ) -> None:
        self.username = username
        self.password = password
        self.stamp = stamp
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        proxy = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _admit(self, target: str) -> bool:
                credentials = _decode_basic(self.headers.get("Proxy-Authorization"))
                authorized = proxy.username is None or credentials == (
                    proxy.username,
                    proxy.password or "",
                )
                with proxy._lock:
                    proxy.seen.append(Seen(self.command, target, credentials, authorized))
                if not authorized:
                    self._answer(
                        407,
                        b"proxy authentication required",
                        {"Proxy-Authenticate": 'Basic realm="tests"'},
                    )
                return authorized

            def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_CONNECT(self) -> None:
                if not self._admit(self.path):
                    return
                host, _, port = self.path.rpartition(":")
                try:
                    upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
                except (OSError, ValueError):
                    self._answer(502, b"cannot reach the target")
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                with upstream:
                    upstream.settimeout(None)
                    _relay(self.connection, upstream)

            def _forward(self) -> None:
                url = urlsplit(self.path)
                if url.scheme != "http" or not url.hostname:
                    self._answer(400, b"a proxy wants an absolute http URL")
                    return
                if not self._admit(self.path):
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    name: value
                    for name, value in self.headers.items()
                    if name.lower() not in HOP_BY_HOP
                }
                if proxy.stamp is not None:
                    headers["X-Test-Proxy"] = proxy.stamp
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                upstream = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=30)
                try:
                    upstream.request(self.command, path, body, headers)
                    reply = upstream.getresponse()
                    data = reply.read()
                except OSError:
                    self._answer(502, b"cannot reach the target")
                    return
                finally:
                    upstream.close()
                self.send_response(reply.status, reply.reason)
                for name, value in reply.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The proxy URL an operator configures, credentials included."""
        if self.username is None:
            return f"http://{self.address}"
        user, password = quote(self.username, safe=""), quote(self.password or "", safe="")
        return f"http://{user}:{password}@{self.address}"

    def start(self) -> ForwardProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def count(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for s in self.seen if method is None or s.method == method)

    def targets(self) -> list[str]:
        with self._lock:
            return [s.target for s in self.seen]


class DroppingProxy:
    """Accepts connections and reads the request, then hangs up without a byte of answer."""

    def __init__(self) -> None:
        self.dropped = 0
        self._lock = threading.Lock()
        proxy = self

        class _Handler(BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(10)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = self.request.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    pass
                with proxy._lock:
                    proxy.dropped += 1
                # An RST rather than a FIN: the client sees the connection die mid-request.
                self.request.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.request.close()

        self.server = ThreadingTCPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def start(self) -> DroppingProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def count(self) -> int:
        with self._lock:
            return self.dropped
