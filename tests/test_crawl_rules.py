"""Which URLs a crawl or a map follows (service.jobs.crawl_rules), one module on its own."""

from __future__ import annotations

import pytest

from service.jobs.crawl_rules import Rules, normalised, url_key


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM", "http://example.com/"),
        ("https://example.com:443/a?b=1#frag", "https://example.com/a?b=1"),
        ("http://example.com:8080/a#", "http://example.com:8080/a"),
        ("http://[::1]:81/x", "http://[::1]:81/x"),
        ("mailto:someone@example.com", None),
        ("javascript:void(0)", None),
        ("ftp://example.com/file", None),
        ("http://example.com:99999/", None),
    ],
)
def test_urls_are_compared_normalised(url: str, expected: str | None) -> None:
    assert normalised(url) == expected


def test_one_page_one_key() -> None:
    assert url_key(normalised("http://a.example/x#1") or "") == url_key(
        normalised("HTTP://A.example:80/x#2") or ""
    )


def test_the_host_and_its_subdomains_when_allowed() -> None:
    strict = Rules("www.example.co.uk")
    loose = Rules("www.example.co.uk", allow_subdomains=True)
    assert strict.accepts("https://www.example.co.uk/a") == "https://www.example.co.uk/a"
    assert strict.accepts("https://docs.example.co.uk/a") is None
    assert loose.accepts("https://docs.example.co.uk/a") == "https://docs.example.co.uk/a"
    assert loose.accepts("https://example.co.uk/") == "https://example.co.uk/"
    # the public suffix is not a registrable domain: another site under co.uk is not ours
    assert loose.accepts("https://other.co.uk/") is None
    assert loose.accepts("https://notexample.co.uk/") is None


def test_include_and_exclude_are_regexes_searched_in_the_path() -> None:
    rules = Rules("example.com", include_paths=["^/docs/", r"\.html$"], exclude_paths=["/old/"])
    assert rules.accepts("http://example.com/docs/a") == "http://example.com/docs/a"
    assert rules.accepts("http://example.com/blog/a.html") == "http://example.com/blog/a.html"
    assert rules.accepts("http://example.com/blog/a") is None
    assert rules.accepts("http://example.com/docs/old/a") is None
    # the query is not the path: it cannot smuggle a match in
    assert rules.accepts("http://example.com/blog?next=/docs/") is None


def test_the_rules_survive_storage() -> None:
    rules = Rules("example.com", allow_subdomains=True, include_paths=["^/a"])
    again = Rules.from_stored(rules.stored())
    assert again.stored() == rules.stored()
    assert again.accepts("http://b.example.com/a") == "http://b.example.com/a"
