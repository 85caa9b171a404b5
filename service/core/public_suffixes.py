"""The Public Suffix List, as tldextract ships it: read from the package, never fetched.

A ``TLDExtract`` built with its defaults fetches the list from the internet on first use, with
no timeout, and Scrapy's cookie middleware calls its own on the reactor thread for the first
cookie: with the list's host unreachable but accepting connections, the whole service froze.
Every user of the list takes :data:`SUFFIXES`, and :func:`install` hands it to Scrapy when a
crawler builds its cookie middleware (middlewares.cookies).
"""

from __future__ import annotations

import tldextract
from scrapy.downloadermiddlewares import cookies

# Private domains (github.io, blogspot.com) count as suffixes, as Scrapy's cookie middleware
# counts them: one site there may not set a cookie for all the others. The crawl rules ask
# without them (service.jobs.crawl_rules.registrable).
SUFFIXES = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


def install() -> None:
    """Scrapy's cookie middleware uses :data:`SUFFIXES`; the list is read now, as the crawler
    is built, not under the first cookie."""
    SUFFIXES("example.com")
    cookies._split_domain = SUFFIXES
