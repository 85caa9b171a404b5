"""The one Public Suffix List of the service: the bundled one, in Scrapy's cookies too."""

from __future__ import annotations

from scrapy.downloadermiddlewares import cookies

from service.core.public_suffixes import SUFFIXES, install
from service.jobs.crawl_rules import registrable


def test_scrapy_s_cookies_use_the_bundled_list_once_installed():
    install()
    assert cookies._split_domain is SUFFIXES
    assert SUFFIXES.suffix_list_urls == ()  # nothing to fetch
    # a public suffix, private ones included, may not carry a cookie for all its sites
    assert cookies._is_public_domain("co.uk")
    assert cookies._is_public_domain("github.io")
    assert not cookies._is_public_domain("example.co.uk")


def test_the_crawl_rules_read_registrable_domains_without_private_suffixes():
    assert registrable("docs.example.co.uk") == "example.co.uk"
    assert registrable("someone.github.io") == "github.io"
