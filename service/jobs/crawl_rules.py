"""What a crawl or a map may follow: the request's fields, and the rules a found URL must pass.

A URL is kept when it is http(s), on the start URL's host (or, with ``allow_subdomains``, on
any host under the start host's registrable domain, as the Public Suffix List has it), its path
matches one of ``include_paths`` (when any are given) and none of ``exclude_paths``. The
patterns are regular expressions, each searched in the URL's path: ``^/docs/`` anchors one at the
start. A regex says both "under /docs/" and "ends in .pdf", which globs cannot both say without
two syntaxes. RE2 runs them (service.extraction.patterns): they are searched on the reactor
thread, once per link found, and Python's ``re`` held it 5 s for ``(a+)+$`` on a path of 25
``a`` and a ``!``, twice as long for each ``a`` more; RE2 takes as long as reading the path. A
pattern RE2 refuses (a backreference, a lookaround) is a 400 naming it. URLs are compared
normalised (:func:`normalised`), so ``/a#top`` and ``/a`` are one page.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.core.public_suffixes import SUFFIXES
from service.core.schemas import MAX_URL_LENGTH, URL_PATTERN, Whole
from service.extraction.patterns import Pattern, UnusablePattern, compile_pattern

MAX_PAGES = 10_000
DEFAULT_PAGES = 100
MAX_DEPTH = 100
DEFAULT_DEPTH = 10
MAX_URLS = 5000  # POST /map
DEFAULT_URLS = 1000
MAX_PATTERNS = 50
MAX_PATTERN_LENGTH = 500


def _patterns(value: list[str]) -> list[str]:
    for index, pattern in enumerate(value):
        try:
            compile_pattern(pattern)
        except UnusablePattern as exc:
            raise ValueError(
                f"pattern {index} is not a regular expression RE2 runs: {exc}"
            ) from None
    return value


def _compiled(patterns: list[str] | tuple[str, ...]) -> list[Pattern]:
    """The job's patterns, checked by :func:`_patterns` when it was asked for; one RE2 cannot
    run (stored by a release that ran Python's ``re``) is searched literally, never by ``re``."""
    found = []
    for pattern in patterns:
        try:
            found.append(compile_pattern(pattern))
        except UnusablePattern:
            found.append(compile_pattern(re.escape(pattern)))
    return found


Patterns = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_LENGTH)]],
    Field(
        max_length=MAX_PATTERNS,
        description="regular expressions searched in each URL's path ('^/docs/' anchors one)",
    ),
]
Sitemap = Literal["include", "only", "skip"]


class SiteRules(BaseModel):
    """The fields of ``POST /crawl`` and ``POST /map`` that say which URLs belong."""

    model_config = ConfigDict(extra="forbid", strict=True)

    include_paths: Patterns = []
    exclude_paths: Patterns = []
    allow_subdomains: bool = Field(
        False, description="also follow the hosts under the start host's registrable domain"
    )
    sitemap: Sitemap = Field(
        "include",
        description="include: the sitemap's URLs and the links; only: the sitemap's URLs; "
        "skip: the links alone",
    )

    _check_include = field_validator("include_paths")(_patterns)
    _check_exclude = field_validator("exclude_paths")(_patterns)


class CrawlRules(SiteRules):
    """``POST /crawl``'s own fields; the rest of the body are scrape options for every page."""

    max_pages: Annotated[int, Field(ge=1, le=MAX_PAGES), Whole] = DEFAULT_PAGES
    max_depth: Annotated[
        int,
        Field(
            ge=0,
            le=MAX_DEPTH,
            description="link hops from the start page (or a sitemap URL) a page may be at",
        ),
        Whole,
    ] = DEFAULT_DEPTH


class MapRequest(SiteRules):
    url: str = Field(
        description="the site's start page: http or https",
        max_length=MAX_URL_LENGTH,
        json_schema_extra={"pattern": URL_PATTERN},
    )
    max_urls: Annotated[int, Field(ge=1, le=MAX_URLS), Whole] = DEFAULT_URLS
    respect_robots: bool = True


CRAWL_FIELDS = tuple(CrawlRules.model_fields)


def normalised(url: str) -> str | None:
    """``url`` as pages are compared: http(s) only, scheme and host lower case, default port and
    fragment dropped, an empty path as ``/``; None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in ("http", "https") or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != (80 if scheme == "http" else 443):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path or "/", parts.query, ""))


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


@lru_cache(maxsize=1024)
def registrable(host: str) -> str:
    found = SUFFIXES(host, include_psl_private_domains=False)
    return found.top_domain_under_public_suffix or host


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").rstrip(".")


class Rules:
    """The rules as stored in the job (:meth:`stored`) and applied to each found URL."""

    def __init__(
        self,
        start_host: str,
        *,
        allow_subdomains: bool = False,
        include_paths: list[str] | tuple[str, ...] = (),
        exclude_paths: list[str] | tuple[str, ...] = (),
    ):
        self.start_host = start_host
        self.allow_subdomains = allow_subdomains
        self.include_paths = list(include_paths)
        self.exclude_paths = list(exclude_paths)
        self._include = _compiled(include_paths)
        self._exclude = _compiled(exclude_paths)
        self._domain = registrable(start_host)

    @classmethod
    def of(cls, url: str, asked: SiteRules) -> Rules:
        return cls(
            host_of(url),
            allow_subdomains=asked.allow_subdomains,
            include_paths=asked.include_paths,
            exclude_paths=asked.exclude_paths,
        )

    def stored(self) -> dict[str, Any]:
        return {
            "start_host": self.start_host,
            "allow_subdomains": self.allow_subdomains,
            "include_paths": self.include_paths,
            "exclude_paths": self.exclude_paths,
        }

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> Rules:
        return cls(
            stored["start_host"],
            allow_subdomains=stored["allow_subdomains"],
            include_paths=stored["include_paths"],
            exclude_paths=stored["exclude_paths"],
        )

    def on_site(self, host: str) -> bool:
        if host == self.start_host:
            return True
        return self.allow_subdomains and (host == self._domain or host.endswith("." + self._domain))

    def accepts(self, url: str) -> str | None:
        """``url`` normalised when it belongs, else None."""
        found = normalised(url)
        if found is None:
            return None
        parts = urlsplit(found)
        if not self.on_site((parts.hostname or "").rstrip(".")):
            return None
        path = parts.path
        if self._include and not any(pattern.search(path) for pattern in self._include):
            return None
        if any(pattern.search(path) for pattern in self._exclude):
            return None
        return found
