"""Where the reference sits on the site: ``GET /docs``, ``/docs/`` (sent to ``/docs``) and its
assets under ``/docs/static/``; any other path below ``/docs`` is the API's JSON 404."""

from __future__ import annotations

from typing import Any

from twisted.web.server import Request

from service.core.errors import NotFound
from service.reference.page import MOUNT, Reference
from service.web.http import json_routes, query_of
from service.web.root import routed_path


def claims(request: Request) -> bool:
    """Whether the request is the reference's: ``/docs`` and below it."""
    path = routed_path(request)
    return path == MOUNT.encode() or path.startswith(MOUNT.encode() + b"/")


class ReferenceRoutes:
    app = json_routes()

    def __init__(self, reference: Reference) -> None:
        self.reference = reference

    def resource(self) -> Any:
        return self.app.resource()

    @app.route(MOUNT, methods=["GET"])
    def docs(self, request: Request) -> bytes:
        return self.reference.page(request)

    @app.route(f"{MOUNT}/", methods=["GET"])
    def docs_slash(self, request: Request) -> bytes:
        request.setResponseCode(301)
        request.setHeader(b"Location", MOUNT.encode())
        return b""

    @app.route(f"{MOUNT}/static/<name>", methods=["GET"])
    def docs_asset(self, request: Request, name: str) -> bytes:
        version = query_of(request).get(b"v", [b""])[0].decode("ascii", "replace")
        body = self.reference.asset(request, name, version)
        if body is None:
            raise NotFound()
        return body
