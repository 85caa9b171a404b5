"""Reading a rendered page into a Scrapy response, in as few round trips to the browser as it takes.

scrapy-playwright's own reader asks the browser, one after the other, for the response's headers,
the page's HTML (``page.content()``, which first sets up Playwright's utility world in the page:
25-40 ms for a small page), the TLS details and the server's address, and then closes the page.
Here the headers are fetched while the page settles, the HTML is read by one evaluation in the
page's own world (``page.content()`` stays the fallback), and the page is left to its context,
which the handler closes right after the answer. The TLS details and the address are not asked
for: nothing in the service uses them.

A navigation that answers a document (a PDF, DOCX, PPTX, XLSX or EPUB, by its Content-Type) is
not read from Chromium's PDF viewer, nor refused as a download: its bytes are fetched once more
through the page's context (``context.request``: the same cookies, and the same egress route
and proxy) and become the response's body, which the result pipeline converts as the static
engine's (service.extraction.documents). So does any other file download (a navigation that
Chromium downloads, a PDF sent as ``application/octet-stream``): the result pipeline tells a
document by its bytes, and answers anything else as the static engine answers it.

Chromium follows redirects itself, and Playwright's routing never sees their hops: each
redirect of the main frame's navigation is checked as its response arrives, by the static
engine's rules (middlewares.redirects: more than ``REDIRECT_MAX_TIMES``, a scheme other than
http and https, credentials in the URL), and the render fails at once with the same message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError
from patchright.async_api import Response as PlaywrightResponse
from scrapy.http import Response as ScrapyResponse
from scrapy.http.headers import Headers
from scrapy.responsetypes import responsetypes
from scrapy_playwright._utils import _encode_body, _get_page_content, _set_redirect_meta

from middlewares.redirects import REDIRECT_STATUSES, refused_redirect
from service.browser.failures import RedirectFailed, TooLarge, exception_for
from service.scrape import meta as scrape_meta
from service.scrape.timings import render_started, rendered

if TYPE_CHECKING:
    from patchright.async_api import Page
    from patchright.async_api import Request as PlaywrightRequest
    from scrapy import Request
    from scrapy.http import Response
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

    from service.browser.world import PageWorld

log = logging.getLogger(__name__)

# Content-Types of documents (service.extraction.documents) that Chromium shows in its PDF
# viewer or downloads: neither gives the document
DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/x-pdf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.oasis.opendocument.text",
        "application/epub+zip",
    }
)
# times 50 ms that a download's navigation response is waited for, once goto said it downloads
DOWNLOAD_ANSWER_WAITS = 40
# what a fetched document's route may carry past its body's limit: the response's head
HEADROOM = 64 * 1024
# a PDF whose Content-Type lied, as Chromium renders it: its header at the top of the text
PDF_SIGNATURE = "%PDF-"
PDF_WITHIN = 1200

# What page.content() returns (Playwright's frame.content), computed in the page's isolated world
# (service.browser.world: a page that replaced outerHTML's getter would run its own code, and see
# who called it, in its own world).
DOCUMENT_HTML = """() => {
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : "";
  return doctype + (document.documentElement ? document.documentElement.outerHTML : "");
}"""


async def page_html(
    page: Page, request: Request, spider: Any, world: PageWorld | None = None
) -> str:
    """The page's HTML as ``page.content()`` gives it."""
    try:
        html = await (world.evaluate(DOCUMENT_HTML) if world else page.evaluate(DOCUMENT_HTML))
    except PlaywrightError:
        html = None  # a navigation under way, or a page that broke the DOM's own methods
    if isinstance(html, str):
        return html
    return await _get_page_content(
        page=page,
        spider=spider,
        context_name=scrape_meta.context_name(request),
        scrapy_request_url=request.url,
        scrapy_request_method=request.method,
    )


# A navigation's document cut short (fewer bytes than its Content-Length, a chunked body that
# stops): Chromium keeps what came and never fires load, so the navigation would wait out the
# timeout where a static download fails at once.
_TRUNCATED = frozenset({"net::ERR_CONTENT_LENGTH_MISMATCH", "net::ERR_INCOMPLETE_CHUNKED_ENCODING"})


class _CutShort:
    """Stops a navigation (``stop``) whose main-frame document is cut short (:data:`_TRUNCATED`).

    With the page's ``world``, the main frame's documents are followed on the world's CDP
    session, which hears the page's network anyway, rather than on Playwright's request events,
    which cost the driver messages for every request of the page (docs/decisions/0049)."""

    def __init__(
        self, page: Page, world: PageWorld | None, stop: Callable[[Exception], None]
    ) -> None:
        self.page, self.world, self.stop = page, world, stop
        self.documents: dict[str, str] = {}  # request id -> address, of the main frame's
        if world is None:
            page.on("requestfailed", self._request_failed)
        else:
            world.session.on("Network.requestWillBeSent", self._sent)
            world.session.on("Network.loadingFailed", self._failed)

    def _request_failed(self, failure: PlaywrightRequest) -> None:
        with suppress(PlaywrightError):
            main = failure.is_navigation_request() and failure.frame == self.page.main_frame
            if main and (failure.failure or "") in _TRUNCATED:
                self.stop(exception_for("closed", failure.url))

    def _sent(self, event: dict[str, Any]) -> None:
        if self.world is not None and self.world.main_document(event):
            self.documents[str(event.get("requestId"))] = str(event["request"]["url"])

    def _failed(self, event: dict[str, Any]) -> None:
        url = self.documents.get(str(event.get("requestId")))
        if url is not None and event.get("errorText") in _TRUNCATED:
            self.stop(exception_for("closed", url))

    def close(self) -> None:
        if self.world is None:
            self.page.remove_listener("requestfailed", self._request_failed)
        else:
            self.world.session.remove_listener("Network.requestWillBeSent", self._sent)
            self.world.session.remove_listener("Network.loadingFailed", self._failed)


async def navigate(
    page: Page, request: Request, max_redirects: int = 10, world: PageWorld | None = None
) -> tuple[PlaywrightResponse | None, bool]:
    """``page.goto`` the request's URL, failing at once where Chromium gives up on it or
    follows a redirect the static engine does not; with whether the navigation is a download.

    scrapy-playwright's navigation waits up to 30 s for a download after any ``ERR_ABORTED``;
    contexts refuse downloads (Playwright then says ``Download is starting``), and Chromium
    aborts a redirect it will not follow (``gopher:``, ``javascript:``) the same way. A file
    that Chromium downloads (a PDF) is no failure: its navigation response is returned."""
    goto_kwargs = scrape_meta.goto_kwargs(request)
    goto_kwargs.pop("url", None)
    loop = asyncio.get_running_loop()
    cut: asyncio.Future[Exception] = loop.create_future()
    statuses: list[int] = []
    answers: list[PlaywrightResponse] = []  # the main frame's, last one last
    hops = 0

    def stop(error: Exception) -> None:
        if not cut.done():
            cut.set_result(error)

    def responded(response: PlaywrightResponse) -> None:
        nonlocal hops
        with suppress(PlaywrightError):
            sent = response.request
            if not sent.is_navigation_request():
                return
            statuses.append(response.status)
            if sent.frame != page.main_frame:
                return
            answers.append(response)
            location = response.headers.get("location")
            if response.status in REDIRECT_STATUSES and location is not None:
                hops += 1
                refused = refused_redirect(response.url, location, hops, max_redirects)
                if refused is not None:
                    stop(RedirectFailed(refused))

    cut_short = _CutShort(page, world, stop)
    page.on("response", responded)
    going = asyncio.ensure_future(page.goto(url=request.url, **goto_kwargs))
    try:
        racing: list[asyncio.Future[Any]] = [going, cut]
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        if cut.done():
            raise cut.result()
        return await going, False
    except PlaywrightError as error:
        if cut.done():
            raise cut.result() from None
        if "Download is starting" in error.message:
            # the download's response event may come after goto's failure: a moment for it
            for _ in range(DOWNLOAD_ANSWER_WAITS):
                if answers:
                    return answers[-1], True  # read_rendered fetches its bytes
                await asyncio.sleep(0.05)
            raise exception_for("closed", request.url) from None
        if "net::ERR_ABORTED" in error.message and 204 not in statuses:
            raise RedirectFailed(
                "the target redirected to an address the browser does not follow "
                "(a scheme other than http and https)"
            ) from None
        raise
    finally:
        cut_short.close()
        page.remove_listener("response", responded)
        if not going.done():
            going.cancel()
        going.add_done_callback(_consume)
        cut.cancel()


def _is_document(response: PlaywrightResponse) -> bool:
    content_type = response.headers.get("content-type", "")
    return content_type.split(";")[0].strip().lower() in DOCUMENT_TYPES


async def _document(
    handler: ScrapyPlaywrightDownloadHandler,
    page: Page,
    request: Request,
    response: PlaywrightResponse,
    started: float,
    navigated: Any,
) -> Response:
    """The document (or downloaded file) the navigation answered, as its bytes: fetched again
    through the page's context (its cookies, its egress route), since the viewer holds no copy
    of them. The page's meter does not see this fetch: the static engine's download limit is
    checked on the declared length before it, by the route on the bytes as they come (a body
    without a length is cut there), and on the bytes after it."""
    limit: int = getattr(handler, "max_resource_bytes", 0)
    declared = response.headers.get("content-length", "")
    if limit and declared.isdigit() and int(declared) > limit:
        raise TooLarge(_document_too_large(int(declared), limit))
    await _set_redirect_meta(request=request, response=response)
    route = getattr(handler, "route_of", lambda _page: None)(page)
    if route is not None and limit:
        route.receive_limit = limit + HEADROOM
    try:
        fetched = await page.context.request.get(response.url, max_redirects=0)
    except PlaywrightError:
        if route is not None and route.over_limit:
            raise TooLarge(_document_too_large_unknown(limit)) from None
        raise
    try:
        body = await fetched.body()
        if limit and len(body) > limit:
            raise TooLarge(_document_too_large(len(body), limit))
        if route is not None and route.over_limit:
            # cut by the route: a body without a length then just ends, short of the limit
            raise TooLarge(_document_too_large_unknown(limit))
        headers = Headers(fetched.headers)
        status = fetched.status
    finally:
        await fetched.dispose()
    rendered(request.meta, navigated)
    headers.pop("Content-Encoding", None)
    request.meta["download_latency"] = time.time() - started
    return ScrapyResponse(
        url=response.url,
        status=status,
        headers=headers,
        body=body,
        request=request,
        flags=["playwright", "document"],
    )


def _document_too_large(size: int, limit: int) -> str:
    return f"the document is {size} bytes, over the download limit of {limit} bytes"


def _document_too_large_unknown(limit: int) -> str:
    return f"the document is over the download limit of {limit} bytes"


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def read_rendered(
    handler: ScrapyPlaywrightDownloadHandler,
    request: Request,
    page: Page,
    spider: Any,
    navigating: AbstractContextManager[Any] | None = None,
) -> Response:
    """Navigate ``page`` to ``request``'s URL (within ``navigating``), let it settle and build
    the response."""
    started = time.time()
    navigated = render_started(request.meta)  # timings: the end of queue
    world_of = getattr(handler, "world_of", None)  # service.browser.handler's
    world = world_of(page) if world_of is not None else None
    with navigating if navigating is not None else nullcontext():
        max_redirects: int = getattr(handler, "max_redirects", 10)
        response, downloaded = await navigate(page, request, max_redirects, world)
    scrape_meta.set_loaded_at(request, asyncio.get_running_loop().time())
    headers_read: asyncio.Future[dict[str, str]] | None = None
    if response is not None and (downloaded or _is_document(response)):
        return await _document(handler, page, request, response, started, navigated)
    if isinstance(response, PlaywrightResponse):
        headers_read = asyncio.ensure_future(response.all_headers())
        await _set_redirect_meta(request=request, response=response)
    try:
        await handler._apply_page_methods(page, request, spider)  # settling, in our handler
        settled_html = scrape_meta.take_settled_html(request)
        body_text = settled_html or await page_html(page, request, spider, world)
        rendered(request.meta, navigated)  # timings: render
        headers = Headers(await headers_read) if headers_read is not None else Headers()
    finally:
        if headers_read is not None and not headers_read.done():
            headers_read.cancel()
    if isinstance(response, PlaywrightResponse) and PDF_SIGNATURE in body_text[:PDF_WITHIN]:
        # a PDF sent as text: Chromium showed its bytes as text, which are no use either
        return await _document(handler, page, request, response, started, navigated)
    headers.pop("Content-Encoding", None)
    request.meta["download_latency"] = time.time() - started

    if response is None:
        log.debug("navigating to %s gave no response; reading the page as it is", request.url)
    body, encoding = _encode_body(headers=headers, text=body_text)
    respcls = responsetypes.from_args(headers=headers, url=page.url, body=body)
    return respcls(
        url=page.url,
        status=response.status if response is not None else 200,
        headers=headers,
        body=body,
        request=request,
        flags=["playwright"],
        encoding=encoding,  # type: ignore[call-arg]  # a TextResponse for HTML
    )
