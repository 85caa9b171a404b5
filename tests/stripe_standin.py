"""A local stand-in for Stripe's API, and Stripe's webhook signing scheme.

``StripeStandin`` is a real HTTP server on 127.0.0.1 answering ``POST /v1/checkout/sessions``
the way Stripe does: form-encoded parameters in (``line_items[0][price_data][unit_amount]=750``,
as the official library sends them), a ``checkout.session`` object out. It records every call
and can be told to fail with Stripe's error bodies. ``sign`` makes a ``Stripe-Signature`` header
exactly as Stripe does (``t=<unix time>,v1=<HMAC-SHA256(secret, "<t>.<body>")>``), written here
from the scheme rather than borrowed from the library under test.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

API_KEY = "sk_test_x"
WEBHOOK_SECRET = "whsec_test"

ERRORS: dict[int, dict[str, Any]] = {
    401: {
        "error": {
            "message": "Invalid API Key provided: sk_test_***",
            "type": "invalid_request_error",
        }
    },
    500: {"error": {"message": "An unknown error occurred", "type": "api_error"}},
}


def decode_form(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Stripe's bracketed form keys as nested objects: ``a[0][b]=1`` is ``{"a": [{"b": "1"}]}``."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        parts = key.replace("]", "").split("[")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def listify(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        items = {k: listify(v) for k, v in node.items()}
        if items and all(k.isdigit() for k in items):
            return [items[k] for k in sorted(items, key=int)]
        return items

    return listify(root)


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, str]
    params: dict[str, Any]


@dataclass
class StripeStandin:
    api_key: str = API_KEY
    calls: list[Call] = field(default_factory=list)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_with: int | None = None
    _server: ThreadingHTTPServer | None = None

    def start(self) -> StripeStandin:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                pairs = parse_qsl(raw, keep_blank_values=True)
                call = Call(
                    "POST", self.path, dict(self.headers.items()), dict(pairs), decode_form(pairs)
                )
                standin.calls.append(call)
                status, body = standin.answer(call)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Request-Id", "req_" + secrets.token_hex(7))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, call: Call) -> tuple[int, dict[str, Any]]:
        if call.headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, ERRORS[401]
        if self.fail_with is not None:
            return self.fail_with, ERRORS[self.fail_with]
        if call.path != "/v1/checkout/sessions":
            unknown = {"message": "Unrecognized request URL", "type": "invalid_request_error"}
            return 404, {"error": unknown}
        params = call.params
        items = params.get("line_items", [])
        amount_total = sum(
            int(item["price_data"]["unit_amount"]) * int(item.get("quantity", 1)) for item in items
        )
        session_id = "cs_test_" + secrets.token_hex(24)
        session = {
            "id": session_id,
            "object": "checkout.session",
            "amount_subtotal": amount_total,
            "amount_total": amount_total,
            "cancel_url": params.get("cancel_url"),
            "client_reference_id": params.get("client_reference_id"),
            "created": int(time.time()),
            "currency": items[0]["price_data"]["currency"] if items else None,
            "livemode": False,
            "metadata": params.get("metadata", {}),
            "mode": params.get("mode"),
            "payment_status": "unpaid",
            "status": "open",
            "success_url": params.get("success_url"),
            "url": f"https://checkout.stripe.com/c/pay/{session_id}",
        }
        self.sessions[session_id] = session
        return 200, session


def event(event_type: str, session: dict[str, Any], **changes: Any) -> bytes:
    """A webhook body as Stripe sends it, about ``session`` with ``changes`` applied."""
    body = {
        "id": "evt_" + secrets.token_hex(12),
        "object": "event",
        "api_version": "2025-01-27.acacia",
        "created": int(time.time()),
        "livemode": False,
        "type": event_type,
        "data": {"object": {**session, **changes}},
    }
    return json.dumps(body).encode()


def sign(payload: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> str:
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"
