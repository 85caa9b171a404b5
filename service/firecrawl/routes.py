"""The routes of Firecrawl's API under ``/v1`` and ``/v2``.

``POST /v{1,2}/scrape`` is served by :meth:`FirecrawlApi.scrape`, which the site's root calls
directly (as it does native ``POST /scrape``); the other routes go through this Klein app.
The key comes from ``Authorization: Bearer spy_...`` (Firecrawl's) or ``X-API-Key``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
from klein import Klein
from twisted.internet.defer import CancelledError, Deferred
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed as WerkzeugMethodNotAllowed
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.api.account import AccountReads
from service.api.http import (
    MAX_BODY_BYTES,
    api_key_of,
    bearer_token_of,
    query_of,
    read_json_body,
    render_bad_method,
    render_error,
    render_json,
    render_unexpected,
)
from service.api.site import request_id_of
from service.billing import keys, ledger
from service.billing.idempotency import Answer, Idempotency, checked_key
from service.billing.pricing import quote
from service.core.config import Config
from service.core.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    ServiceUnavailable,
    insufficient_credits,
)
from service.core.reactor import running
from service.core.schemas import ScrapeRequest, parse_json_object
from service.db import Database
from service.firecrawl import job_answers, jobs
from service.firecrawl.ids import native_id, shown_id
from service.firecrawl.scrape import Version, document, failed, firecrawl_message, native_scrape
from service.jobs import batch_store, outcomes
from service.jobs.answers import JobAccepted, MapResult
from service.jobs.batch_store import ACTIVE
from service.jobs.batches import MAX_URLS
from service.jobs.crawls import Crawls
from service.jobs.webhook_spec import reachable
from service.scrape.scraper import Scraper

VERSIONS: dict[bytes, Version] = {b"v1": 1, b"v2": 2}
# a job's path under /v{n}/ by its kind
JOB_PATHS = {"crawl": "crawl", "batch": "batch/scrape"}
ERRORS_LIMIT = 1000  # pages /crawl/{id}/errors lists
FIRECRAWL_PAGE_BYTES = 10 * 1024 * 1024  # a page of a job's documents, as Firecrawl bounds it
# a batch's URLs may each be as long as a scrape's (8 KiB), besides the options
MAX_BATCH_BODY_BYTES = MAX_URLS * 8 * 1024 + MAX_BODY_BYTES


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
    app = Klein()
    app.url_map.merge_slashes = False

    def __init__(
        self,
        scraper: Scraper,
        config: Config,
        database: Database,
        reads: AccountReads,
        crawls: Crawls | None = None,
    ) -> None:
        self.scraper = scraper
        self.config = config
        self.database = database
        self.reads = reads
        self.crawls = crawls
        self.idempotency = Idempotency(database)

    def resource(self) -> Any:
        return self.app.resource()

    # errors: scrapespy's body; the SDKs map the status to their exceptions --------------------

    @app.handle_errors(ApiError)
    def api_error(self, request: Request, failure: Any) -> bytes:
        return render_error(request, failure.value)

    @app.handle_errors(WerkzeugNotFound)
    def _not_found(self, request: Request, failure: Any) -> bytes:
        return render_error(request, NotFound())

    @app.handle_errors(WerkzeugMethodNotAllowed)
    def _bad_method(self, request: Request, failure: Any) -> bytes:
        return render_bad_method(request, failure)

    @app.handle_errors(Exception)
    def unexpected(self, request: Request, failure: Any) -> bytes:
        return render_unexpected(request, failure)

    # scrape ------------------------------------------------------------------------------------

    async def scrape(self, request: Request) -> bytes:
        """``POST /v{1,2}/scrape``: the native scrape of the translated request. A scrape that
        failed at the target is a 200 with ``success: false``, its document and its error."""
        version = version_of(request)
        data = parse_json_object(read_json_body(request))
        native = native_scrape(data, version)
        try:
            result, remaining = await self.scraper.answer(
                key_of(request), orjson.dumps(native), request_id=request_id_of(request)
            )
        except BadRequest as error:  # a native validation message: Firecrawl's field names
            raise BadRequest(firecrawl_message(error.message)) from None
        request.setHeader(b"X-Credits-Charged", b"%d" % result.credits_charged)
        if remaining is not None:
            request.setHeader(b"X-Credits-Remaining", b"%d" % remaining)
        doc = document(result, data, version)
        if failed(result):
            body = {"success": False, "error": doc["metadata"].get("error"), "data": doc}
            return render_json(request, body)
        return render_json(request, {"success": True, "data": doc})

    @app.route("/<any(v1,v2):version>/scrape", methods=["POST"])
    async def _scrape_route(self, request: Request, version: str) -> bytes:
        return await self.scrape(request)

    # refused: what Firecrawl offers and this server does not -----------------------------------

    # Firecrawl's endpoints this server does not offer (the SDKs' paths): each a 400 naming it
    REFUSED = ", ".join(
        f'"{feature}"'
        for feature in (
            "search",
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

    def _crawls(self) -> Crawls:
        if self.crawls is None:
            raise ServiceUnavailable("jobs are not available on this instance")
        return self.crawls

    async def _affordable(self, caller: keys.Caller, options: dict[str, Any]) -> None:
        """A 402 before anything is fetched when the balance cannot pay for one page, which
        the native job would find only at its first page (and after a crawl's sitemaps)."""
        defaults = ScrapeRequest.model_fields
        price = quote(
            self.config,
            options.get("engine", defaults["engine"].default),
            options.get("proxy_type", defaults["proxy_type"].default),
            caller,
            options.get("max_credits"),
            ((options.get("location") or {}).get("country") or "").lower() or None,
        ).hold
        available = await self.database.run(ledger.available, caller.account_id)
        if available < price:
            raise insufficient_credits(price, available)

    def _accepted(self, request: Request, made: JobAccepted, kind: str) -> dict[str, Any]:
        version = version_of(request)
        job_id = shown_id(made["id"])
        url = f"{self.config.public_url}/v{version}/{JOB_PATHS[kind]}/{job_id}"
        return {"success": True, "id": job_id, "url": url}

    @app.route("/<any(v1,v2):version>/crawl", methods=["POST"])
    async def crawl(self, request: Request, version: str) -> bytes:
        crawls = self._crawls()
        raw = read_json_body(request)
        body, shown = jobs.native_crawl(parse_json_object(raw), version_of(request), self.config)
        webhook = body.pop("webhook", None)  # Firecrawl's flavour: the native body has no such
        try:
            asked, options, url = crawls.parse(orjson.dumps(body))
        except BadRequest as exc:
            raise jobs.told_by_firecrawl_names(exc) from None
        if webhook is not None:
            options["webhook"] = reachable(webhook, self.config)
        caller = await crawls.batches.caller(key_of(request))

        async def made() -> dict[str, Any]:
            await self._affordable(caller, options)
            job = await crawls.create(caller, asked, {**options, "firecrawl": shown}, url)
            return self._accepted(request, job, "crawl")

        return await self._once(request, caller, "crawl", raw, made)

    @app.route("/<any(v1,v2):version>/batch/scrape", methods=["POST"])
    async def batch(self, request: Request, version: str) -> bytes:
        batches = self._crawls().batches
        raw = read_json_body(request, MAX_BATCH_BODY_BYTES)
        body, shown, left_out = jobs.native_batch(parse_json_object(raw), version_of(request))
        webhook = body.pop("webhook", None)
        options, urls = batches.parse(orjson.dumps(body))
        if webhook is not None:
            options["webhook"] = reachable(webhook, self.config)
        caller = await batches.caller(key_of(request))

        async def made() -> dict[str, Any]:
            await self._affordable(caller, options)
            job = await batches.create(caller, {**options, "firecrawl": shown}, urls)
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
        (status, payload), replayed = await self.idempotency.run(
            caller.account_id, key, endpoint, body, answer
        )
        if replayed:
            request.setHeader(b"Idempotent-Replayed", b"true")
        request.setResponseCode(status)
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-store")
        return payload

    @app.route("/<any(v1,v2):version>/map", methods=["POST"])
    async def map(self, request: Request, version: str) -> bytes:
        crawls = self._crawls()
        data = parse_json_object(read_json_body(request))
        body, ask = jobs.native_map(data, version_of(request))
        try:
            asked = crawls.parse_map(orjson.dumps(body))
        except BadRequest as exc:
            raise jobs.told_by_firecrawl_names(exc) from None
        caller = await crawls.batches.caller(key_of(request))
        found = await self._map_within(crawls.map(caller, asked), ask.seconds)
        answer = jobs.map_answer(ask(found["urls"]), found["error"], version_of(request))
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
        caller = await self._crawls().batches.caller(key_of(request), reading=True)
        found = await self.database.run(outcomes.active, caller.account_id, "crawl")
        return render_json(request, job_answers.active_answer(found, str(caller.account_id)))

    async def _status(self, request: Request, job_id: str, kind: str) -> bytes:
        caller = await self._crawls().batches.caller(key_of(request), reading=True)
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
        caller = await self._crawls().batches.caller(key_of(request), reading=True)
        public_id = native_id(job_id)
        found = await self.database.run(outcomes.kind_of, caller.account_id, public_id)
        if found != kind:
            raise NotFound("Job not found")
        summary = await self.database.run(batch_store.cancel, caller.account_id, public_id)
        if summary is None:  # purged meanwhile
            raise NotFound("Job not found")
        if summary["status"] != "cancelled":
            status = job_answers.STATUSES[summary["status"]]
            raise Conflict(f"the job already finished: {status}")
        return render_json(request, {"success": True, "status": "cancelled"})

    async def _errors(self, request: Request, job_id: str, kind: str) -> bytes:
        caller = await self._crawls().batches.caller(key_of(request), reading=True)
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
