"""A local stand-in for an OpenAI-compatible chat-completions API with structured outputs.

``ModelStandin`` is a real HTTP server on 127.0.0.1 answering ``POST /v1/chat/completions`` as
OpenAI's API (and vLLM's, Ollama's) does: a ``chat.completion`` object with ``choices`` and
``usage``, or its error body with the status. It records every call (the body and the
``Authorization`` header) and answers from a script: each queued :class:`Reply` is used once,
then answers are made from the request's ``response_format`` schema (a value of the right type
for each property) or, without one, a summary line. Token counts are the request's and the
answer's characters divided by 4, so a test can compute what they cost.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "sk-standin-operator-key-7f3a"
SUMMARY = "A page about things, summarized by the stand-in."


@dataclass
class Reply:
    """One scripted answer: ``content`` (a string, sent as is) or ``status`` with an error."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0


@dataclass
class Call:
    body: dict[str, Any]
    authorization: str

    @property
    def text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


def value_for(schema: dict[str, Any]) -> Any:
    """A value of the shape ``schema`` declares (objects, arrays, the scalar types)."""
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if "enum" in schema:
        return schema["enum"][0]
    match kind:
        case "object":
            return {k: value_for(v) for k, v in schema.get("properties", {}).items()}
        case "array":
            return [value_for(schema.get("items", {"type": "string"}))]
        case "integer":
            return 1
        case "number":
            return 1.5
        case "boolean":
            return True
        case "null":
            return None
    return "stand-in"


def tokens(text: str) -> int:
    return len(text) // 4


@dataclass
class ModelStandin:
    calls: list[Call] = field(default_factory=list)
    script: deque[Reply] = field(default_factory=deque)
    port: int = 0

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ModelStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> Reply:
        if self.script:
            return self.script.popleft()
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if schema is not None:
            return Reply(json.dumps(value_for(schema)))
        return Reply(SUMMARY)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                call = Call(body, self.headers.get("Authorization", ""))
                standin.calls.append(call)
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                reply = standin.answer(body)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    error = {"message": "Rate limit reached", "type": "rate_limit_exceeded"}
                    return self._send(reply.status, {"error": error})
                content = reply.content or ""
                prompt, completion = tokens(call.text), tokens(content) + 1
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(standin.calls)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out
                    pass

        return Handler
