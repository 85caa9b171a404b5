"""The ``js`` engine's download handler and what it is made of.

``handler``: :class:`BrowserDownloadHandler` (one Chromium, one context per request);
``launch``: how the browser is launched or reached, and the ``PLAYWRIGHT_*`` hooks; ``egress``
and ``wire``: the forward proxy on loopback that Chromium must go through (the browser's SSRF
guard); ``failures``: Chromium's errors told as a static download tells them; ``read``: the
rendered page into a Scrapy response; ``settle``: when a page has settled; ``spares``: contexts
made ahead of demand; ``screenshot``: the PNG a request may ask for; ``actions`` and
``targets``: a request's ``wait_for`` and action steps, and the elements they are about.
"""

from service.browser.failures import BrowserError
from service.browser.handler import BrowserDownloadHandler
from service.browser.launch import (
    abort_heavy_resource,
    browser_request_headers,
    chromium_launch_options,
    remote_browser_settings,
)

__all__ = [
    "BrowserDownloadHandler",
    "BrowserError",
    "abort_heavy_resource",
    "browser_request_headers",
    "chromium_launch_options",
    "remote_browser_settings",
]
