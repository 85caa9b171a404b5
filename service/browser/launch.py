"""How the ``js`` engine's Chromium is launched or reached, and what its pages may load.

The handler (:mod:`service.browser.handler`) uses these, with its ``SCRAPESPY_*`` settings
(``SCRAPESPY_CHROMIUM_PATH``, ``SCRAPESPY_BROWSER_URL``, ``SCRAPESPY_BROWSER_MAX_HEAP_MB``); the
two ``PLAYWRIGHT_*`` hooks are named in ``service.scrape.scrapy_settings``::

    PLAYWRIGHT_ABORT_REQUEST = "service.browser.launch.abort_heavy_resource"
    PLAYWRIGHT_PROCESS_REQUEST_HEADERS = "service.browser.launch.browser_request_headers"
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from patchright.async_api import Error as PlaywrightError
from scrapy.http.headers import Headers

from service.browser.identity import WINDOW_SIZE
from service.scrape import meta as scrape_meta

if TYPE_CHECKING:
    from collections.abc import Iterable

    from patchright.async_api import Browser
    from patchright.async_api import Request as PlaywrightRequest
    from scrapy import Request as ScrapyRequest

log = logging.getLogger(__name__)

# Resource types a js page does not load with SCRAPESPY_BLOCK_HEAVY_RESOURCES on: they change
# nothing in the DOM read (an image's load or error event aside); images are loaded when a
# screenshot or actions are asked
HEAVY_RESOURCE_TYPES = frozenset({"media", "font"})
IMAGE_TYPES = frozenset({"image"})
# The usual file extensions of those types. A page's request for an address whose path ends in
# one is failed inside the browser (Network.setBlockedURLs: no message to the service and back);
# the others of those types are paused and failed by type (service.browser.spares)
EXTENSIONS = {
    "image": ("avif", "bmp", "gif", "ico", "jpeg", "jpg", "png", "svg", "tif", "tiff", "webp"),
    "font": ("eot", "otf", "ttf", "woff", "woff2"),
    "media": ("aac", "flac", "m4a", "m4v", "mov", "mp3", "mp4", "oga", "ogg", "ogv", "wav", "webm"),
}


def blocked_addresses(types: Iterable[str]) -> list[dict[str, Any]]:
    """Network.setBlockedURLs' URL patterns for the extensions of ``types``: they fail
    sub-resources only (a navigation, the page's own or a frame's, is never blocked by them)."""
    extensions = [ext for kind in sorted(types) for ext in EXTENSIONS.get(kind, ())]
    return [{"urlPattern": f"*://*:*/*.{ext}", "block": True} for ext in extensions]


# The full Chromium's languages (the default identity's; the headless shell writes the flag's
# text as it is, without q-values, so its contexts are given theirs by emulation)
NATIVE_LANGUAGES = "--accept-lang=en-US,en"
# Headers of a caller's that a js navigation never sends: the proxy's credentials, and the
# connection's own, which the browser manages
DROPPED = frozenset({"proxy-authorization", "connection", "host", "content-length"})


def chromium_launch_options(
    chromium_path: str, *, as_root: bool, max_heap_mb: int | None = None
) -> dict[str, Any]:
    """PLAYWRIGHT_LAUNCH_OPTIONS for the system Chromium (the guard's proxy is added at launch);
    ``max_heap_mb`` bounds each renderer's JavaScript heap."""
    # the headless shell is headless by nature; the full browser is told which headless mode
    # and gets the default identity's languages as its own (service.browser.identity: its
    # contexts then send Chrome's native Accept-Language, last, as Chrome orders it)
    headless = [] if is_headless_shell(chromium_path) else ["--headless=new", NATIVE_LANGUAGES]
    args = [
        *headless,
        "--disable-gpu",
        # a desktop window, taller than its page (service.browser.identity)
        f"--window-size={WINDOW_SIZE}",
        # no WebGL, as the machine's own Chromium without a GPU has none (rather than
        # SwiftShader's, which detectors flag): docs/decisions/0046
        "--disable-webgl",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        # Chromium's own calls home are refused by a closed network and waste connections.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--metrics-recording-only",
        "--no-default-browser-check",
        # WebRTC could otherwise send UDP to any address, around the egress guard.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        # navigator.webdriver false, as in a browser nobody automates (with --enable-automation
        # left out below); the flag changes nothing else a page can see
        "--disable-blink-features=AutomationControlled",
    ]
    if max_heap_mb:
        args.append(f"--js-flags=--max-old-space-size={max_heap_mb}")
    if as_root:
        args.append("--no-sandbox")
    return {
        "executable_path": chromium_path,
        "headless": True,
        "args": args,
        # Playwright turns Chromium's IPC flooding protection off (for its own tests' rapid
        # navigations); on, a page pushing history in a loop is throttled by the browser instead
        # of sending each push through CDP to the reactor, which then answered seconds late.
        "ignore_default_args": ["--disable-ipc-flooding-protection", "--enable-automation"],
    }


def is_headless_shell(chromium_path: str) -> bool:
    return os.path.basename(chromium_path).startswith("chromium-headless-shell")


def remote_browser_settings(url: str) -> dict[str, str]:
    """SCRAPESPY_BROWSER_URL: a CDP endpoint (http://, or ws://.../devtools/browser/...) or a
    Playwright server (other ws:// addresses)."""
    if not url:
        return {}
    if url.startswith(("http://", "https://")) or "/devtools/browser/" in url:
        return {"PLAYWRIGHT_CDP_URL": url}
    return {"PLAYWRIGHT_CONNECT_URL": url}


def abort_heavy_resource(request: PlaywrightRequest) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: media and fonts change nothing in the DOM we read."""
    return request.resource_type in HEAVY_RESOURCE_TYPES


async def browser_request_headers(
    *, browser_type_name: str, playwright_request: PlaywrightRequest, scrapy_request_data: dict
) -> dict[str, str]:
    """The browser's own headers, as Chrome made them for the request, plus, on the page's own
    navigations on the target's host, the caller's explicit ones (:func:`explicit_headers`).

    Every other navigation (frames, a redirect or a click to another host) goes as the browser
    made it: a caller's ``Authorization`` is not for third parties, as a static download drops
    it on a redirect to another host. A proxy's credentials never reach a target (inside a
    CONNECT tunnel the target would read them)."""
    headers = await playwright_request.all_headers()
    if playwright_request.is_navigation_request() and _own_navigation(
        playwright_request, scrapy_request_data["url"]
    ):
        given = scrapy_request_data["headers"]
        for name in given:
            key = name.decode("latin-1").lower()
            if key not in DROPPED:
                headers[key] = given[name].decode("latin-1")
    return headers


def explicit_headers(request: ScrapyRequest, scrapy_agent: bytes) -> Headers:
    """What a js request adds to the browser's headers: the caller's own (``headers`` on
    ``POST /scrape``; a request made without an order, all it carries but Scrapy's own
    ``User-Agent``), and the cookies an earlier static attempt of an ``auto`` scrape was given
    (its jar's ``Cookie`` header). Scrapy's defaults (its ``Accept``, ``Accept-Language``,
    ``User-Agent``) are not sent: the browser's own are, as Chrome orders and writes them."""
    order = scrape_meta.order_if_any(request)
    if order is not None:
        headers = Headers(order.headers or {})
    else:
        headers = request.headers.copy()
        if headers.get("User-Agent") == scrapy_agent:
            del headers["User-Agent"]
    cookie = request.headers.get("Cookie")
    if cookie and "Cookie" not in headers:
        headers["Cookie"] = cookie
    return headers


def _own_navigation(request: PlaywrightRequest, url: str) -> bool:
    """A navigation of the page's main frame to the scraped URL's host."""
    try:
        if request.frame.parent_frame is not None:
            return False
    except PlaywrightError:  # a service worker's navigation has no frame
        return False
    return urlsplit(request.url).hostname == urlsplit(url).hostname


async def browser_process(browser: Browser) -> int | None:
    """The pid of a launched browser's main process (Playwright does not say; its CDP does)."""
    try:
        session = await browser.new_browser_cdp_session()
        try:
            info = await session.send("SystemInfo.getProcessInfo")
        finally:
            with suppress(PlaywrightError):
                await session.detach()
    except PlaywrightError as error:
        log.debug("the browser did not tell its process: %s", error)
        return None
    for process in info.get("processInfo", ()):
        if process.get("type") == "browser":
            return int(process["id"])
    return None


async def reap_browser(browser: Browser, pid: int | None) -> None:
    """Close a browser that Playwright has lost for good: once its connection is gone, nothing
    else ends its processes (5-6 of them, 250-400 MB), which then live as long as the service.

    Playwright launches the browser in a process group of its own, led by the launcher (the
    wrapper script of Debian's package); the whole group is killed, unless it is ours."""
    with suppress(Exception):
        await asyncio.wait_for(browser.close(), 5.0)
    if pid is None or not _is_browser(pid):
        return
    with suppress(ProcessLookupError, PermissionError):
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, signal.SIGKILL)
            log.warning("killed the processes of a browser that went away (group %s)", group)


def _is_browser(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:  # procfs: no disk, a few hundred bytes
            command = fh.read(4096).split(b"\0", 1)[0]
    except OSError:
        return False
    return b"chrom" in os.path.basename(command)
