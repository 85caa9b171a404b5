"""Real HTTP servers on 127.0.0.1 for the end-to-end tests: a target site that counts its hits."""

from __future__ import annotations

import html
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

ARTICLE = """<!doctype html>
<html><head>
<meta charset="utf-8">
<title>  The   Article  </title>
<meta name="description" content="An article for tests">
<meta property="og:title" content="OG Article">
<base href="/docs/">
<style>.hidden { display: none }</style>
<script>var secret = "script text must not appear";</script>
</head><body>
<h1>Main heading</h1>
<h2>First section</h2><h2>Second section</h2>
<h3>Detail</h3>
<p class="lead">Lead paragraph with <b>bold</b> text.</p>
<p>Second paragraph.</p>
<a href="page2.html">Relative link</a>
<a href="/root">Root link</a>
<a href="https://example.org/x">Absolute link</a>
<a href="javascript:alert(1)">JS link</a>
<img src="img/a.png"><img data-src="/lazy.png">
<ul id="items"><li data-id="1">One</li><li data-id="2">Two</li></ul>
</body></html>
"""

JS_ONLY = """<!doctype html>
<html><head><title>Loading</title></head><body>
<div id="app"></div>
<script>
document.title = "Rendered by JS";
document.getElementById("app").innerHTML =
  "<h1>Client side</h1><p class='made'>made by javascript</p><a href='/after'>after</a>";
</script>
</body></html>
"""

ROBOTS = "User-agent: *\nDisallow: /private/\n"

Handler = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, Any], bytes]]


def echo_request(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any], bytes]:
    """A page that shows what it was sent: the User-Agent, an ``X-Greeting`` header and the
    Cookie header ("none" when absent), each in its own ``<p>``; it also sets a cookie of its own
    (``visited=1``), which no later scrape may carry. Register it with
    ``site.routes["/echo"] = echo_request``."""
    sent = handler.headers

    def shown(name: str) -> str:
        return html.escape(sent.get(name) or "none")

    body = (
        "<html><head><title>Echo</title></head><body>"
        f'<p id="ua">{shown("User-Agent")}</p>'
        f'<p id="greeting">{shown("X-Greeting")}</p>'
        f'<p id="cookie">{shown("Cookie")}</p>'
        "</body></html>"
    )
    headers = {"Content-Type": "text/html; charset=utf-8", "Set-Cookie": "visited=1; Path=/"}
    return 200, headers, body.encode()


class TargetSite:
    """A threaded HTTP server with fixed routes; ``hits`` counts every request by path."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.routes: dict[str, Handler] = {}
        self._lock = threading.Lock()
        site = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with site._lock:
                    site.hits[path] += 1
                route = site.routes.get(path)
                if route is None:
                    status, headers, body = (
                        404,
                        {"Content-Type": "text/html"},
                        (
                            b"<html><head><title>Not here</title></head><body><h1>404</h1>"
                            b"<p>No such page.</p></body></html>"
                        ),
                    )
                else:
                    status, headers, body = route(self)
                try:
                    # no default Server header: a route may need to pose as a vendor's server
                    self.send_response_only(status)
                    self.send_header("Date", self.date_time_string())
                    for name, value in headers.items():
                        for one in value if isinstance(value, list) else [value]:
                            self.send_header(name, one)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.add_defaults()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def page(self, path: str, body: str | bytes, status: int = 200, **headers: Any) -> None:
        data = body.encode() if isinstance(body, str) else body
        lowered = {name.lower() for name in headers}
        default = {} if "content-type" in lowered else {"Content-Type": "text/html; charset=utf-8"}
        all_headers = {**default, **headers}
        self.routes[path] = lambda _h: (status, all_headers, data)

    def add_defaults(self) -> None:
        self.page("/robots.txt", ROBOTS, **{"Content-Type": "text/plain"})
        self.page("/article", ARTICLE)
        self.page("/js-only", JS_ONLY)
        self.page("/private/secret", "<html><title>secret</title></html>")
        self.page(
            "/status/404", "<html><title>Gone</title><body><h1>Missing</h1></body></html>", 404
        )
        self.page("/status/500", "<html><title>Broken</title></html>", 500)
        self.routes["/redirect"] = lambda _h: (302, {"Location": "/article"}, b"")

        def slow(_h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            time.sleep(4)
            return 200, {"Content-Type": "text/html"}, b"<html><title>slow</title></html>"

        self.routes["/slow"] = slow

    def start(self) -> TargetSite:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def count(self, path: str) -> int:
        with self._lock:
            return self.hits[path]
