"""The static engine with a browser's network fingerprint (curl_cffi, curl-impersonate).

Many sites read the TLS ClientHello (JA4), the HTTP/2 SETTINGS and the header order before any
HTML; Scrapy's Twisted/OpenSSL stack names itself there whatever its headers say. A static
download whose fingerprint is ``chrome`` (``SCRAPESPY_STATIC_FINGERPRINT``, or an ``auto``
attempt after a block) goes through libcurl built to present Chrome's, with every guarantee of
the static engine kept: the egress guard's addresses pinned, the proxy of the attempt, the size
cap, the timeout, redirects, decompression and cookies left to the middlewares.
``handler.py`` routes each download, ``curl.py`` makes one. Decision record 0037.
"""

from __future__ import annotations

from service.impersonation.handler import FINGERPRINTS, FingerprintDownloadHandler

__all__ = ["FINGERPRINTS", "FingerprintDownloadHandler"]
