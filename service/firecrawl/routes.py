"""The routes of Firecrawl's API under ``/v1`` and ``/v2``.

``POST /v{1,2}/scrape`` is served by :meth:`FirecrawlApi.scrape`, which the site's root calls
directly (as it does native ``POST /scrape``); the other routes go through this Klein app.
The key comes from ``Authorization: Bearer spy_...`` (Firecrawl's) or ``X-API-Key``.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from klein import Klein
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed as WerkzeugMethodNotAllowed
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.api.http import (
    api_key_of,
    bearer_token_of,
    read_json_body,
    render_error,
    render_json,
)
from service.api.site import request_id_of
from service.core.errors import ApiError, BadRequest, MethodNotAllowed, NotFound
from service.core.schemas import parse_json_object
from service.firecrawl.scrape import Version, document, failed, firecrawl_message, native_scrape
from service.scrape.scraper import Scraper

log = logging.getLogger(__name__)

VERSIONS: dict[bytes, Version] = {b"v1": 1, b"v2": 2}


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

    def __init__(self, scraper: Scraper) -> None:
        self.scraper = scraper

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
        return render_error(request, MethodNotAllowed())

    @app.handle_errors(Exception)
    def unexpected(self, request: Request, failure: Any) -> bytes:
        log.error(
            "unexpected error on %s %s",
            request.method.decode(errors="replace"),
            request.uri.decode(errors="replace")[:200],
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        return render_error(request, ApiError())

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


def is_firecrawl(path: bytes) -> bool:
    return path.startswith((b"/v1/", b"/v2/"))
