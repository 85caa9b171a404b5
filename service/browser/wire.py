"""HTTP/1.1 forward-proxy messages, as the browser egress guard reads and writes them.

Request heads from the browser (``CONNECT host:port`` or an absolute ``http://`` URL), response
heads on their way back (every proxied plain-http request gets a connection of its own, and the
browser is told so), response bodies read by their framing, and the operator's upstream proxies
a route may chain to.

A plain-http request goes on with the browser's own ``Connection`` header where the browser put
it (its ``Proxy-Connection``, ``keep-alive`` from Chrome), as Chrome sends it to a server
directly; the guard still uses the connection for that one exchange: it reads the response's
body by its ``Content-Length`` or chunks, then closes.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te", b"trailer"}
)


@dataclass(frozen=True)
class Upstream:
    """One of the operator's proxies that a route goes through (plain http proxies only)."""

    host: str
    port: int
    authorization: bytes | None = None

    @classmethod
    def from_url(cls, url: str) -> Upstream:
        if "://" not in url:
            url = "http://" + url
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("only http:// upstream proxies can carry browser traffic")
        username = unquote(parts.username) if parts.username is not None else None
        return cls.build(parts.hostname, parts.port or 80, username, unquote(parts.password or ""))

    @classmethod
    def from_playwright(cls, proxy: Mapping[str, str]) -> Upstream:
        """Playwright's ``{"server", "username", "password"}`` form of a proxy."""
        server = Upstream.from_url(proxy["server"])
        return cls.build(server.host, server.port, proxy.get("username"), proxy.get("password"))

    @classmethod
    def build(cls, host: str, port: int, username: str | None, password: str | None) -> Upstream:
        authorization = None
        if username:
            raw = f"{username}:{password or ''}".encode()
            authorization = b"Basic " + base64.b64encode(raw)
        return cls(host, port, authorization)


def response_status(head: bytes) -> int:
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_authority(authority: str, default_port: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = authority.rpartition(":") if ":" in authority else (authority, "", "")
    port = int(port_text) if port_text else default_port
    if not host or not 0 < port < 65536:
        raise ValueError(authority)
    return host, port


def parse_request_head(
    head: bytes,
) -> tuple[bytes, str, int, Callable[[Upstream | None], bytes] | None]:
    """(method, host, port, forward) where ``forward(upstream)`` gives the bytes to send on."""
    request_line, _, rest = head.partition(b"\r\n")
    method, target, version = request_line.split(b" ")
    if not version.startswith(b"HTTP/1."):
        raise ValueError("not HTTP/1.x")
    if method == b"CONNECT":
        host, port = split_authority(target.decode("ascii"), 443)
        return method, host, port, None
    parts = urlsplit(target.decode("ascii"))
    if parts.scheme != "http" or not parts.netloc:
        raise ValueError("a forward proxy takes absolute http URLs")
    host, port = split_authority(parts.netloc.rpartition("@")[2], 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    lines: list[bytes] = []
    connection = None  # the browser's Connection (or Proxy-Connection), kept in its place
    for line in rest[:-4].split(b"\r\n"):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if connection is None and name in (b"connection", b"proxy-connection"):
            connection = b"Connection: " + value.strip()
            lines.append(connection)
        elif line and name not in _HOP_BY_HOP:
            lines.append(line)
    extra = [] if connection is not None else [b"Connection: close"]

    def forward(upstream: Upstream | None) -> bytes:
        added = list(extra)
        if upstream is None:
            first = method + b" " + path.encode("ascii") + b" " + version
        else:
            first = request_line
            if upstream.authorization:
                added.append(b"Proxy-Authorization: " + upstream.authorization)
        return b"\r\n".join([first, *lines, *added]) + b"\r\n\r\n"

    return method, host, port, forward


# what a route that asks for credentials answers a request without them
PROXY_CHALLENGE = (
    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
    b'Proxy-Authenticate: Basic realm="scrapespy egress"\r\n'
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)


def has_basic_credentials(head: bytes, user: str, password: str) -> bool:
    """Whether a request head's ``Proxy-Authorization`` is Basic ``user``:``password``."""
    expected = base64.b64encode(f"{user}:{password}".encode()).decode()
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"proxy-authorization":
            scheme, _, token = value.strip().decode("latin-1").partition(" ")
            if scheme.lower() == "basic" and hmac.compare_digest(token.strip(), expected):
                return True
    return False


def closing_head(head: bytes) -> bytes:
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [
        line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP
    ]
    return b"\r\n".join([*kept, b"Connection: close", b"Proxy-Connection: close"]) + b"\r\n\r\n"


async def final_head(
    reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter, timeout: float
) -> bytes:
    """The response head, passing informational (1xx) ones on to the browser."""
    while True:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            raise ConnectionError("no response head") from None
        status = response_status(head)
        if not 100 <= status < 200 or status == 101:
            return head
        client_writer.write(head)


CHUNKED = -1  # body_framing: the body comes in chunks


def body_framing(head: bytes, method: bytes) -> int | None:
    """How the body after a response head ends: its length in bytes, :data:`CHUNKED`, or None
    (when the server closes the connection)."""
    status = response_status(head)
    if status == 101:
        return None  # the connection is the upgraded protocol's from here on
    if method == b"HEAD" or 100 <= status < 200 or status in (204, 304):
        return 0
    length: int | None = None
    for line in head[:-4].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding":
            # the last coding says how the message ends: chunked, else the connection's close
            return CHUNKED if value.split(b",")[-1].strip().lower() == b"chunked" else None
        if name == b"content-length":
            text = value.strip()
            if not text.isdigit() or (length is not None and length != int(text)):
                return None
            length = int(text)
    return length


async def copy_framed(
    reader: asyncio.StreamReader,
    put: Callable[[bytes], Awaitable[bool]],
    framing: int,
    *,
    timeout: float,
    chunk: int,
) -> None:
    """Reads one body of ``framing`` (:func:`body_framing`, not None) and hands its bytes, as
    they were sent, to ``put``, which says whether to go on. A server that ends too early or
    breaks the chunk syntax raises ConnectionError."""

    async def read_line() -> bytes:
        try:
            line = await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            raise ConnectionError("a broken chunked body") from None
        return line

    async def exactly(size: int) -> bool:
        while size > 0:
            data = await asyncio.wait_for(reader.read(min(size, chunk)), timeout)
            if not data:
                raise ConnectionError("the body ended early")
            size -= len(data)
            if not await put(data):
                return False
        return True

    if framing != CHUNKED:
        await exactly(framing)
        return
    while True:
        line = await read_line()
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ConnectionError("a broken chunked body") from None
        if not await put(line) or (size and not await exactly(size + 2)):
            return
        if size == 0:
            break
    while (line := await read_line()) and await put(line) and line != b"\r\n":
        pass  # the trailer fields, up to the empty line
