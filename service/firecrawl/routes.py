"""The routes of Firecrawl's API under ``/v1`` and ``/v2``.

``POST /v{1,2}/scrape`` is served by :meth:`FirecrawlApi.scrape`, which the site's root calls
directly (as it does native ``POST /scrape``, service.web.root); the other routes go through
this Klein app. Each route translates, calls the operation the native route calls
(service.web.operations, service.web.account) and translates the answer back.
The key comes from ``Authorization: Bearer spy_...`` (Firecrawl's) or ``X-API-Key``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
from twisted.internet.defer import CancelledError, Deferred
from twisted.web.server import Request

from service.billing import keys
from service.billing.idempotency import Answer, Idempotency, checked_key
from service.core.config import Config
from service.core.errors import ApiError, BadRequest, Conflict, NotFound
from service.core.reactor import running
from service.core.schemas import parse_json_object
from service.db import Database
from service.firecrawl import job_answers
from service.firecrawl import jobs as firecrawl_jobs
from service.firecrawl.ids import native_id, shown_id
from service.firecrawl.scrape import Version, document, failed, firecrawl_message, native_scrape
from service.firecrawl.search import firecrawl_answer, native_search
from service.jobs import outcomes
from service.jobs.answers import JobAccepted, MapResult
from service.jobs.batch_store import ACTIVE
from service.jobs.webhook_spec import reachable
from service.scrape.scraper import Scraper
from service.search.searcher import Searcher
from service.web import operations
from service.web.account import AccountReads
from service.web.http import (
    api_key_of,
    bearer_token_of,
    json_routes,
    query_of,
    read_json_body,
    render_json,
)
from service.web.operations import MAX_BATCH_BODY_BYTES, Jobs

VERSIONS: dict[bytes, Version] = {b"v1": 1, b"v2": 2}
# a job's path under /v{n}/ by its kind
JOB_PATHS = {"crawl": "crawl", "batch": "batch/scrape"}
ERRORS_LIMIT = 1000  # pages /crawl/{id}/errors lists
FIRECRAWL_PAGE_BYTES = 10 * 1024 * 1024  # a page of a job's documents, as Firecrawl bounds it


class MapTimedOut(ApiError):
    status = 408
    code = "map_timed_out"
    message = "the map found nothing within its timeout; it was not charged"


def key_of(request: Request) -> str | None:
    """The caller's key: Firecrawl's ``Authorization: Bearer``, or scrapespy's ``X-API-Key``."""
    token = bearer_token_of(request)
    if token:
        return token.decode("utf-8", "replace")
    return api_key_of(request)


def version_of(request: Request) -> Version:
    return VERSIONS[request.path.split(b"/", 2)[1]]


class FirecrawlApi:
    # errors: scrapespy's JSON body; the SDKs map the status to their exceptions
    app = json_routes()

    def __init__(
        self,
        scraper: Scraper,
        config: Config,
        database: Database,
        reads: AccountReads,
        jobs: Jobs,
        searcher: Searcher | None = None,
    ) -> None:
        self.scraper = scraper
        self.searcher = searcher or Searcher(scraper, None)
        self.config = config
        self.database = database
        self.reads = reads
        self.jobs = jobs
        self.idempotency = Idempotency(database)

    def resource(self) -> Any:
        return self.app.resource()

    # scrape ------------------------------------------------------------------------------------

    async def scrape(self, request: Request) -> bytes:
        """``POST /v{1,2}/scrape``: the native scrape of the translated request. A scrape that
        failed at the target is a 200 with ``success: false``, its document and its error."""
        version = version_of(request)
        data = parse_json_object(read_json_body(request))
        native = native_scrape(data, version)
        try:
            result = await operations.scrape(
                self.scraper, request, key_of(request), orjson.dumps(native)
            )
        except BadRequest as error:  # a native validation message: Firecrawl's field names
            raise BadRequest(firecrawl_message(error.message)) from None
        doc = document(result, data, version)
        if failed(result):
            body = {"success": False, "error": doc["metadata"].get("error"), "data": doc}
            return render_json(request, body)
        return render_json(request, {"success": True, "data": doc})

    @app.route("/<any(v1,v2):version>/scrape", methods=["POST"])
    async def _scrape_route(self, request: Request, version: str) -> bytes:
        return await self.scrape(request)

    @app.route("/<any(v1,v2):version>/search", methods=["POST"])
    async def search(self, request: Request, version: str) -> bytes:
        """Firecrawl's search: the native search of the translated request, and back."""
        data = parse_json_object(read_json_body(request))
        native, _ = native_search(data, version_of(request))
        try:
            answer = await operations.search(
                self.searcher, request, key_of(request), orjson.dumps(native)
            )
        except BadRequest as error:
            raise BadRequest(firecrawl_message(error.message)) from None
        sources = native.get("sources", ["web"])
        body = firecrawl_answer(answer, data, sources, version_of(request))
        return render_json(request, body)

    # refused: what Firecrawl offers and this server does not -----------------------------------

    # Firecrawl's endpoints this server does not offer (the SDKs' paths): each a 400 naming it
    REFUSED = ", ".join(
        f'"{feature}"'
        for feature in (
            "extract",
            "deep-research",
            "llmstxt",
            "agent",
            "research",
            "browser",
            "parse",
            "monitor",
            "feedback",
        )
    )
    ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE"]

    @app.route(f"/<any(v1,v2):version>/<any({REFUSED}):feature>", methods=ANY_METHOD)
    @app.route(f"/<any(v1,v2):version>/<any({REFUSED}):feature>/<path:rest>", methods=ANY_METHOD)
    def _refused(self, request: Request, version: str, feature: str, rest: str = "") -> bytes:
        raise BadRequest(f"/{version}/{feature} is not offered by this server")

    @app.route("/<any(v1,v2):version>/scrape/<job>/interact", methods=ANY_METHOD)
    def _refused_interact(self, request: Request, version: str, job: str) -> bytes:
        raise BadRequest(f"/{version}/scrape/{{id}}/interact is not offered by this server")

    # jobs: crawl, batch scrape, map (service.firecrawl.jobs) -----------------------------------

    def _accepted(self, request: Request, made: JobAccepted, kind: str) -> dict[str, Any]:
        version = version_of(request)
        job_id = shown_id(made["id"])
        url = f"{self.config.public_url}/v{version}/{JOB_PATHS[kind]}/{job_id}"
        return {"success": True, "id": job_id, "url": url}

    @app.route("/<any(v1,v2):version>/crawl", methods=["POST"])
    async def crawl(self, request: Request, version: str) -> bytes:
        crawls = self.jobs.crawls()
        raw = read_json_body(request)
        body, shown = firecrawl_jobs.native_crawl(
            parse_json_object(raw), version_of(request), self.config
        )
        webhook = body.pop("webhook", None)  # Firecrawl's flavour: the native body has no such
        try:
            asked, options, url = crawls.parse(orjson.dumps(body))
        except BadRequest as exc:
            raise firecrawl_jobs.told_by_firecrawl_names(exc) from None
        if webhook is not None:
            options["webhook"] = reachable(webhook, self.config)
        caller = await crawls.batches.caller(key_of(request))

        async def made() -> dict[str, Any]:
            job = await self.jobs.create_crawl(
                caller, asked, {**options, "firecrawl": shown}, url, paid_ahead=True
            )
            return self._accepted(request, job, "crawl")

        return await self._once(request, caller, "crawl", raw, made)

    @app.route("/<any(v1,v2):version>/batch/scrape", methods=["POST"])
    async def batch(self, request: Request, version: str) -> bytes:
        batches = self.jobs.batches()
        raw = read_json_body(request, MAX_BATCH_BODY_BYTES)
        body, shown, left_out = firecrawl_jobs.native_batch(
            parse_json_object(raw), version_of(request)
        )
        webhook = body.pop("webhook", None)
        options, urls = batches.parse(orjson.dumps(body))
        if webhook is not None:
            options["webhook"] = reachable(webhook, self.config)
        caller = await batches.caller(key_of(request))

        async def made() -> dict[str, Any]:
            job = await self.jobs.create_batch(
                caller, {**options, "firecrawl": shown}, urls, paid_ahead=True
            )
            answer = self._accepted(request, job, "batch")
            if left_out is not None:  # ignoreInvalidURLs: the list, even when empty
                answer["invalidURLs"] = left_out
            return answer

        return await self._once(request, caller, "batch/scrape", raw, made)

    async def _once(
        self,
        request: Request,
        caller: keys.Caller,
        what: str,
        body: bytes,
        made: Callable[[], Awaitable[dict[str, Any]]],
    ) -> bytes:
        """The job made, once per idempotency key (Firecrawl's ``x-idempotency-key``, or
        scrapespy's ``Idempotency-Key``): a call again with the key answers the first call's
        answer (service.billing.idempotency), and makes no job."""
        key = checked_key(
            request.getHeader(b"X-Idempotency-Key") or request.getHeader(b"Idempotency-Key")
        )
        if key is None:
            return render_json(request, await made())

        async def answer() -> Answer:
            return 200, orjson.dumps(await made())

        endpoint = f"v{version_of(request)}/{what}"
        payload, _ = await operations.answered_once(
            self.idempotency, request, caller.account_id, key, endpoint, body, answer
        )
        return payload

    @app.route("/<any(v1,v2):version>/map", methods=["POST"])
    async def map(self, request: Request, version: str) -> bytes:
        crawls = self.jobs.crawls()
        data = parse_json_object(read_json_body(request))
        body, ask = firecrawl_jobs.native_map(data, version_of(request))
        try:
            asked = crawls.parse_map(orjson.dumps(body))
        except BadRequest as exc:
            raise firecrawl_jobs.told_by_firecrawl_names(exc) from None
        caller = await crawls.batches.caller(key_of(request))
        found = await self._map_within(crawls.map(caller, asked), ask.seconds)
        answer = firecrawl_jobs.map_answer(ask(found["urls"]), found["error"], version_of(request))
        return render_json(request, answer)

    @staticmethod
    async def _map_within(mapping: Coroutine[Any, Any, MapResult], seconds: float | None) -> Any:
        """The map's answer; past ``seconds``, its fetches are cancelled and it answers what
        it found by then (charged as any map that found some), or a 408 when that is nothing
        (unbilled)."""
        found = Deferred.fromCoroutine(mapping)
        if seconds is None:
            return await found
        timed_out: list[float] = []

        def past(value: Any, timeout: float) -> Any:
            timed_out.append(timeout)
            return value

        found.addTimeout(seconds, running(), onTimeoutCancel=past)
        try:
            result = await found
        except CancelledError:
            raise MapTimedOut() from None
        if timed_out and not result["urls"]:
            raise MapTimedOut()
        return result

    @app.route("/<any(v1,v2):version>/crawl/active", methods=["GET"])
    async def active_crawls(self, request: Request, version: str) -> bytes:
        caller = await self.jobs.batches().caller(key_of(request), reading=True)
        found = await self.database.run(outcomes.active, caller.account_id, "crawl")
        return render_json(request, job_answers.active_answer(found, str(caller.account_id)))

    async def _status(self, request: Request, job_id: str, kind: str) -> bytes:
        caller = await self.jobs.batches().caller(key_of(request), reading=True)
        query = query_of(request)
        after = _number(query.get(b"cursor"), "cursor", -1)
        limit = _number(query.get(b"limit"), "limit", self.config.firecrawl_page_documents)
        found = await self.database.run(
            outcomes.scraped,
            caller.account_id,
            native_id(job_id),
            kind,
            after,
            max(1, min(limit, self.config.firecrawl_page_documents)),
            FIRECRAWL_PAGE_BYTES,
            True,  # a target's error page is a document (service.firecrawl.scrape)
        )
        if found is None:
            raise NotFound("Job not found")
        version = version_of(request)
        last = found.results[-1][0] if found.results else after
        unfinished = found.summary["status"] in ACTIVE
        next_url = None
        if found.more or unfinished:  # a running job's next page may still come: its cursor
            shown = shown_id(native_id(job_id))
            base = f"{self.config.public_url}/v{version}/{JOB_PATHS[kind]}/{shown}"
            next_url = f"{base}?cursor={last}"
        days = self.config.job_retention_days
        answer = job_answers.status_page(found, version, next_url, days)
        return render_json(request, answer)

    async def _cancel(self, request: Request, job_id: str, kind: str) -> bytes:
        caller = await self.jobs.batches().caller(key_of(request), reading=True)
        public_id = native_id(job_id)
        found = await self.database.run(outcomes.kind_of, caller.account_id, public_id)
        if found != kind:
            raise NotFound("Job not found")
        summary = await self.jobs.cancel(caller, public_id)
        if summary is None:  # purged meanwhile
            raise NotFound("Job not found")
        if summary["status"] != "cancelled":
            status = job_answers.STATUSES[summary["status"]]
            raise Conflict(f"the job already finished: {status}")
        return render_json(request, {"success": True, "status": "cancelled"})

    async def _errors(self, request: Request, job_id: str, kind: str) -> bytes:
        caller = await self.jobs.batches().caller(key_of(request), reading=True)
        public_id = native_id(job_id)
        found = await self.database.run(
            outcomes.unscraped, caller.account_id, public_id, kind, ERRORS_LIMIT, False
        )
        if found is None:
            raise NotFound("Job not found")
        return render_json(request, job_answers.errors_answer(public_id, found))

    @app.route("/<any(v1,v2):version>/crawl/<job_id>", methods=["GET"])
    async def crawl_status(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._status(request, job_id, "crawl")

    @app.route("/<any(v1,v2):version>/crawl/<job_id>", methods=["DELETE"])
    async def crawl_cancel(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._cancel(request, job_id, "crawl")

    @app.route("/<any(v1,v2):version>/crawl/<job_id>/errors", methods=["GET"])
    async def crawl_errors(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._errors(request, job_id, "crawl")

    @app.route("/<any(v1,v2):version>/batch/scrape/<job_id>", methods=["GET"])
    async def batch_status(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._status(request, job_id, "batch")

    @app.route("/<any(v1,v2):version>/batch/scrape/<job_id>", methods=["DELETE"])
    async def batch_cancel(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._cancel(request, job_id, "batch")

    @app.route("/<any(v1,v2):version>/batch/scrape/<job_id>/errors", methods=["GET"])
    async def batch_errors(self, request: Request, version: str, job_id: str) -> bytes:
        return await self._errors(request, job_id, "batch")

    # usage ---------------------------------------------------------------------------------

    @app.route("/<any(v1,v2):version>/team/credit-usage", methods=["GET"])
    async def credit_usage(self, request: Request, version: str) -> bytes:
        """The balance; v1's SDK reads snake_case names, Firecrawl's server writes camelCase."""
        figures = await self.reads.account(key_of(request), {})
        usage: dict[str, Any] = {"remainingCredits": figures["balance"]}
        if version == "v1":
            usage["remaining_credits"] = figures["balance"]
        return render_json(request, {"success": True, "data": usage})

    @app.route("/<any(v1,v2):version>/team/token-usage", methods=["GET"])
    async def token_usage(self, request: Request, version: str) -> bytes:
        """scrapespy sells no LLM tokens: an account has none, honestly."""
        await self.reads.account(key_of(request), {})
        usage: dict[str, Any] = {"remainingTokens": 0}
        if version == "v1":
            usage["remaining_tokens"] = 0
        return render_json(request, {"success": True, "data": usage})


def _number(raw: list[bytes] | None, name: str, default: int) -> int:
    if not raw:
        return default
    text = raw[0].decode("ascii", "replace")
    if not text.lstrip("-").isdigit() or len(text) > 18:
        raise BadRequest(f"invalid request: {name!r}: must be a whole number")
    return int(text)


def is_firecrawl(path: bytes) -> bool:
    return path.startswith((b"/v1/", b"/v2/"))
