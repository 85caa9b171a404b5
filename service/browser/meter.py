"""How much a rendered page's network brings in, and the cut when it is too much.

A static download stops at ``DOWNLOAD_MAXSIZE``; the browser has no such limit: a compression
bomb, a 500 MB body or an endless one grew a renderer by about 300 MB a second until the
timeout. The page's CDP session of the service's (made with its spare context, ahead of demand)
hears ``Network.dataReceived``: the bytes of every response of the page, main document and
sub-resources, as decoded (a bomb counts what it unpacks to). A resource past ``per_resource``
bytes, or the page past ``per_page`` in all, calls ``over`` once; the handler then cuts the
render short and closes the context, which ends the renderer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchright.async_api import CDPSession

log = logging.getLogger(__name__)

# The session's network agent keeps no response bodies (the page's own session does, for
# Playwright): this one only counts.
METER_NETWORK = {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0, "maxPostDataSize": 0}


class DownloadMeter:
    def __init__(self, per_resource: int, per_page: int) -> None:
        self.per_resource = per_resource
        self.per_page = per_page
        self.total = 0
        self.largest = 0
        self.over: Callable[[], None] | None = None  # set by the request that takes the page
        self.tripped = False
        self._by_request: dict[str, int] = {}
        # the Location of the last redirect the page's network saw: Chromium refuses one to
        # file: or data: itself (net::ERR_UNSAFE_REDIRECT) without saying where it went
        self.last_location: str | None = None

    async def attach(self, session: CDPSession) -> None:
        """Count the page's bytes on the page's ``session``."""
        session.on("Network.dataReceived", self._received)
        session.on("Network.responseReceivedExtraInfo", self._answered)
        await session.send("Network.enable", METER_NETWORK)

    def _received(self, params: dict[str, Any]) -> None:
        size = int(params.get("dataLength") or 0)
        request = str(params.get("requestId"))
        resource = self._by_request[request] = self._by_request.get(request, 0) + size
        self.total += size
        self.largest = max(self.largest, resource)
        if self.tripped or (resource <= self.per_resource and self.total <= self.per_page):
            return
        self.tripped = True
        if self.over is not None:
            self.over()

    def _answered(self, params: dict[str, Any]) -> None:
        if 300 <= int(params.get("statusCode") or 0) < 400:
            for name, value in (params.get("headers") or {}).items():
                if name.lower() == "location":
                    self.last_location = str(value)

    def message(self) -> str:
        if self.largest > self.per_resource:
            return (
                f"the page or a resource it loads is larger than the download limit of "
                f"{self.per_resource} bytes (DOWNLOAD_MAXSIZE)"
            )
        return (
            f"the page and the resources it loads are larger than the limit of "
            f"{self.per_page} bytes (SCRAPESPY_BROWSER_MAX_PAGE_BYTES)"
        )
