"""The browser's egress guard: a forward proxy on loopback that Chromium must go through.

The ``js`` engine's traffic (navigations, redirects, sub-resources, fetch/XHR, WebSockets,
service workers) never passes through Scrapy's downloader, so the SSRF guard of
``middlewares.egress_guard`` cannot see it. Chromium is launched with
``--proxy-server=<this guard> --proxy-bypass-list=<-loopback>`` (without ``<-loopback>`` it would
skip the proxy for loopback targets) and every browser context of a request is pointed at a
:class:`EgressRoute` of its own. The guard resolves each target itself and connects only to
public addresses, so the address checked is the address connected to (DNS rebinding cannot
slip a private address in after a check). WebSockets arrive as ``CONNECT`` tunnels like https.

A route remembers why it refused or failed a target (``blocked``, ``unresolvable``,
``refused``, ``unreachable``, ``timeout``, ``proxy``, ``proxy_midway``) so the download handler
can report the same error a ``static`` scrape would give. A route may chain to one of the
operator's upstream proxies (a proxy tier): the target is still checked here, then reached
through the upstream. Closing a route closes its listener and every connection still open
through it.

Everything runs on the asyncio loop of the Twisted reactor; name resolution goes through
``loop.getaddrinfo`` (a worker thread), never blocking the reactor.

``test_public_hosts`` (``SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS=name=address,...``) is for tests
only and empty by default: it maps a host name to an address and treats that address as public
for that name alone, so a test can serve a page from a loopback address while proving that
everything else on loopback is refused.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from service.browser.dial import (
    HEAD_LIMIT,
    Refusal,
    connect_any,
    connect_one,
    public_addresses,
    upstream_tunnel,
)
from service.browser.wire import (
    PROXY_CHALLENGE,
    Upstream,
    body_framing,
    closing_head,
    copy_framed,
    final_head,
    has_basic_credentials,
    parse_request_head,
    response_status,
)
from service.egress.addresses import parse_host_literal

if TYPE_CHECKING:
    from patchright.async_api import ProxySettings

__all__ = [
    "MARKER_HEADER",
    "BrowserEgressGuard",
    "EgressRoute",
    "Upstream",
    "parse_test_public_hosts",
    "target_key",
]

log = logging.getLogger(__name__)

MARKER_HEADER = "X-Scrapespy-Egress"
PROXY_USER = "scrapespy"
CHUNK = 64 * 1024
MAX_REMEMBERED_FAILURES = 64

# reason -> (status, reason phrase) answered to the browser
_ANSWERS: dict[str, tuple[int, str]] = {
    "blocked": (403, "Forbidden"),
    "unresolvable": (502, "Bad Gateway"),
    "refused": (502, "Bad Gateway"),
    "unreachable": (502, "Bad Gateway"),
    "proxy": (502, "Bad Gateway"),
    "proxy_midway": (502, "Bad Gateway"),
    "timeout": (504, "Gateway Timeout"),
    "unrouted": (403, "Forbidden"),
    "bad_request": (400, "Bad Request"),
}


class _Stats(Protocol):
    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


def target_key(host: str, port: int) -> str:
    return f"{host.strip('[]').lower().rstrip('.')}:{port}"


def parse_test_public_hosts(entries: Iterable[str]) -> dict[str, str]:
    """``["page.test=127.0.0.2"]`` -> ``{"page.test": "127.0.0.2"}``; bad entries raise."""
    hosts: dict[str, str] = {}
    for entry in entries:
        name, sep, address = entry.partition("=")
        name, address = name.strip().lower().rstrip("."), address.strip()
        if not sep or not name or parse_host_literal(address) is None:
            raise ValueError(
                f"SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS: expected name=address, not {entry!r}"
            )
        hosts[name] = str(parse_host_literal(address))
    return hosts


@dataclass(eq=False)
class EgressRoute:
    """One listening port for one browser context; see the module docstring."""

    guard: BrowserEgressGuard
    upstream: Upstream | None = None
    closed: bool = False  # refuses everything
    server: asyncio.Server | None = None
    port: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    connections: int = 0
    # bytes a connection may bring from its target once set; past it the route cuts the
    # connection and says ``over_limit`` (a file download fetched through it:
    # service.browser.read)
    receive_limit: int | None = None
    over_limit: bool = False
    # the password of the route's proxy credentials (user PROXY_USER), when the guard asks for
    # them: a guard reachable from other hosts (browser servers) lets only its own contexts in
    secret: str | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def credentials(self) -> ProxySettings:
        """Playwright's ``proxy`` option for a context on this route."""
        if self.secret is None:
            return {"server": self.url}
        return {"server": self.url, "username": PROXY_USER, "password": self.secret}

    def admits(self, head: bytes) -> bool:
        """Whether a request head carries the route's credentials (or none are asked for)."""
        return self.secret is None or has_basic_credentials(head, PROXY_USER, self.secret)

    @property
    def url(self) -> str:
        host = self.guard.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def failure_for(self, host: str, port: int) -> str | None:
        return self.failures.get(target_key(host, port))

    def failure_for_url(self, url: str) -> str | None:
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
        except ValueError:
            return None
        return self.failure_for(parts.hostname or "", port)

    def _remember(self, host: str, port: int, reason: str) -> None:
        key = target_key(host, port)
        self.failures.pop(key, None)
        self.failures[key] = reason
        while len(self.failures) > MAX_REMEMBERED_FAILURES:
            self.failures.pop(next(iter(self.failures)))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        self.guard._routes.discard(self)


class BrowserEgressGuard:
    def __init__(
        self,
        *,
        allow_private: bool = False,
        test_public_hosts: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        connect_timeout: float = 10.0,
        idle_timeout: float = 130.0,
        stats: _Stats | None = None,
        authenticate: bool = False,
    ) -> None:
        self.allow_private = allow_private
        # each route asks for credentials of its own (a guard other hosts can reach)
        self.authenticate = authenticate
        self.test_public_hosts = dict(test_public_hosts or {})
        self.host = host
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.stats = stats
        self.default_route: EgressRoute | None = None
        self._routes: set[EgressRoute] = set()
        if self.test_public_hosts:
            log.warning(
                "browser egress guard: TEST ONLY public hosts %s", sorted(self.test_public_hosts)
            )

    @property
    def proxy_server(self) -> str:
        """The ``--proxy-server`` Chromium is launched with (contexts use their own route)."""
        assert self.default_route is not None, "start() the guard first"
        return self.default_route.url

    @property
    def open_routes(self) -> int:
        return len(self._routes)

    async def start(self) -> None:
        if self.default_route is None:
            # Every context has a route of its own; what is left on the browser's own proxy is
            # Chromium calling home (updates, sign-in), which has no business going out.
            self.default_route = await self.open_route(closed=True)

    async def stop(self) -> None:
        for route in list(self._routes):
            route.close()
        self.default_route = None

    async def open_route(
        self, upstream: Upstream | None = None, *, closed: bool = False
    ) -> EgressRoute:
        route = EgressRoute(self, upstream, closed=closed)
        if self.authenticate and not closed:
            route.secret = secrets.token_urlsafe(24)

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(route, reader, writer)

        route.server = await asyncio.start_server(serve, self.host, 0, limit=HEAD_LIMIT)
        route.port = int(route.server.sockets[0].getsockname()[1])
        self._routes.add(route)
        return route

    # -----------------------------------------------------------------------------------------
    # One client connection

    async def _serve(
        self, route: EgressRoute, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        route._writers.add(writer)
        route.connections += 1
        target_writer: asyncio.StreamWriter | None = None
        host, port = "", 0
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
                method, host, port, forward = parse_request_head(head)
            except (ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
                raise Refusal("bad_request") from None
            except TimeoutError:
                return
            if route.closed:
                raise Refusal("unrouted")
            if not route.admits(head):
                # not this route's context: asked for the credentials, and nothing remembered
                # against the target (Chromium asks again with them)
                self._inc("scrapespy/browser_egress/unauthenticated")
                writer.write(PROXY_CHALLENGE)
                await writer.drain()
                return
            target_reader, target_writer = await self._open(
                route, host, port, connect=method == b"CONNECT"
            )
            if method == b"CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                assert forward is not None
                target_writer.write(forward(route.upstream))
            await self._relay(route, reader, writer, target_reader, target_writer, method)
        except Refusal as refusal:
            self._answer(route, writer, host, port, refusal.reason)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, target_writer):
                if w is not None:
                    w.close()
            route._writers.discard(writer)

    def _answer(
        self, route: EgressRoute, writer: asyncio.StreamWriter, host: str, port: int, reason: str
    ) -> None:
        if host:
            route._remember(host, port, reason)
        self._inc(f"scrapespy/browser_egress/{reason}")
        status, phrase = _ANSWERS[reason]
        body = f"scrapespy egress guard: {reason}\n".encode()
        writer.write(
            f"HTTP/1.1 {status} {phrase}\r\n{MARKER_HEADER}: {reason}\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )

    async def _open(
        self, route: EgressRoute, host: str, port: int, *, connect: bool
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addresses = await self._addresses(host, port)
        upstream = route.upstream
        if upstream is None:
            return await connect_any(addresses, port, self.connect_timeout)
        # The operator's own proxy may sit on a private network; the target was checked above.
        try:
            reader, writer = await connect_one(upstream.host, upstream.port, self.connect_timeout)
        except Refusal:
            raise Refusal("proxy") from None
        if connect:
            await upstream_tunnel(upstream, reader, writer, host, port, self.connect_timeout)
        return reader, writer

    async def _addresses(self, host: str, port: int) -> list[str]:
        """The public addresses ``host`` stands for (service.browser.dial); refuses when none
        is left."""
        name = host.lower().rstrip(".")
        if name in self.test_public_hosts:
            return [self.test_public_hosts[name]]
        addresses, dropped = await public_addresses(
            host, port, allow_private=self.allow_private, timeout=self.connect_timeout
        )
        if dropped:
            self._inc("scrapespy/browser_egress/dropped_addresses", dropped)
        return addresses

    async def _relay(
        self,
        route: EgressRoute,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        target_reader: asyncio.StreamReader,
        target_writer: asyncio.StreamWriter,
        method: bytes,
    ) -> None:
        sending = asyncio.ensure_future(self._copy(client_reader, target_writer))
        receiving: asyncio.Future[None] | None = None
        framing = None
        try:
            if method != b"CONNECT":
                head = await final_head(target_reader, client_writer, self.idle_timeout)
                if route.upstream is not None and response_status(head) == 407:
                    raise Refusal("proxy")
                # Each proxied plain-http request gets its own connection: say so to the
                # browser, or it would send its next request, for any host, down this one;
                # the target's is let go once the body it framed is through (wire.py)
                client_writer.write(closing_head(head))
                framing = body_framing(head, method)
            receiving = asyncio.ensure_future(
                self._copy(target_reader, client_writer, route, framing)
            )
            await asyncio.wait({sending, receiving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            tasks = [t for t in (sending, receiving) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _copy(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        receiving: EgressRoute | None = None,
        framing: int | None = None,
    ) -> None:
        """``reader`` to ``writer`` until it ends (or, with ``framing``, its one body has
        passed), counting what ``receiving`` receives against its limit."""
        received = 0

        async def put(data: bytes) -> bool:
            nonlocal received
            if receiving is not None:
                received += len(data)
                limit = receiving.receive_limit
                if limit is not None and received > limit:
                    receiving.over_limit = True
                    writer.transport.abort()
                    return False
            writer.write(data)
            await writer.drain()
            return True

        if framing is not None:
            await copy_framed(reader, put, framing, timeout=self.idle_timeout, chunk=CHUNK)
            return
        while (data := await asyncio.wait_for(reader.read(CHUNK), self.idle_timeout)) and (
            await put(data)
        ):
            pass

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)
