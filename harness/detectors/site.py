"""The detector server: a threaded HTTP server on 127.0.0.1 with one page per detector
(``/detect/<name>``), their scripts, and ``POST /verdict/<name>?run=<token>`` where each page
sends its verdict. The unautomated reference has no other way to hand a verdict back; a scrape
reads the same verdict from the page's DOM."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.detectors.pages import DETECTORS, asset, detector_page

TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".gif": "image/gif",
}


@cache
def chromium_version(path: str = "/usr/bin/chromium") -> str:
    """The machine's Chromium version: rebrowser's useragent test takes it for the latest stable
    release (the page would ask chromiumdash.appspot.com, beyond 127.0.0.1)."""
    try:
        said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "0.0.0.0"
    found = re.search(r"(\d+\.\d+\.\d+\.\d+)", said.stdout)
    return found.group(1) if found else "0.0.0.0"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a browser closing its spare connections, or one killed mid-request


class DetectorSite:
    """Serves the detector pages; ``verdicts[(name, run)]`` holds what the pages POSTed."""

    def __init__(self) -> None:
        self.verdicts: dict[tuple[str, str], dict[str, Any]] = {}
        # every GET as it came: its target (with the query) and its headers, in the order sent
        self.requests: list[tuple[str, list[tuple[str, str]]]] = []
        self._arrived = threading.Condition()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, kind: str, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Cache-Control", "no-store")
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with site._arrived:
                    site.requests.append((self.path, list(self.headers.items())))
                name = path.removeprefix("/detect/")
                if path.startswith("/detect/") and name in DETECTORS:
                    self._answer(200, "text/html; charset=utf-8", detector_page(name))
                elif path == "/csp-probe.js":
                    self._answer(200, TYPES[".js"], b"window.cspProbeLoaded = true;\n")
                elif path == "/chromiumdash/fetch_releases":
                    release = [{"version": chromium_version(), "time": int(time.time() * 1000)}]
                    self._answer(200, TYPES[".json"], json.dumps(release).encode())
                elif (body := asset(path)) is not None:
                    kind = TYPES.get(path[path.rfind(".") :], "application/octet-stream")
                    self._answer(200, kind, body)
                else:
                    self._answer(404, "text/plain", b"not here\n")

            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                size = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(min(size, 4 * 1024 * 1024))
                if not parts.path.startswith("/verdict/"):
                    self._answer(404, "text/plain", b"not here\n")
                    return
                name = parts.path.removeprefix("/verdict/")
                run = parse_qs(parts.query).get("run", [""])[0]
                try:
                    sent = json.loads(data)
                except ValueError:
                    self._answer(400, "text/plain", b"not JSON\n")
                    return
                with site._arrived:
                    site.verdicts[(name, run)] = sent
                    site._arrived.notify_all()
                self._answer(204, "text/plain", b"")

        return _Handler

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str, run: str = "") -> str:
        return f"{self.base}/detect/{name}" + (f"?run={run}" if run else "")

    def wait(self, name: str, run: str, timeout: float) -> dict[str, Any] | None:
        """The verdict ``name``'s page POSTed for ``run``, or None when none came in time."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while (name, run) not in self.verdicts:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._arrived.wait(left)
            return self.verdicts[(name, run)]

    def headers_of(self, target: str) -> list[tuple[str, str]] | None:
        """The headers of the first GET whose path and query start with ``target``, in the
        order they were sent."""
        with self._arrived:
            return next((sent for got, sent in self.requests if got.startswith(target)), None)

    def start(self) -> DetectorSite:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
