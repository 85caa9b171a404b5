"""The dashboard's monitors page: the account's monitors with their last checks and the diff of
their last change, and the buttons that pause, resume and delete one.

It joins the dashboard's Klein app as the jobs pages do (``service.dashboard.app.Dashboard``
derives from :class:`MonitorViews`); the rows are read and changed by the API's own functions
(service.jobs.monitor_store), so a monitor of another account is a 404 here too.
"""

from __future__ import annotations

from typing import Any

from twisted.web.server import Request

from service.dashboard.entry import DashboardEntry
from service.dashboard.gate import redirect
from service.dashboard.pages import MOUNT
from service.jobs import monitor_store
from service.jobs.monitor_spec import clock_now

NO_SUCH_MONITOR = (
    "There is no monitor with this id on your account. Your monitors are listed on the "
    "Monitors page."
)
SHOWN = 100  # monitors on the page (the API pages through more)


class MonitorViews(DashboardEntry):
    app = DashboardEntry.app

    @app.route("/monitors", methods=["GET"])
    async def monitors_list(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        found = await self.database.run(monitor_store.listing, session.account_id, None, SHOWN)
        return self.pages.render(
            request,
            "monitors.html",
            session=session,
            section="monitors",
            monitors=found["items"],
        )

    @app.route("/monitors/<monitor_id>/<action>", methods=["POST"])
    async def change_monitor(self, request: Request, monitor_id: str, action: str) -> bytes:
        session, _ = await self.gate.signed_form(request)
        done: Any
        if action == "delete":
            done = await self.database.run(monitor_store.remove, session.account_id, monitor_id)
        elif action in ("pause", "resume"):
            status = "paused" if action == "pause" else "active"
            done = await self.database.run(
                monitor_store.change,
                session.account_id,
                monitor_id,
                {"status": status},
                clock_now(self.config),
            )
        else:
            done = None
        if not done:
            return self._error_page(request, 404, "No such monitor", NO_SUCH_MONITOR)
        # Post/Redirect/Get: the list shows the change
        return redirect(request, f"{MOUNT}/monitors")
