"""The site's root resource: which front answers which path, as the process composes it
(service.process.server). It knows no front: each one hands it its resource and the paths it
claims.

The scrapes (``POST /scrape``, ``POST /v1/scrape``, ``POST /v2/scrape``) go straight to their
route. Klein's dispatch (werkzeug's URL map, its request adapter, its Deferred plumbing) was 6%
of the reactor thread's time per scrape at concurrency 1, where that thread's time is the
latency. The route, its errors and what the caller sees are the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request

from service.core.errors import BadRequest
from service.web.http import render_error, render_failure, url_is_utf8

log = logging.getLogger(__name__)

Route = Callable[[Request], Coroutine[Any, Any, bytes]]
# a front's claim on a request (by its path), and the resource that answers what it claims
Front = tuple[Callable[[Request], bool], Any]


def routed_path(request: Request) -> bytes:
    """The path as Klein's routes see it: percent-decoded, without the query."""
    return b"/" + b"/".join(request.postpath or ())


class Root(Resource):
    """``scrapes``: the routes called directly for a POST to their path; ``fronts``: the first
    front that claims a request answers it; ``rest``: the resource that answers the others."""

    isLeaf = True

    def __init__(self, scrapes: Mapping[bytes, Route], fronts: Sequence[Front], rest: Any) -> None:
        super().__init__()
        self.scrapes = dict(scrapes)
        self.fronts = tuple(fronts)
        self.rest = rest

    def render(self, request: Request) -> Any:
        if request.method == b"POST":
            route = self.scrapes.get(request.path)
            if route is not None:
                return self._scrape(request, route)
        if not url_is_utf8(request):  # Klein would answer it with a bare text 400
            return render_error(request, BadRequest("the URL is not valid UTF-8"))
        for claims, resource in self.fronts:
            if claims(request):
                return resource.render(request)
        return self.rest.render(request)

    def _scrape(self, request: Request, route: Route) -> Any:
        gone: list[Any] = []
        request.notifyFinish().addBoth(gone.append)
        d = Deferred.fromCoroutine(route(request))
        request.notifyFinish().addErrback(lambda _: d.cancel())

        def failed(failure: Failure) -> bytes | None:
            if gone:  # the caller went away: nobody to answer
                return None
            return render_failure(request, failure)

        def answer(body: bytes | None) -> None:
            if body is not None and not gone:
                request.write(body)
                request.finish()

        d.addErrback(failed).addCallback(answer)
        d.addErrback(lambda failure: log.error("could not answer: %s", failure.value))
        return NOT_DONE_YET
