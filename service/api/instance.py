"""What the instance tells about itself: ``GET /pricing``, ``/openapi.json``, ``/metrics`` (with
the operator's token, when one is set) and ``/healthz``."""

from __future__ import annotations

import hmac
from typing import Any

from twisted.web.server import Request

from service.api.routes import ApiRoutes
from service.core.errors import ServiceUnavailable, Unauthorized
from service.scrape.metrics import metrics_page
from service.web.http import bearer_token_of, render_json

METRICS_TOKEN_REQUIRED = "/metrics needs the operator's token: Authorization: Bearer <token>"


class InstanceRoutes(ApiRoutes):
    app = ApiRoutes.app

    # set by service.api.app.ScrapespyApp
    _prices: bytes
    _openapi: bytes
    _metrics_token: bytes

    @app.route("/pricing", methods=["GET"])
    def pricing(self, request: Request) -> bytes:
        request.setHeader(b"Content-Type", b"application/json")
        return self._prices

    @app.route("/openapi.json", methods=["GET"])
    def openapi(self, request: Request) -> bytes:
        request.setHeader(b"Content-Type", b"application/json")
        return self._openapi

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request: Request) -> bytes:
        if self._metrics_token and not hmac.compare_digest(
            bearer_token_of(request), self._metrics_token
        ):
            raise Unauthorized(METRICS_TOKEN_REQUIRED, headers={"WWW-Authenticate": "Bearer"})
        body, content_type = metrics_page()
        request.setHeader(b"Content-Type", content_type.encode())
        return body

    @app.route("/healthz", methods=["GET"])
    async def healthz(self, request: Request) -> bytes:
        """200 while the database answers and every queue has a running worker; else 503
        naming what is down (docs/operations.md, "During a database outage")."""
        down: list[str] = []
        try:
            await self.database.run(_ping)
        except ServiceUnavailable:
            down.append("the database is unavailable")
        for worker in self.workers:
            trouble = worker.trouble or ("it waits for the database" if down else None)
            if trouble is not None:
                down.append(f"{worker.what} is down: {trouble}")
        if down:
            raise ServiceUnavailable("; ".join(down))
        return render_json(request, {"status": "ok"})


def _ping(conn: Any) -> None:
    from sqlalchemy import text

    conn.execute(text("SELECT 1"))
