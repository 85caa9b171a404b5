"""The HTTP front: Klein routes that parse, call one business function, and render JSON.

Errors are mapped in one place; a caller never sees a traceback.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from klein import Klein
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request
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
    url_is_utf8,
)
from service.api.openapi import document
from service.api.site import request_id_of
from service.billing import ledger
from service.billing.idempotency import Answer, Idempotency, checked_key
from service.billing.payments.demo import demo_provider
from service.billing.payments.provider import NOT_CONFIGURED, PaymentProvider
from service.billing.payments.webhooks import StripeWebhooks
from service.billing.pricing import price_list
from service.core.config import Config
from service.core.errors import (
    ApiError,
    BadRequest,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
)
from service.core.schemas import BuyRequest, parse_json_object, validate
from service.db import Database
from service.firecrawl.routes import FirecrawlApi, is_firecrawl
from service.jobs.batches import MAX_URLS, Batches
from service.jobs.crawls import Crawls
from service.jobs.queue_worker import QueueWorker
from service.reference.page import Reference
from service.scrape.metrics import metrics_page
from service.scrape.scraper import Scraper

if TYPE_CHECKING:
    from service.dashboard.app import Dashboard
    from service.scrape.results import ScrapeResult

log = logging.getLogger(__name__)

# a batch's URLs may each be as long as a scrape's (8 KiB), besides the options
MAX_BATCH_BODY_BYTES = MAX_URLS * 8 * 1024 + MAX_BODY_BYTES
METRICS_TOKEN_REQUIRED = "/metrics needs the operator's token: Authorization: Bearer <token>"


class ScrapespyApp:
    app = Klein()
    # werkzeug answers "//" in a path with a redirect to a URL built from the Host header
    app.url_map.merge_slashes = False

    def __init__(
        self,
        config: Config,
        database: Database,
        scraper: Scraper,
        payments: PaymentProvider | None = None,
        dashboard: Dashboard | None = None,
        *,
        reads: AccountReads,
        batches: Batches | None = None,
        workers: Sequence[QueueWorker] = (),
    ):
        self.config = config
        self.database = database
        self.scraper = scraper
        self.reads = reads
        self.batches = batches
        self.workers = workers  # PostgreSQL: the queues' workers, which /healthz reports on
        self.crawls = Crawls(batches) if batches is not None else None
        self.idempotency = Idempotency(database)
        self.payments = payments
        self.dashboard = dashboard
        self.stripe_webhooks = (
            StripeWebhooks(config.stripe_webhook_secret, database)
            if config.stripe_webhook_secret
            else None
        )
        self._prices = orjson.dumps(price_list(config))
        self._openapi = orjson.dumps(
            document(config.public_url, config.countries, config.session_max_idle_seconds)
        )
        self.reference = Reference(config)
        self.firecrawl = FirecrawlApi(scraper, config, database, reads, self.crawls)
        self._metrics_token = config.metrics_token.encode()

    def resource(self) -> Any:
        return ScrapeFirst(self, self.app.resource(), self.firecrawl)

    # errors -----------------------------------------------------------------------------------

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

    # the API ----------------------------------------------------------------------------------

    @app.route("/scrape", methods=["POST"])
    async def scrape(self, request: Request) -> bytes:
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request)

        async def scraped() -> ScrapeResult:
            result, remaining = await self.scraper.answer(
                api_key_of(request), body, request_id=request_id_of(request)
            )
            request.setHeader(b"X-Credits-Charged", b"%d" % result.credits_charged)
            if remaining is not None:
                request.setHeader(b"X-Credits-Remaining", b"%d" % remaining)
            return result

        if key is None:
            return render_json(request, await scraped())

        async def answer() -> Answer:
            return 200, orjson.dumps(await scraped())

        caller = await self.scraper.authenticate(api_key_of(request))
        return await self._idempotent(request, caller.account_id, key, "scrape", body, answer)

    async def _idempotent(
        self,
        request: Request,
        account_id: int,
        key: str,
        endpoint: str,
        body: bytes,
        answer: Any,
    ) -> bytes:
        """The answer of the first call with ``key`` (service.billing.idempotency)."""
        (status, payload), replayed = await self.idempotency.run(
            account_id, key, endpoint, body, answer
        )
        if replayed:  # what this call cost: nothing (the body tells the first call's charge)
            request.setHeader(b"Idempotent-Replayed", b"true")
            if endpoint == "scrape":
                remaining = await self.database.run(ledger.balance, account_id)
                request.setHeader(b"X-Credits-Charged", b"0")
                request.setHeader(b"X-Credits-Remaining", b"%d" % remaining)
        request.setResponseCode(status)
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"no-store")
        return payload

    # jobs (service.jobs.batches) ------------------------------------------------------------------

    def _batches(self) -> Batches:
        if self.batches is None:
            raise ServiceUnavailable("jobs are not available on this instance")
        return self.batches

    @app.route("/batch", methods=["POST"])
    async def batch(self, request: Request) -> bytes:
        batches = self._batches()
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request, MAX_BATCH_BODY_BYTES)
        options, urls = batches.parse(body)
        caller = await batches.caller(api_key_of(request))

        if key is None:
            return render_json(request, await batches.create(caller, options, urls), 202)

        async def answer() -> Answer:
            return 202, orjson.dumps(await batches.create(caller, options, urls))

        return await self._idempotent(request, caller.account_id, key, "batch", body, answer)

    def _crawls(self) -> Crawls:
        if self.crawls is None:
            raise ServiceUnavailable("jobs are not available on this instance")
        return self.crawls

    @app.route("/crawl", methods=["POST"])
    async def crawl(self, request: Request) -> bytes:
        crawls = self._crawls()
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request)
        asked, options, url = crawls.parse(body)
        caller = await crawls.batches.caller(api_key_of(request))

        if key is None:
            return render_json(request, await crawls.create(caller, asked, options, url), 202)

        async def answer() -> Answer:
            return 202, orjson.dumps(await crawls.create(caller, asked, options, url))

        return await self._idempotent(request, caller.account_id, key, "crawl", body, answer)

    @app.route("/map", methods=["POST"])
    async def map(self, request: Request) -> bytes:
        crawls = self._crawls()
        asked = crawls.parse_map(read_json_body(request))
        caller = await crawls.batches.caller(api_key_of(request))
        return render_json(request, await crawls.map(caller, asked))

    @app.route("/jobs", methods=["GET"])
    async def jobs(self, request: Request) -> bytes:
        found = await self._batches().listing(api_key_of(request), query_of(request))
        return render_json(request, found)

    @app.route("/jobs/<job_id>", methods=["GET"])
    async def job(self, request: Request, job_id: str) -> bytes:
        found = await self._batches().view(api_key_of(request), job_id, query_of(request))
        return render_json(request, found)

    @app.route("/jobs/<job_id>", methods=["DELETE"])
    async def cancel_job(self, request: Request, job_id: str) -> bytes:
        found = await self._batches().cancel(api_key_of(request), job_id)
        return render_json(request, found)

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

    @app.route("/credits/buy", methods=["POST"])
    async def buy_credits(self, request: Request) -> bytes:
        order = validate(BuyRequest, parse_json_object(read_json_body(request)))
        caller = await self.scraper.authenticate(api_key_of(request))
        if self.payments is None:
            raise ServiceUnavailable(NOT_CONFIGURED)
        url = await self.payments.start_checkout(caller.account_id, order)
        return render_json(request, {"url": url})

    @app.route("/webhooks/stripe", methods=["POST"])
    async def stripe_webhook(self, request: Request) -> bytes:
        if self.stripe_webhooks is None:
            raise ServiceUnavailable(NOT_CONFIGURED)
        content = request.content
        payload: bytes = content.read(MAX_BODY_BYTES + 1) if content is not None else b""
        if len(payload) > MAX_BODY_BYTES:
            raise BadRequest(f"the body is larger than {MAX_BODY_BYTES} bytes")
        signature = request.getHeader(b"Stripe-Signature")
        outcome = await self.stripe_webhooks.receive(
            payload, signature.decode("latin-1") if signature else None
        )
        return render_json(request, {"received": True, "outcome": outcome})

    @app.route("/payments/demo/checkout/<session_id>", methods=["GET"])
    async def demo_checkout(self, request: Request, session_id: str) -> bytes:
        return await demo_provider(self.payments).checkout_page(request, session_id)

    @app.route("/payments/demo/checkout/<session_id>/confirm", methods=["POST"])
    async def demo_confirm(self, request: Request, session_id: str) -> bytes:
        target = await demo_provider(self.payments).confirm(session_id)
        request.setResponseCode(303)
        request.setHeader(b"Location", target.encode())
        return b""

    @app.route("/pricing", methods=["GET"])
    def pricing(self, request: Request) -> bytes:
        request.setHeader(b"Content-Type", b"application/json")
        return self._prices

    @app.route("/openapi.json", methods=["GET"])
    def openapi(self, request: Request) -> bytes:
        request.setHeader(b"Content-Type", b"application/json")
        return self._openapi

    @app.route("/docs", methods=["GET"])
    def docs(self, request: Request) -> bytes:
        return self.reference.page(request)

    @app.route("/docs/", methods=["GET"])
    def docs_slash(self, request: Request) -> bytes:
        request.setResponseCode(301)
        request.setHeader(b"Location", b"/docs")
        return b""

    @app.route("/docs/static/<name>", methods=["GET"])
    def docs_asset(self, request: Request, name: str) -> bytes:
        version = query_of(request).get(b"v", [b""])[0].decode("ascii", "replace")
        body = self.reference.asset(request, name, version)
        if body is None:
            raise NotFound()
        return body

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request: Request) -> bytes:
        if self._metrics_token and not hmac.compare_digest(
            bearer_token_of(request), self._metrics_token
        ):
            raise Unauthorized(METRICS_TOKEN_REQUIRED, headers={"WWW-Authenticate": "Bearer"})
        body, content_type = metrics_page()
        request.setHeader(b"Content-Type", content_type.encode())
        return body

    # the dashboard: HTML pages with errors of their own, mounted here ------------------------

    @app.route("/", methods=["GET"])
    def home(self, request: Request) -> bytes:
        request.setResponseCode(302)
        request.setHeader(b"Location", b"/dashboard")
        return b""

    @app.route("/dashboard/", methods=["GET"])
    def dashboard_slash(self, request: Request) -> bytes:
        request.setResponseCode(301)
        request.setHeader(b"Location", b"/dashboard")
        return b""

    @app.route("/dashboard", branch=True)
    def dashboard_pages(self, request: Request) -> Any:
        if self.dashboard is None:
            raise NotFound()
        return self.dashboard.resource_for(request)

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


class ScrapeFirst(Resource):
    """The site's root: ``POST /scrape`` goes straight to its route, everything else to Klein.

    Klein's dispatch (werkzeug's URL map, its request adapter, its Deferred plumbing) was 6% of
    the reactor thread's time per scrape at concurrency 1, where that thread's time is the
    latency. The route, its error handlers and what the caller sees are the same.
    """

    isLeaf = True

    def __init__(self, http: ScrapespyApp, routes: Any, firecrawl: FirecrawlApi) -> None:
        super().__init__()
        self.http = http
        self.routes = routes
        self.firecrawl = firecrawl
        self.firecrawl_routes = firecrawl.resource()

    def render(self, request: Request) -> Any:
        if request.method == b"POST":
            if request.path == b"/scrape":
                return self._scrape(request, self.http.scrape, self.http)
            if request.path in (b"/v1/scrape", b"/v2/scrape"):
                return self._scrape(request, self.firecrawl.scrape, self.firecrawl)
        if not url_is_utf8(request):  # Klein would answer it with a bare text 400
            return render_error(request, BadRequest("the URL is not valid UTF-8"))
        if is_firecrawl(request.path):
            return self.firecrawl_routes.render(request)
        return self.routes.render(request)

    def _scrape(self, request: Request, route: Any, errors: Any) -> Any:
        gone: list[Any] = []
        request.notifyFinish().addBoth(gone.append)
        d = Deferred.fromCoroutine(route(request))
        request.notifyFinish().addErrback(lambda _: d.cancel())

        def failed(failure: Failure) -> bytes | None:
            if gone:  # the caller went away: nobody to answer
                return None
            if failure.check(ApiError):
                return errors.api_error(request, failure)  # type: ignore[no-any-return]
            return errors.unexpected(request, failure)  # type: ignore[no-any-return]

        def answer(body: bytes | None) -> None:
            if body is not None and not gone:
                request.write(body)
                request.finish()

        d.addErrback(failed).addCallback(answer)
        d.addErrback(lambda failure: log.error("could not answer: %s", failure.value))
        return NOT_DONE_YET
