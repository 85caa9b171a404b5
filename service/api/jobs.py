"""``POST /batch``, ``/crawl`` and ``/map``, ``GET /jobs`` and ``/jobs/{id}``, ``DELETE
/jobs/{id}``: the jobs, through the operations every front calls (service.web.operations)."""

from __future__ import annotations

import orjson
from twisted.web.server import Request

from service.api.routes import ApiRoutes
from service.billing.idempotency import Answer, checked_key
from service.core.errors import NotFound
from service.web.http import api_key_of, query_of, read_json_body, render_json
from service.web.operations import MAX_BATCH_BODY_BYTES


class JobRoutes(ApiRoutes):
    app = ApiRoutes.app

    @app.route("/batch", methods=["POST"])
    async def batch(self, request: Request) -> bytes:
        batches = self.jobs.batches()
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request, MAX_BATCH_BODY_BYTES)
        options, urls = batches.parse(body)
        caller = await batches.caller(api_key_of(request))

        if key is None:
            return render_json(request, await self.jobs.create_batch(caller, options, urls), 202)

        async def answer() -> Answer:
            return 202, orjson.dumps(await self.jobs.create_batch(caller, options, urls))

        return await self._idempotent(request, caller.account_id, key, "batch", body, answer)

    @app.route("/crawl", methods=["POST"])
    async def crawl(self, request: Request) -> bytes:
        crawls = self.jobs.crawls()
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request)
        asked, options, url = crawls.parse(body)
        caller = await crawls.batches.caller(api_key_of(request))

        if key is None:
            accepted = await self.jobs.create_crawl(caller, asked, options, url)
            return render_json(request, accepted, 202)

        async def answer() -> Answer:
            return 202, orjson.dumps(await self.jobs.create_crawl(caller, asked, options, url))

        return await self._idempotent(request, caller.account_id, key, "crawl", body, answer)

    @app.route("/map", methods=["POST"])
    async def map(self, request: Request) -> bytes:
        crawls = self.jobs.crawls()
        asked = crawls.parse_map(read_json_body(request))
        caller = await crawls.batches.caller(api_key_of(request))
        return render_json(request, await crawls.map(caller, asked))

    @app.route("/jobs", methods=["GET"])
    async def jobs_listing(self, request: Request) -> bytes:
        found = await self.jobs.batches().listing(api_key_of(request), query_of(request))
        return render_json(request, found)

    @app.route("/jobs/<job_id>", methods=["GET"])
    async def job(self, request: Request, job_id: str) -> bytes:
        found = await self.jobs.batches().view(api_key_of(request), job_id, query_of(request))
        return render_json(request, found)

    @app.route("/jobs/<job_id>", methods=["DELETE"])
    async def cancel_job(self, request: Request, job_id: str) -> bytes:
        caller = await self.jobs.batches().caller(api_key_of(request), reading=True)
        found = await self.jobs.cancel(caller, job_id[:64])
        if found is None:
            raise NotFound("no such job")
        return render_json(request, found)
