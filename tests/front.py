"""A real HTTP server on 127.0.0.1 in front of the service, for the client's retry tests: it
forwards every request and its answer as they are, records both, and can be told to misbehave
for the next requests (answer a status itself, or cut the connection before or after the
service got the request)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.service import ServiceProcess

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Seen:
    """One request as the front received it, and what it answered (None: it cut the line)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    status: int | None = None
    answer_headers: dict[str, str] | None = None


@dataclass
class Fault:
    """``answer``: reply ``status`` with ``headers`` and the JSON ``body`` without forwarding;
    ``cut``: close the connection without forwarding; ``cut_after``: forward, then close the
    connection without answering (the service did the work, the caller never hears of it)."""

    kind: str
    status: int = 0
    headers: dict[str, str] | None = None
    body: Any = None


class Front:
    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.seen: list[Seen] = []
        self.faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(
                    self.command,
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                    time.monotonic(),
                )
                with front._lock:
                    front.seen.append(seen)
                    fault = front.faults.popleft() if front.faults else None
                if fault is not None and fault.kind == "cut":
                    self.close_connection = True
                    return
                if fault is not None and fault.kind == "answer":
                    data = json.dumps(fault.body).encode()
                    headers = {"Content-Type": "application/json", **(fault.headers or {})}
                    self.answer(seen, fault.status, headers, data)
                    return
                status, headers, data = front.forward(seen)
                if fault is not None and fault.kind == "cut_after":
                    self.close_connection = True
                    return
                self.answer(seen, status, headers, data)

            def answer(self, seen: Seen, status: int, headers: dict[str, str], data: bytes) -> None:
                seen.status = status
                seen.answer_headers = headers
                self.send_response_only(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(*self.upstream, timeout=120)
        try:
            headers = {k: v for k, v in seen.headers.items() if k not in HOP_BY_HOP}
            conn.request(seen.method, seen.path, body=seen.body or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP}
            return response.status, kept, data
        finally:
            conn.close()

    def fail_next(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def requests(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == method and s.path.startswith(path)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(name="front")
def front_fixture(service: ServiceProcess) -> Iterator[Front]:
    """A front of the session's service, for one test (import it to use it)."""
    made = Front(service.base)
    yield made
    made.stop()
