"""The dashboard's jobs pages: the account's jobs with their progress, one job's pages with
their results, and a job's Cancel button.

They join the dashboard's Klein app as its other pages do (``service.dashboard.app.Dashboard``
derives from :class:`JobViews`). A job of another account is a 404, as in the API. The pages need
no script: a job's progress is a ``<progress>`` element, a result's JSON a ``<details>``, and a
page of an unfinished job reloads itself with a ``<meta http-equiv="refresh">``.
"""

from __future__ import annotations

from twisted.web.server import Request

from service.dashboard.entry import DashboardEntry
from service.dashboard.forms import page_number
from service.dashboard.gate import args_of, redirect
from service.dashboard.jobs import job_of, jobs_page, results_page, stored_result
from service.dashboard.pages import MOUNT
from service.jobs import batch_store

# an unfinished job's pages reload themselves this often, in seconds
REFRESH_SECONDS = 5
NO_SUCH_JOB = "There is no job with this id on your account. Your jobs are listed on the Jobs page."


class JobViews(DashboardEntry):
    app = DashboardEntry.app

    @app.route("/jobs", methods=["GET"])
    async def jobs_list(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        page = await self.database.run(jobs_page, session.account_id, page_number(args_of(request)))
        return self.pages.render(
            request,
            "jobs.html",
            session=session,
            section="jobs",
            page=page,
            refresh=REFRESH_SECONDS if any(job["active"] for job in page.rows) else None,
        )

    @app.route("/jobs/<job_id>", methods=["GET"])
    async def job_page(self, request: Request, job_id: str) -> bytes:
        session = await self.gate.signed_in(request)
        job = await self.database.run(job_of, session.account_id, job_id)
        if job is None:
            return self._error_page(request, 404, "No such job", NO_SUCH_JOB)
        page = await self.database.run(results_page, job["seq"], page_number(args_of(request)))
        return self.pages.render(
            request,
            "job.html",
            session=session,
            section="jobs",
            job=job,
            page=page,
            refresh=REFRESH_SECONDS if job["active"] else None,
        )

    @app.route("/jobs/<job_id>/results/<int:index>.json", methods=["GET"])
    async def job_result(self, request: Request, job_id: str, index: int) -> bytes:
        """One page's stored result, whole: what ``POST /scrape`` would have answered."""
        session = await self.gate.signed_in(request)
        job = await self.database.run(job_of, session.account_id, job_id)
        raw = None if job is None else await self.database.run(stored_result, job["seq"], index)
        if raw is None:
            return self._error_page(request, 404, "No such result", NO_SUCH_JOB)
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-store")
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        request.setHeader(b"Content-Security-Policy", b"default-src 'none'; sandbox")
        return raw.encode()

    @app.route("/jobs/<job_id>/cancel", methods=["POST"])
    async def cancel_job(self, request: Request, job_id: str) -> bytes:
        session, _ = await self.gate.signed_form(request)
        cancelled = await self.database.run(batch_store.cancel, session.account_id, job_id[:64])
        if cancelled is None:
            return self._error_page(request, 404, "No such job", NO_SUCH_JOB)
        # Post/Redirect/Get: the job's page shows it stopped
        return redirect(request, f"{MOUNT}/jobs/{cancelled['id']}")
