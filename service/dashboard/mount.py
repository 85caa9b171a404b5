"""Where the dashboard sits on the site: ``/dashboard`` and below it, and ``/``, which sends a
visitor there. The paths around the mount answer the API's JSON errors (a 405 for ``POST /``);
the dashboard's own pages answer HTML ones (service.dashboard.entry)."""

from __future__ import annotations

from typing import Any

from twisted.web.server import Request

from service.dashboard.app import Dashboard
from service.dashboard.pages import MOUNT
from service.web.http import json_routes
from service.web.root import routed_path


def claims(request: Request) -> bool:
    """Whether the request is the dashboard's: ``/``, ``/dashboard`` and below it."""
    path = routed_path(request)
    return path in (b"/", MOUNT.encode()) or path.startswith(MOUNT.encode() + b"/")


class DashboardMount:
    app = json_routes()

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def resource(self) -> Any:
        return self.app.resource()

    @app.route("/", methods=["GET"])
    def home(self, request: Request) -> bytes:
        request.setResponseCode(302)
        request.setHeader(b"Location", MOUNT.encode())
        return b""

    @app.route(f"{MOUNT}/", methods=["GET"])
    def dashboard_slash(self, request: Request) -> bytes:
        request.setResponseCode(301)
        request.setHeader(b"Location", MOUNT.encode())
        return b""

    @app.route(MOUNT, branch=True)
    def dashboard_pages(self, request: Request) -> Any:
        return self.dashboard.resource_for(request)
