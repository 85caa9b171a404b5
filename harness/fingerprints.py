"""A TLS site on 127.0.0.1 that tells each client its network fingerprint, for the tests and the
bench of the static engine's fingerprint (service.impersonation, decision record 0037).

Each connection's ClientHello is read before the handshake (peeked, then handed to Python's
``ssl``) and turned into its JA4 (FoxIO's documented hash of the ClientHello: protocol, version,
SNI, counts, ALPN, sorted ciphers, sorted extensions and signature algorithms). Over HTTP/2 the
frames before the first request give the Akamai-style fingerprint (SETTINGS, the connection's
WINDOW_UPDATE, PRIORITY frames, the pseudo-headers' order); over HTTP/1.1 the header names'
order stands in. Every page shows them (``<p id="ja4">``...), so a scrape reads them back, and
:attr:`FingerprintSite.seen` keeps them for the system Chromium's to be compared with
(:func:`chromium_hello`).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import html
import socket
import socketserver
import ssl
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hpack import Decoder, Encoder

from harness.tls import self_signed

__all__ = ["CHROMIUMS", "FingerprintSite", "Hello", "chromium_hello", "ja4"]

CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_VERSIONS = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3"}


def _grease(value: int) -> bool:
    return (value & 0x0F0F) == 0x0A0A and (value >> 8) == (value & 0xFF)


def _sha12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else "0" * 12


def ja4(record: bytes) -> str:
    """The JA4 of a TLS record holding a ClientHello (FoxIO's JA4 specification)."""
    body = record[5:]
    assert body[0] == 1, "not a ClientHello"
    at = 4 + 2 + 32
    at += 1 + body[at]
    (n,) = struct.unpack_from("!H", body, at)
    ciphers = [c for c in struct.unpack_from(f"!{n // 2}H", body, at + 2) if not _grease(c)]
    at += 2 + n
    at += 1 + body[at]
    (end,) = struct.unpack_from("!H", body, at)
    at, end = at + 2, at + 2 + end
    extensions: list[int] = []
    version = struct.unpack_from("!H", body, 4)[0]
    alpn, sni, sigalgs = "", "i", []
    while at + 4 <= end:
        kind, size = struct.unpack_from("!HH", body, at)
        data = body[at + 4 : at + 4 + size]
        at += 4 + size
        if _grease(kind):
            continue
        extensions.append(kind)
        if kind == 0x0000:
            sni = "d"
        elif kind == 0x0010 and len(data) > 3:
            alpn = data[3 : 3 + data[2]].decode("latin-1")
        elif kind == 0x002B:
            offered = struct.unpack_from(f"!{data[0] // 2}H", data, 1)
            version = max(v for v in offered if not _grease(v))
        elif kind == 0x000D:
            (m,) = struct.unpack_from("!H", data, 0)
            sigalgs = [s for s in struct.unpack_from(f"!{m // 2}H", data, 2) if not _grease(s)]
    first = "t" + _VERSIONS.get(version, "00") + sni
    first += f"{min(len(ciphers), 99):02d}{min(len(extensions), 99):02d}"
    first += (alpn[0] + alpn[-1]) if alpn else "00"
    hashed = sorted(f"{e:04x}" for e in extensions if e not in (0x0000, 0x0010))
    third = ",".join(hashed) + ("_" + ",".join(f"{s:04x}" for s in sigalgs) if sigalgs else "")
    return f"{first}_{_sha12(','.join(sorted(f'{c:04x}' for c in ciphers)))}_{_sha12(third)}"


@dataclass
class Hello:
    """What one request told about its client."""

    ja4: str
    alpn: str
    http2: str = ""  # SETTINGS|WINDOW_UPDATE|PRIORITY|pseudo-headers, over HTTP/2
    path: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)  # in the order sent

    @property
    def header_names(self) -> list[str]:
        return [name.lower() for name, _ in self.headers]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB from 64 KiB


def _page(hello: Hello) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer to ``hello.path``: a page that shows the fingerprint, or a test's route."""
    path = hello.path.split("?")[0]
    if path == "/redirect":
        return 302, [("location", "/landing")], b""
    if path == "/loop":
        return 302, [("location", "/loop")], b""
    if path == "/huge":
        return 200, [("content-type", "text/html")], b"<html><body>" + b"x" * (17 * 1024 * 1024)
    if path == "/bomb":
        return 200, [("content-type", "text/html"), ("content-encoding", "gzip")], _bomb()
    if path == "/guarded" and f"ja4={hello.ja4}" not in hello.path:
        # an anti-bot vendor that tells clients by their TLS fingerprint, before any HTML
        challenge = b"<html><head><title>Just a moment...</title></head><body></body></html>"
        return 403, [("content-type", "text/html"), ("cf-mitigated", "challenge")], challenge
    if path == "/slow":
        time.sleep(8)
    if path == "/set-cookie":
        return 200, [("content-type", "text/html"), ("set-cookie", "seen=yes; Path=/")], b"<p>ok"
    cells = {
        "ja4": hello.ja4,
        "alpn": hello.alpn,
        "http2": hello.http2,
        "order": ",".join(hello.header_names),
        "user-agent": hello.header("user-agent") or "",
        "cookie": hello.header("cookie") or "",
    }
    rows = "".join(f'<p id="{k}">{html.escape(v)}</p>' for k, v in cells.items())
    title = "landing" if path == "/landing" else "fingerprint"
    page = f"<!doctype html><html><head><title>{title}</title></head><body>{rows}</body></html>"
    return 200, [("content-type", "text/html; charset=utf-8")], page.encode()


class _Connection(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        raw: socket.socket = self.request
        raw.settimeout(30)
        record = _peek_record(raw)
        if record is None:
            return
        fingerprint = ja4(record)
        try:
            tls = self.server.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            return
        alpn = tls.selected_alpn_protocol() or "http/1.1"
        try:
            if alpn == "h2":
                _serve_h2(tls, fingerprint, self.server.seen)
            else:
                _serve_h1(tls, fingerprint, self.server.seen)
        except (OSError, ssl.SSLError, ValueError):
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    context: ssl.SSLContext
    seen: list[Hello]


def _peek_record(raw: socket.socket) -> bytes | None:
    data = b""
    for _ in range(200):
        data = raw.recv(65536, socket.MSG_PEEK)
        if len(data) >= 5 and len(data) >= 5 + struct.unpack_from("!H", data, 3)[0]:
            return data[: 5 + struct.unpack_from("!H", data, 3)[0]]
        if not data:
            return None
    return None


def _read(conn: ssl.SSLSocket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise ValueError("closed")
        out += chunk
    return out


def _serve_h1(conn: ssl.SSLSocket, fingerprint: str, seen: list[Hello]) -> None:
    reader = conn.makefile("rb")
    while True:
        line = reader.readline(65536)
        if not line.strip():
            return
        hello = Hello(fingerprint, "http/1.1", path=line.split()[1].decode("latin-1"))
        while (header := reader.readline(65536)).strip():
            name, _, value = header.decode("latin-1").partition(":")
            hello.headers.append((name.strip(), value.strip()))
        seen.append(hello)
        status, headers, body = _page(hello)
        head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers)
        conn.sendall(head.encode("latin-1") + b"\r\n" + body)


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack("!I", len(payload))[1:] + struct.pack("!BBI", kind, flags, stream) + payload


def _serve_h2(conn: ssl.SSLSocket, fingerprint: str, seen: list[Hello]) -> None:
    if _read(conn, len(_PREFACE)) != _PREFACE:
        return
    conn.sendall(_frame(4, 0, 0, struct.pack("!HI", 3, 100)))  # SETTINGS: 100 streams
    settings, window, priorities = "", "00", []
    decoder, encoder = Decoder(), Encoder()
    blocks: dict[int, bytes] = {}
    first = True
    while True:
        head = _read(conn, 9)
        size = int.from_bytes(head[:3], "big")
        kind, flags, stream = head[3], head[4], struct.unpack("!I", head[5:])[0] & 0x7FFFFFFF
        payload = _read(conn, size)
        if kind == 4 and not flags & 1:  # SETTINGS
            pairs = [struct.unpack_from("!HI", payload, i) for i in range(0, size, 6)]
            if first:
                settings = ";".join(f"{k}:{v}" for k, v in pairs)
            conn.sendall(_frame(4, 1, 0))
        elif kind == 8 and stream == 0 and first:  # WINDOW_UPDATE of the connection
            window = str(struct.unpack("!I", payload)[0] & 0x7FFFFFFF)
        elif kind == 2 and first:  # PRIORITY
            dep, weight = struct.unpack("!IB", payload)
            priorities.append(f"{stream}:{dep >> 31}:{dep & 0x7FFFFFFF}:{weight + 1}")
        elif kind == 6 and not flags & 1:  # PING
            conn.sendall(_frame(6, 1, 0, payload))
        elif kind in (1, 9):  # HEADERS, CONTINUATION
            if kind == 1:
                pad = payload[0] if flags & 0x8 else 0
                start = (1 if flags & 0x8 else 0) + (5 if flags & 0x20 else 0)
                payload = payload[start : len(payload) - pad]
            blocks[stream] = blocks.get(stream, b"") + payload
            if flags & 0x4:  # END_HEADERS
                headers = [(str(k), str(v)) for k, v in decoder.decode(blocks.pop(stream))]
                pseudo = ",".join(k[1] for k, _ in headers if k.startswith(":"))
                akamai = f"{settings}|{window}|{','.join(priorities) or '0'}|{pseudo}"
                path = next(v for k, v in headers if k == ":path")
                hello = Hello(fingerprint, "h2", akamai, path, headers)
                seen.append(hello)
                first = False
                status, answer, body = _page(hello)
                block = encoder.encode([(":status", str(status)), *answer])
                conn.sendall(_frame(1, 0x4 | (0 if body else 0x1), stream, block))
                for at in range(0, len(body), 16384):
                    last = 0x1 if at + 16384 >= len(body) else 0
                    conn.sendall(_frame(0, last, stream, body[at : at + 16384]))
        elif kind == 7:  # GOAWAY
            return


class FingerprintSite:
    """``https://127.0.0.1:PORT``: a TLS server (HTTP/2 and HTTP/1.1) that shows fingerprints."""

    def __init__(self, workdir: Path) -> None:
        cert, key = self_signed(workdir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["h2", "http/1.1"])
        # no session tickets: every handshake is a first one, whose JA4 compares with Chromium's
        # first visit (a resumed one adds pre_shared_key, as Chrome's own second visit would)
        context.num_tickets = 0
        self.server = _Server(("127.0.0.1", 0), _Connection)
        self.server.context = context
        self.server.seen = self.seen = []
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = "/") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def last(self, path: str) -> Hello:
        return next(h for h in reversed(self.seen) if h.path == path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def chromium_hello(site: FingerprintSite, path: str, binary: str, timeout: float = 60) -> Hello:
    """What the system Chromium, unautomated, sends when it opens ``path`` of ``site``."""
    subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--ignore-certificate-errors",
            "--disable-gpu",
            "--dump-dom",
            site.url(path),
        ],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return site.last(path)
