"""``POST /monitors``, ``GET /monitors`` and ``/monitors/{id}``, ``PATCH`` and ``DELETE
/monitors/{id}``, ``GET /monitors/{id}/checks``: scheduled monitors (service.jobs.monitors)."""

from __future__ import annotations

from twisted.web.server import Request

from service.api.routes import ApiRoutes
from service.core.errors import ServiceUnavailable
from service.jobs.monitors import Monitors
from service.web.http import api_key_of, query_of, read_json_body, render_json
from service.web.operations import NO_JOBS


class MonitorRoutes(ApiRoutes):
    app = ApiRoutes.app

    def _monitors(self) -> Monitors:
        if self.monitors is None:
            raise ServiceUnavailable(NO_JOBS)
        return self.monitors

    @app.route("/monitors", methods=["POST"])
    async def create_monitor(self, request: Request) -> bytes:
        monitors = self._monitors()
        body = read_json_body(request)
        caller = await self.jobs.batches().caller(api_key_of(request))
        return render_json(request, await monitors.create(caller, body), 201)

    @app.route("/monitors", methods=["GET"])
    async def monitors_listing(self, request: Request) -> bytes:
        monitors = self._monitors()
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        return render_json(request, await monitors.listing(caller, query_of(request)))

    @app.route("/monitors/<monitor_id>", methods=["GET"])
    async def monitor(self, request: Request, monitor_id: str) -> bytes:
        monitors = self._monitors()
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        return render_json(request, await monitors.view(caller, monitor_id))

    @app.route("/monitors/<monitor_id>", methods=["PATCH"])
    async def change_monitor(self, request: Request, monitor_id: str) -> bytes:
        monitors = self._monitors()
        body = read_json_body(request)
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        return render_json(request, await monitors.change(caller, monitor_id, body))

    @app.route("/monitors/<monitor_id>", methods=["DELETE"])
    async def delete_monitor(self, request: Request, monitor_id: str) -> bytes:
        monitors = self._monitors()
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        return render_json(request, await monitors.remove(caller, monitor_id))

    @app.route("/monitors/<monitor_id>/checks", methods=["GET"])
    async def monitor_checks(self, request: Request, monitor_id: str) -> bytes:
        monitors = self._monitors()
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        found = await monitors.checks(caller, monitor_id, query_of(request))
        return render_json(request, found)
