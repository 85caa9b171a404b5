"""``GET /account``, ``/usage``, ``/ledger`` and ``/sessions``, ``DELETE /sessions/{id}``: what a
key's owner reads of their account (service.web.account), as JSON."""

from __future__ import annotations

from twisted.web.server import Request

from service.api.routes import ApiRoutes
from service.web.http import api_key_of, query_of, render_json


class ReadRoutes(ApiRoutes):
    app = ApiRoutes.app

    @app.route("/sessions", methods=["GET"])
    async def sessions(self, request: Request) -> bytes:
        found = await self.reads.sessions(api_key_of(request), query_of(request))
        return render_json(request, found)

    @app.route("/sessions/<session_id>", methods=["DELETE"])
    async def end_session(self, request: Request, session_id: str) -> bytes:
        found = await self.reads.end_session(api_key_of(request), session_id)
        return render_json(request, found)

    @app.route("/account", methods=["GET"])
    async def account(self, request: Request) -> bytes:
        found = await self.reads.account(api_key_of(request), query_of(request))
        return render_json(request, found)

    @app.route("/usage", methods=["GET"])
    async def usage(self, request: Request) -> bytes:
        page = await self.reads.usage(api_key_of(request), query_of(request))
        return render_json(request, page)

    @app.route("/ledger", methods=["GET"])
    async def ledger(self, request: Request) -> bytes:
        page = await self.reads.ledger(api_key_of(request), query_of(request))
        return render_json(request, page)
