"""Stand-ins for the search backends on 127.0.0.1: SearXNG's JSON API, Brave Search API and
Serper, answering as each documents it (the envelopes of tests/fixtures/search), with results
that point wherever a test says (usually the local target site).

A stand-in pages as its backend does (SearXNG: ``pageno``, ten a page; Brave: ``count`` and
``offset`` in pages; Serper: ``num`` and ``page``, capped at ``page_size``), checks its key,
records every call it was made (``calls``), and can be made to fail: ``mode`` ``down`` (a 502),
``slow`` (answers after ``delay`` seconds), ``html`` (a 200 HTML page, as SearXNG does when
its JSON format is off), ``garbage`` (JSON of another shape). ``delay`` also slows the ``ok``
answers when ``always_late`` (the benchmark's backend, which takes a real engine's time).
Shared by tests/ and bench/ (bench/search.py).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "search"
KEY = "sk-standin-3f9a7c2e"  # a key the service must send and never show


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text("utf-8"))


@dataclass
class Hit:
    url: str
    title: str = "A page"
    description: str = "about a page"


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, str]
    body: dict[str, Any] | None
    headers: dict[str, str]


@dataclass
class SearchStandIn:
    kind: str  # searxng, brave, serper
    hits: dict[str, list[Hit]] = field(default_factory=dict)  # by source
    page_size: int = 10
    mode: str = "ok"
    delay: float = 0.0
    always_late: bool = False
    calls: list[Call] = field(default_factory=list)

    def start(self) -> SearchStandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stand_in._answer(self, "GET")

            def do_POST(self) -> None:
                stand_in._answer(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """The service's settings that point it here."""
        if self.kind == "searxng":
            return {"SCRAPESPY_SEARCH_BACKEND": "searxng", "SCRAPESPY_SEARXNG_URL": self.base}
        name = self.kind.upper()
        return {
            "SCRAPESPY_SEARCH_BACKEND": self.kind,
            f"SCRAPESPY_{name}_API_KEY": KEY,
            f"SCRAPESPY_{name}_BASE_URL": self.base,
        }

    # answers -----------------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        split = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        self.calls.append(Call(method, split.path, params, body, dict(handler.headers.items())))
        if self.mode == "slow" or self.always_late:
            time.sleep(self.delay)
        status, ctype, payload = self._payload(method, split.path, params, body, handler)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", ctype)
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _payload(
        self, method: str, path: str, params: dict[str, str], body: Any, handler: Any
    ) -> tuple[int, str, bytes]:
        if self.mode == "down":
            return 502, "text/html", b"<html><body>502 Bad Gateway</body></html>"
        if self.mode == "html":
            return 200, "text/html", b"<!doctype html><html><title>SearXNG</title></html>"
        if self.mode == "garbage":
            return 200, "application/json", b'{"results": "not a list", "web": 7}'
        answer = getattr(self, f"_{self.kind}")(method, path, params, body, handler)
        if isinstance(answer, tuple):
            return answer
        return 200, "application/json", json.dumps(answer).encode()

    def _slice(self, source: str, start: int, count: int) -> list[Hit]:
        return self.hits.get(source, [])[start : start + count]

    def _searxng(self, method: str, path: str, params: dict[str, str], body: Any, _h: Any) -> Any:
        if path != "/search" or params.get("format") != "json":
            return 403, "text/html", b"<html>403 Forbidden</html>"
        source = {"general": "web", "news": "news", "images": "images"}[params["categories"]]
        answer = fixture(f"searxng_{params['categories']}")
        template = answer["results"][0]
        page = int(params.get("pageno", "1"))
        results = []
        for hit in self._slice(source, (page - 1) * self.page_size, self.page_size):
            one = copy.deepcopy(template)
            one.update(url=hit.url, title=hit.title, content=hit.description)
            if source == "images":
                one["img_src"] = hit.url + ".jpg"
            results.append(one)
        answer.update(query=params.get("q"), results=results)
        return answer

    def _brave(self, method: str, path: str, params: dict[str, str], body: Any, h: Any) -> Any:
        if h.headers.get("X-Subscription-Token") != KEY:
            return (
                401,
                "application/json",
                b'{"type": "ErrorResponse", "error": '
                b'{"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}}',
            )
        source = path.split("/")[3]  # /res/v1/<source>/search
        count = int(params.get("count", "20"))
        if source == "web":
            count = min(count, 20)
            start = int(params.get("offset", "0")) * count
        else:
            start = 0
        answer = fixture(f"brave_{source}")
        results_at = answer["web"] if source == "web" else answer
        template = results_at["results"][0]
        results = []
        for hit in self._slice(source, start, count):
            one = copy.deepcopy(template)
            one.update(
                url=hit.url, title=hit.title, description=f"<strong>{hit.description}</strong>"
            )
            if source == "images":
                one["properties"]["url"] = hit.url + ".jpg"
            results.append(one)
        results_at["results"] = results
        answer["query"]["original"] = params.get("q")
        return answer

    def _serper(self, method: str, path: str, params: dict[str, str], body: Any, h: Any) -> Any:
        if h.headers.get("X-API-KEY") != KEY:
            return 403, "application/json", b'{"message": "Unauthorized.", "statusCode": 403}'
        kind = {
            "/search": ("web", "search", "organic"),
            "/news": ("news", "news", "news"),
            "/images": ("images", "images", "images"),
        }[path]
        source, name, key = kind
        answer = fixture(f"serper_{name}")
        template = answer[key][0]
        num = min(int(body.get("num", 10)), self.page_size)
        page = int(body.get("page", 1))
        results = []
        for i, hit in enumerate(self._slice(source, (page - 1) * num, num)):
            one = copy.deepcopy(template)
            one.update(link=hit.url, title=hit.title, position=(page - 1) * num + i + 1)
            if "snippet" in one:
                one["snippet"] = hit.description
            if source == "images":
                one["imageUrl"] = hit.url + ".jpg"
            results.append(one)
        answer[key] = results
        answer["searchParameters"].update(q=body.get("q"), num=body.get("num"), page=page)
        return answer
