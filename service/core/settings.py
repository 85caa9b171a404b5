"""Every setting of the service, in one table: its environment variable, the Scrapy setting it
feeds, the :class:`service.core.config.Config` field it fills, its type, default, bounds and
meaning.

One row is one setting. :meth:`Config.from_env` reads the environment through these rows (and
nothing else reads ``SCRAPESPY_*`` from it); :func:`service.scrape.scrapy_settings.from_config`
gives the crawler the rows' Scrapy settings; docs/operations.md shows :func:`markdown`, which
``python -m service.core.settings`` prints::

    python -m service.core.settings > /tmp/table.md    # or --write to update the docs in place

A row without a variable is a Scrapy setting only (``scrapy crawl -s``, or a crawler of your
own); a row without a Scrapy setting is for the service alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Literal

from service.extraction import bounds

# How a variable's text is read (service.core.config.PARSERS):
#   str      the text, stripped (``normalize`` then applies, e.g. str.lower)
#   url      the same, without a trailing "/"
#   bool     1/true/yes/on or 0/false/no/off
#   int      an integer, at least ``minimum`` (0 unless given), at most ``maximum`` when given
#   float    a finite number, above 0 unless ``minimum`` is given (then at least ``minimum``)
#   proxies  comma-separated http:// proxy URLs (``cc=`` before one: its country), plus the
#            lines of the file ``<NAME>_FILE``
#   file     a file's path (read by the row it belongs to)
#   pairs    comma-separated name=address pairs
#   list     comma-separated values
Kind = Literal["str", "url", "bool", "int", "float", "proxies", "file", "pairs", "list"]

# Debian's chromium-headless-shell is the same Chromium without the desktop browser around it
# (what Playwright and Puppeteer run for headless by default): a fresh context and page cost a
# quarter of the browser's CPU that the full browser's take (profile services, tab helpers),
# which is most of a js scrape's cost. The full browser is the fallback.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")


def default_chromium_path() -> str:
    for path in CHROMIUM_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return CHROMIUM_CANDIDATES[-1]


# A database thread waits on the server's round trips; past one per core, more of them only
# contend for the GIL with the reactor thread: on 2 cores, 2 threads served 12% more scrapes at
# concurrency 32 on PostgreSQL than 8 (alternating 5 s turns of two services). SQLite uses one.
DEFAULT_DB_THREADS = min(8, max(2, os.cpu_count() or 2))
# One account's long pages hold all extraction workers but one (service.extraction.pool), so one
# more worker than cores lets a lone caller keep every core busy: with two workers on two cores,
# PDFs at concurrency 4 used one core (docs/decisions/0033-extraction-workers-and-pdf-shares.md)
DEFAULT_EXTRACT_WORKERS = (os.cpu_count() or 2) + 1

MIB = 1024 * 1024


@dataclass(frozen=True)
class Setting:
    """One setting. ``default`` may be a function (called for each Config), then ``shown``
    says in words what it gives; ``shown`` may also describe a default the service decides."""

    env: str | None  # the environment variable; None: a Scrapy setting only
    scrapy: str | None  # the Scrapy setting it feeds; None: the service's alone
    field: str | None  # the Config field it fills; None: no field of its own
    kind: Kind
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    normalize: Callable[[str], str] | None = None
    shown: str | None = None  # the default as docs/operations.md words it, when not the value

    @property
    def name(self) -> str:
        """The name an operator knows it by: its variable, else its Scrapy setting."""
        name = self.env or self.scrapy
        assert name is not None
        return name

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


def _env(
    name: str,
    field: str | None,
    kind: Kind,
    default: Any,
    doc: str,
    *,
    scrapy: bool | str = False,
    minimum: float | None = None,
    maximum: float | None = None,
    normalize: Callable[[str], str] | None = None,
    shown: str | None = None,
) -> Setting:
    """A variable; ``scrapy=True`` feeds the Scrapy setting of the same name."""
    setting = name if scrapy is True else (scrapy or None)
    return Setting(name, setting, field, kind, default, doc, minimum, maximum, normalize, shown)


def _scrapy(name: str, kind: Kind, default: Any, doc: str) -> Setting:
    """A Scrapy setting without a variable: ``scrapy crawl -s`` or a crawler of your own."""
    return Setting(None, name, None, kind, default, doc)


def _cost(engine: str, tier: str, default: int) -> Setting:
    return _env(
        f"SCRAPESPY_COST_{engine.upper()}_{tier.upper()}",
        f"costs.{engine}.{tier}",
        "int",
        default,
        f"credits per billed `{engine}` scrape on the `{tier}` tier; costs must not decrease "
        "from `none` to `residential`",
    )


SETTINGS: tuple[Setting, ...] = (
    _env(
        "SCRAPESPY_DATABASE_URL",
        "database_url",
        "str",
        "sqlite:///var/scrapespy.db",
        "SQLAlchemy URL; `postgresql+psycopg2://...` in production",
    ),
    _env(
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS",
        "allow_private_targets",
        "bool",
        False,
        "`1` lets loopback and private targets be fetched (tests, local use)",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_STATIC_FINGERPRINT",
        "static_fingerprint",
        "str",
        "scrapy",
        "the network fingerprint of the `static` engine: `scrapy` presents Scrapy's own TLS and "
        "headers, `chrome` Chrome's TLS ClientHello, HTTP/2 settings and headers (curl_cffi, "
        "the system Chromium's JA4); with `scrapy`, an `auto` request blocked on a tier tries "
        "`chrome` there before the next tier (docs/decisions/0037)",
        scrapy=True,
        normalize=str.lower,
    ),
    _env(
        "SCRAPESPY_PROXIES_DATACENTER",
        "proxies_datacenter",
        "proxies",
        (),
        "comma-separated `[cc=]http://[user:password@]host:port` proxies of the datacenter tier; "
        "`cc=` (ISO 3166-1 alpha-2, `de=`) says the proxy's country, for `location`",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_PROXIES_DATACENTER_FILE",
        None,
        "file",
        "",
        "a file of more datacenter proxies, one a line, tagged alike (`#` comments)",
    ),
    _env(
        "SCRAPESPY_PROXIES_RESIDENTIAL",
        "proxies_residential",
        "proxies",
        (),
        "comma-separated `[cc=]http://[user:password@]host:port` proxies of the residential tier; "
        "`cc=` (ISO 3166-1 alpha-2, `de=`) says the proxy's country, for `location`",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_PROXIES_RESIDENTIAL_FILE",
        None,
        "file",
        "",
        "a file of more residential proxies, one a line, tagged alike (`#` comments)",
    ),
    _env(
        "SCRAPESPY_RESIDENTIAL_TRIALS",
        "residential_trials",
        "int",
        10,
        "free residential trials per account",
    ),
    _env(
        "SCRAPESPY_PROXY_BENCH_SECONDS",
        "proxy_bench_seconds",
        "float",
        60.0,
        "how long a proxy that failed to connect is left out of its pool",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_RATE_LIMIT_PER_SECOND",
        "rate_limit_per_second",
        "float",
        10.0,
        "per-key limit (GCRA): requests per second",
    ),
    _env(
        "SCRAPESPY_RATE_LIMIT_BURST",
        "rate_limit_burst",
        "int",
        20,
        "per-key limit (GCRA): the burst",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_REDIS_URL",
        "redis_url",
        "str",
        "",
        "shared rate-limit state for several processes or hosts",
    ),
    _env(
        "SCRAPESPY_CHROMIUM_PATH",
        "chromium_path",
        "str",
        default_chromium_path,
        "browser for the `js` engine",
        scrapy=True,
        shown="`/usr/bin/chromium-headless-shell` when installed, else `/usr/bin/chromium`",
    ),
    _env(
        "SCRAPESPY_BROWSER_URL",
        "browser_url",
        "str",
        "",
        "a browser to connect to instead of launching one (see [The js engine](#the-js-engine))",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_BROWSER_ENDPOINTS",
        "browser_endpoints",
        "list",
        (),
        "Playwright browser servers (`ws://host:port/path`, comma-separated; `scrapespy browser` "
        "runs one) the `js` engine spreads its contexts over instead of launching a browser "
        "(see [The browser pool](#the-browser-pool))",
        scrapy=True,
        shown="none",
    ),
    _env(
        "SCRAPESPY_BROWSER_ENDPOINT_TOKEN",
        "browser_endpoint_token",
        "str",
        "",
        "the token the browser servers ask for (`scrapespy browser --token-env`), sent as "
        "`Authorization: Bearer <token>`; never logged",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_BROWSER_ENDPOINT_RETRY_SECONDS",
        "browser_endpoint_retry_seconds",
        "float",
        15.0,
        "the longest a browser server that went away waits before it is tried again (from 0.5 s, "
        "doubling)",
        scrapy=True,
        minimum=0.1,
    ),
    _env(
        "SCRAPESPY_BROWSER_EGRESS_HOST",
        "browser_egress_host",
        "str",
        "127.0.0.1",
        "the address the browser's egress guard listens on and gives the browser: one the "
        "browser servers reach (the service's own address on their network)",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_MAX_PAGES",
        "max_pages",
        "int",
        4,
        "browser pages open at once",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_BROWSER_IDENTITY",
        "browser_identity",
        "str",
        "browser",
        "what the `js` engine's browser says it is: `browser`, the desktop (or phone) Chromium "
        "it is, consistently (docs/stealth.md); `honest`, the same with a user agent that names "
        "the service (`USER_AGENT`), the polite way",
        scrapy=True,
        normalize=str.lower,
    ),
    _env(
        "SCRAPESPY_BROWSER_SPARES",
        "browser_spares",
        "int",
        -1,
        "fresh browser contexts kept ready ahead of demand, each used once; `-1`: by the browser",
        scrapy=True,
        minimum=-1,
        shown="`-1`: 2, none with the full Chromium (`/usr/bin/chromium`)",
    ),
    _env(
        "SCRAPESPY_BLOCK_HEAVY_RESOURCES",
        "block_heavy_resources",
        "bool",
        True,
        "`js` pages load no media or fonts, and no images unless a screenshot or actions are asked",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS",
        "egress_test_public_hosts",
        "pairs",
        (),
        "tests only: `name=address,...` pairs the browser's egress guard treats as public hosts",
        scrapy=True,
    ),
    _env(
        "SCRAPESPY_PUBLIC_URL",
        "public_url",
        "url",
        "http://127.0.0.1:8080",
        "where the service is reached from outside (a job's `status_url`, `/docs`, "
        "`/openapi.json`'s server, checkout return URLs, secure cookies when https); set it when "
        "callers reach the service through another address (a proxy, a host name)",
        shown="the address `serve` listens on (`http://HOST:PORT`, the port actually bound with "
        "`--port 0`; `127.0.0.1` for `0.0.0.0`)",
    ),
    _env(
        "SCRAPESPY_PAYMENTS",
        "payments",
        "str",
        "",
        "`demo` simulates payments (never in production)",
        normalize=str.lower,
    ),
    _env(
        "STRIPE_SECRET_KEY",
        "stripe_secret_key",
        "str",
        "",
        "Stripe payments; without a provider `/credits/buy` answers 503",
    ),
    _env(
        "STRIPE_WEBHOOK_SECRET",
        "stripe_webhook_secret",
        "str",
        "",
        "checks the signature of Stripe's webhook calls",
    ),
    _env(
        "SCRAPESPY_STRIPE_API_BASE",
        "stripe_api_base",
        "str",
        "",
        "point the Stripe client at a local stand-in (tests)",
        shown="Stripe's",
    ),
    _env(
        "SCRAPESPY_SEARCH_BACKEND",
        "search_backend",
        "str",
        "",
        "`searxng`, `brave` or `serper` switches `POST /search` on (docs/api.md); empty: off",
        normalize=str.lower,
    ),
    _env(
        "SCRAPESPY_SEARXNG_URL",
        "searxng_url",
        "url",
        "",
        "a SearXNG instance (its JSON format enabled), for `SCRAPESPY_SEARCH_BACKEND=searxng`",
    ),
    _env(
        "SCRAPESPY_BRAVE_API_KEY",
        "brave_api_key",
        "str",
        "",
        "Brave Search API's key (`X-Subscription-Token`); never logged nor answered",
    ),
    _env(
        "SCRAPESPY_BRAVE_BASE_URL",
        "brave_base_url",
        "url",
        "https://api.search.brave.com",
        "where Brave Search API answers (a stand-in in tests)",
    ),
    _env(
        "SCRAPESPY_SERPER_API_KEY",
        "serper_api_key",
        "str",
        "",
        "Serper's key (`X-API-KEY`); never logged nor answered",
    ),
    _env(
        "SCRAPESPY_SERPER_BASE_URL",
        "serper_base_url",
        "url",
        "https://google.serper.dev",
        "where Serper answers (a stand-in in tests)",
    ),
    _env(
        "SCRAPESPY_SEARCH_CREDITS",
        "search_credits",
        "int",
        1,
        "what one search costs, besides its scraped results (not charged when it found nothing)",
    ),
    _env(
        "SCRAPESPY_SEARCH_CACHE_SECONDS",
        "search_cache_seconds",
        "int",
        60,
        "how long the backend's answer to a query is kept and given again; 0: never kept",
    ),
    _env(
        "SCRAPESPY_SEARCH_SCRAPES_IN_FLIGHT",
        "search_scrapes_in_flight",
        "int",
        10,
        "one search's results scraped at once; the others wait their turn",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_LLM_BASE_URL",
        "llm_base_url",
        "url",
        "",
        "an OpenAI-compatible chat-completions endpoint (`http://127.0.0.1:11434/v1` for a "
        "local Ollama, vLLM's, or a hosted one); without it `json.prompt`/`json.schema` and the "
        "`summary` format answer 400",
        shown="none",
    ),
    _env(
        "SCRAPESPY_LLM_MODEL",
        "llm_model",
        "str",
        "",
        "the model the endpoint runs; needed with `SCRAPESPY_LLM_BASE_URL`",
    ),
    _env(
        "SCRAPESPY_FORMAT_MODULES",
        "format_modules",
        "list",
        (),
        "comma-separated Python modules that declare more output formats (each a `FORMATS` "
        "list of `service.core.formats.Output`), declared when the service starts; "
        "docs/architecture.md, Adding a format",
        shown="none",
    ),
    _env(
        "SCRAPESPY_LLM_API_KEY",
        "llm_api_key",
        "str",
        "",
        "the endpoint's key, sent as `Authorization: Bearer`; never logged nor answered",
    ),
    _env(
        "SCRAPESPY_LLM_TIMEOUT_SECONDS",
        "llm_timeout_seconds",
        "float",
        30.0,
        "the most one call to the model may take; past it the scrape fails `llm_timeout`",
    ),
    _env(
        "SCRAPESPY_LLM_CONCURRENCY",
        "llm_concurrency",
        "int",
        4,
        "calls to the model in flight at once, per process; the others wait their turn",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_LLM_MAX_INPUT_TOKENS",
        "llm_max_input_tokens",
        "int",
        8000,
        "the page's main content sent to the model, in tokens counted as 4 characters each; "
        "a longer page is cut",
        minimum=100,
    ),
    _env(
        "SCRAPESPY_LLM_MAX_OUTPUT_TOKENS",
        "llm_max_output_tokens",
        "int",
        1000,
        "the most tokens one answer of the model may have (`max_tokens`)",
        minimum=16,
    ),
    _env(
        "SCRAPESPY_LLM_CREDITS_PER_1K_TOKENS",
        "llm_credits_per_1k_tokens",
        "int",
        1,
        "credits per started 1,000 tokens (prompt and answer) an extraction used, on top of the "
        "page's price",
    ),
    _cost("static", "none", 1),
    _cost("static", "datacenter", 2),
    _cost("static", "residential", 10),
    _cost("js", "none", 5),
    _cost("js", "datacenter", 6),
    _cost("js", "residential", 25),
    _env(
        "SCRAPESPY_MAX_CONCURRENT_SCRAPES",
        "max_concurrent_scrapes",
        "int",
        256,
        "scrapes in flight; beyond it 503 with `Retry-After: 1`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_HOLD_TTL_SECONDS",
        "hold_ttl_seconds",
        "int",
        300,
        "a hold left by a dead process or a database outage is released after this",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SWEEP_INTERVAL_SECONDS",
        "sweep_interval_seconds",
        "float",
        30.0,
        "how often expired holds are looked for",
    ),
    _env(
        "SCRAPESPY_SHUTDOWN_GRACE_SECONDS",
        "shutdown_grace_seconds",
        "float",
        30.0,
        "how long SIGTERM waits for scrapes in flight",
    ),
    _env(
        "SCRAPESPY_DB_THREADS",
        "db_threads",
        "int",
        DEFAULT_DB_THREADS,
        "threads that wait on the database (SQLite uses one); on PostgreSQL it also sizes the "
        "reactor's connections for the hold and the settlement (twice as many, at most 16). "
        "Raise it for a distant database",
        minimum=1,
        shown="cores, 2 to 8",
    ),
    _env(
        "SCRAPESPY_EXTRACT_WORKERS",
        "extract_workers",
        "int",
        DEFAULT_EXTRACT_WORKERS,
        "processes that parse fetched pages (and convert them to markdown, cleaned HTML and main "
        "content); one account's long pages use all but one; `0` parses everything on the "
        "reactor thread",
        shown="cores + 1",
    ),
    _env(
        "SCRAPESPY_ROBOTS_TTL_SECONDS",
        "robots_ttl_seconds",
        "int",
        3600,
        "how long a site's robots.txt is cached",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SESSION_SECRET",
        "session_secret",
        "str",
        "",
        "signs the dashboard's log-in and sign-up forms; set the same value on every process",
        shown="random per process",
    ),
    _env(
        "SCRAPESPY_TRUST_X_FORWARDED_FOR",
        "trust_forwarded_for",
        "bool",
        False,
        "`1` behind a reverse proxy: the dashboard's per-address limits use the last "
        "`X-Forwarded-For` address",
    ),
    _env(
        "SCRAPESPY_LOG_LEVEL",
        "log_level",
        "str",
        "INFO",
        "log level",
        scrapy="LOG_LEVEL",
        normalize=str.upper,
    ),
    _env(
        "SCRAPESPY_LOG_FORMAT",
        "log_format",
        "str",
        "json",
        "`json` lines or `text`",
        normalize=str.lower,
    ),
    _env(
        "SCRAPESPY_METRICS_TOKEN",
        "metrics_token",
        "str",
        "",
        "when set, `GET /metrics` needs `Authorization: Bearer <token>` (else 401); empty leaves "
        "it open",
    ),
    _env(
        "SCRAPESPY_MAX_SCREENSHOT_BYTES",
        "max_screenshot_bytes",
        "int",
        8 * MIB,
        "a `js` screenshot's PNG larger than this fails the scrape (`success: false`, unbilled)",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SCREENSHOT_MAX_HEIGHT",
        "screenshot_max_height",
        "int",
        10_000,
        "CSS pixels; a full-page screenshot of a taller page is cut at this height",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MAX_RAW_HTML_BYTES",
        "max_raw_html_bytes",
        "int",
        2 * MIB,
        "largest document a `raw_html` output returns; past it the scrape fails, unbilled",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_BROWSER_MAX_PAGE_BYTES",
        "browser_max_page_bytes",
        "int",
        64 * MIB,
        "what one `js` page may download, all its responses as decoded (each one is also held to "
        "the static engine's 16 MiB); past it the scrape fails at once as `too_large`, unbilled",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_BROWSER_MAX_HEAP_MB",
        "browser_max_heap_mb",
        "int",
        512,
        "a `js` renderer's JavaScript heap; a page that needs more crashes and fails as "
        "`too_large`, unbilled",
        scrapy=True,
        minimum=16,
    ),
    _env(
        "SCRAPESPY_BROWSER_MAX_RENDERER_MB",
        "browser_max_renderer_mb",
        "int",
        1024,
        "a `js` renderer process's memory (its RSS: the heap, ArrayBuffers, canvases, DOM); a "
        "renderer over it is stopped, read every 0.2 s, and its page fails as `too_large`, "
        "unbilled, while other pages go on; 0: no cap (a remote browser is never capped)",
        scrapy=True,
        minimum=0,
    ),
    _env(
        "SCRAPESPY_MAX_FIELD_CHARS",
        "max_field_chars",
        "int",
        bounds.FIELD_CHARS,
        "characters of a title, meta name or value, heading, link text or href, image URL; "
        "longer ones are cut and named in `truncated`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MAX_TEXT_CHARS",
        "max_text_chars",
        "int",
        bounds.TEXT_CHARS,
        "characters of `text`, `markdown`, `html` and each selector match; longer ones are cut "
        "and named in `truncated`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MAX_ANSWER_BYTES",
        "max_answer_bytes",
        "int",
        bounds.ANSWER_BYTES,
        "a page's fields and outputs as JSON, once cut; past it the scrape fails `too_large`, "
        "unbilled",
        minimum=1024,
    ),
    _env(
        "SCRAPESPY_EXTRACT_MAX_DEPTH",
        "extract_max_depth",
        "int",
        bounds.MAX_DEPTH,
        "a page whose tags nest deeper fails `too_large` before it is parsed (lexbor's parse of "
        "deep nesting is quadratic)",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_EXTRACT_MAX_ELEMENTS",
        "extract_max_elements",
        "int",
        bounds.MAX_ELEMENTS,
        "a page with more tags fails `too_large` before it is parsed",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_EXTRACT_MAX_SECONDS",
        "extract_max_seconds",
        "float",
        bounds.MAX_SECONDS,
        "a page's parse and conversion in a worker; past it the worker is killed and replaced "
        "and the scrape fails `too_large`",
    ),
    _env(
        "SCRAPESPY_EXTRACT_MAX_MEMORY_MB",
        "extract_max_memory_mb",
        "int",
        bounds.MAX_MEMORY_MB,
        "MiB of address space an extraction worker may use (RLIMIT_AS); a page or document "
        "that needs more fails `too_large` (or `document_unreadable` when the converter "
        "crashes on it), unbilled, and the worker is replaced; 0 sets no limit",
        minimum=0,
    ),
    _env(
        "SCRAPESPY_DOCUMENT_MAX_PAGES",
        "document_max_pages",
        "int",
        bounds.DOCUMENT_PAGES,
        "pages of a document (PDF) converted at most; a longer one fails `too_large`, unbilled",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_DOCUMENT_PAGES_PER_BLOCK",
        "document_pages_per_block",
        "int",
        10,
        "a document costs its engine's price per started block of this many pages (the "
        "scrape's hold is extended to it, else it fails document_over_budget: docs/documents.md)",
        scrapy=True,
        minimum=1,
    ),
    _env(
        "SCRAPESPY_CACHE_MAX_ENTRIES",
        "cache_max_entries",
        "int",
        1000,
        "answers kept for `max_age` (per process); `0` turns the cache off",
    ),
    _env(
        "SCRAPESPY_CACHE_MAX_BYTES",
        "cache_max_bytes",
        "int",
        64 * MIB,
        "bytes of JSON the kept answers may take (per process); the oldest go first; `0` turns "
        "the cache off",
    ),
    _env(
        "SCRAPESPY_CACHE_MAX_AGE_SECONDS",
        "cache_max_age_seconds",
        "int",
        3600,
        "the oldest answer a `max_age` can get, whatever it asks; `0` turns the cache off",
    ),
    # sessions (service.scrape.sessions): "session" on POST /scrape
    _env(
        "SCRAPESPY_SESSION_IDLE_SECONDS",
        "session_idle_seconds",
        "int",
        1800,
        "a session unused for this long ends (its cookies, storage and proxy exit are "
        "forgotten); a call's `session_idle_seconds` may ask for another, up to the maximum",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SESSION_MAX_IDLE_SECONDS",
        "session_max_idle_seconds",
        "int",
        86400,
        "the longest idle time a call's `session_idle_seconds` may ask for",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SESSIONS_PER_ACCOUNT",
        "sessions_per_account",
        "int",
        20,
        "live sessions of one account; a call naming one more is a 409 `too_many_sessions`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_SESSION_MAX_BYTES",
        "session_max_bytes",
        "int",
        256 * 1024,
        "a session's stored cookies and browser storage, as JSON; a call whose state grows "
        "past it keeps the session's cookies only, and past it again the state it had before",
        minimum=4096,
    ),
    # change tracking (service.scrape.snapshots): "change_tracking" in a scrape's formats
    _env(
        "SCRAPESPY_CHANGE_SNAPSHOTS_PER_URL",
        "change_snapshots_per_url",
        "int",
        10,
        "snapshots kept per account, URL and `change_tracking.tag` for `change_tracking` (the "
        "newest; a page is compared with the newest), at most 100",
        minimum=1,
        maximum=100,
    ),
    _env(
        "SCRAPESPY_CHANGE_RETENTION_DAYS",
        "change_retention_days",
        "int",
        30,
        "a `change_tracking` snapshot older than this is never compared with and is deleted; "
        "the page is then `new` again",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_JOB_PAGES_IN_FLIGHT",
        "job_pages_in_flight",
        "int",
        8,
        "pages of jobs (`POST /batch`) one instance scrapes at once, whatever the number of "
        "jobs; the rest of the engine stays for `POST /scrape` (as many more are being claimed "
        "or stored meanwhile)",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MAX_JOBS_PER_ACCOUNT",
        "max_jobs_per_account",
        "int",
        5,
        "jobs of one account queued or running at once; one more is a 429 `too_many_jobs`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_JOB_RESULT_MAX_BYTES",
        "job_result_max_bytes",
        "int",
        4 * MIB,
        "a page's stored result larger than this keeps its status, URL and error and loses its "
        "page fields and outputs",
        minimum=1024,
    ),
    _env(
        "SCRAPESPY_JOB_RETENTION_DAYS",
        "job_retention_days",
        "int",
        7,
        "finished jobs and their results, and monitors' checks (but each one's latest check and "
        "latest change), are deleted this many days after they were made",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_JOB_STALLED_SECONDS",
        "job_stalled_seconds",
        "float",
        30.0,
        "PostgreSQL: an instance whose job worker sent no heartbeat for this long is taken as "
        "dead, and its pages are taken over by the others",
    ),
    _env(
        "SCRAPESPY_CRAWL_PAGES_PER_SITE",
        "crawl_pages_per_site",
        "int",
        2,
        "pages of one crawl (`POST /crawl`) in flight at its site at once, across all instances "
        "together; several crawls of different sites still run side by side",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_CRAWL_DELAY_SECONDS",
        "crawl_delay_seconds",
        "float",
        0.0,
        "seconds each page of a crawl waits before its fetch, in its turn (so each of the "
        "crawl's `SCRAPESPY_CRAWL_PAGES_PER_SITE` turns fetches at most once per this many "
        "seconds); `0`: no pause",
        minimum=0,
    ),
    _env(
        "SCRAPESPY_MONITOR_MIN_INTERVAL_SECONDS",
        "monitor_min_interval_seconds",
        "int",
        300,
        "the shortest time between two runs of a monitor (`POST /monitors`); a shorter "
        "`schedule` (an interval, or a cron expression whose runs come closer) is a 400",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MONITOR_PAUSE_AFTER_UNPAID",
        "monitor_pause_after_unpaid",
        "int",
        3,
        "a monitor whose runs were skipped for want of credits this many times in a row is "
        "paused (a `failed` webhook says so); `PATCH /monitors/{id}` resumes it",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MAX_MONITORS_PER_ACCOUNT",
        "max_monitors_per_account",
        "int",
        100,
        "monitors one account may have; one more is a 429 `too_many_monitors`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_MONITOR_TICK_SECONDS",
        "monitor_tick_seconds",
        "float",
        5.0,
        "how often each instance looks for due monitors and finished runs; a run starts at "
        "most this long after its time",
    ),
    _env(
        "SCRAPESPY_MONITOR_TEST_CLOCK_FILE",
        "monitor_test_clock_file",
        "str",
        "",
        "tests only: a file holding the time (Unix seconds) the monitors' schedules read in "
        "place of the clock; empty: the clock",
    ),
    _env(
        "SCRAPESPY_MAP_CREDITS",
        "map_credits",
        "int",
        1,
        "the price of one `POST /map`, held and settled as a scrape's; `0` makes maps free",
    ),
    _env(
        "SCRAPESPY_FIRECRAWL_PAGE_DOCUMENTS",
        "firecrawl_page_documents",
        "int",
        100,
        "documents on one page of a job's results on Firecrawl's `GET /v1|v2/crawl/{id}` and "
        "`/batch/scrape/{id}` (and at most 10 MiB of them); the SDKs follow `next` to the rest",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_WEBHOOK_MAX_ATTEMPTS",
        "webhook_max_attempts",
        "int",
        6,
        "attempts of one webhook delivery before it is `failed`",
        minimum=1,
    ),
    _env(
        "SCRAPESPY_WEBHOOK_RETRY_SECONDS",
        "webhook_retry_seconds",
        "float",
        10.0,
        "the wait before a delivery's second attempt; each next one waits 4 times longer (10 s, "
        "40 s, 160 s, 640 s, 2560 s: about an hour over 6 attempts)",
    ),
    _env(
        "SCRAPESPY_WEBHOOK_TIMEOUT_SECONDS",
        "webhook_timeout_seconds",
        "float",
        10.0,
        "the time one delivery attempt may take, from name resolution to the receiver's status "
        "line",
    ),
    # Scrapy settings only (the components' own switches and tuning; no variable).
    _scrapy(
        "SCRAPESPY_BROWSER_SETTLE_SECONDS",
        "float",
        2.0,
        "longest wait for a rendered page to settle after `load`",
    ),
    _scrapy(
        "SCRAPESPY_BROWSER_QUIET_SECONDS",
        "float",
        0.1,
        "a page whose DOM changed after `load` counts as settled once no request of it is in "
        "flight and its DOM has not changed for this long, 0.5 s after load at the earliest (a "
        "request's `settle_ms` overrides it; a page unchanged since load is read at once, or "
        "66 ms after load when it has scripts)",
    ),
    _scrapy(
        "SCRAPESPY_PROXY_MAX_STRIKES",
        "int",
        3,
        "ambiguous failures in a row before a proxy is benched (at least 1)",
    ),
    _scrapy(
        "SCRAPESPY_PROXY_ATTEMPTS",
        "int",
        2,
        "proxies tried for one scrape before it goes direct (at least 1)",
    ),
    _scrapy(
        "SCRAPESPY_PROXY_POOL_ENABLED",
        "bool",
        True,
        "`False` turns the proxy pool middleware off",
    ),
    _scrapy(
        "SCRAPESPY_ANTIBOT_ENABLED",
        "bool",
        True,
        "`False` turns the anti-bot detector off",
    ),
    _scrapy(
        "SCRAPESPY_ROBOTS_MAX_SITES",
        "int",
        10_000,
        "robots.txt files kept in the cache; the oldest fetched ones are forgotten first, and a "
        "site whose robots.txt is still on its way is never dropped, so the cache may pass the "
        "cap by the robots.txt downloads in flight",
    ),
    _scrapy(
        "SCRAPESPY_EGRESS_ALLOW_HOSTS",
        "list",
        (),
        "hosts the egress guard lets through (the service sets it to its proxies' hosts)",
    ),
)

BY_ENV: dict[str, Setting] = {row.env: row for row in SETTINGS if row.env}
BY_FIELD: dict[str, Setting] = {row.field: row for row in SETTINGS if row.field}
BY_SCRAPY: dict[str, Setting] = {row.scrapy: row for row in SETTINGS if row.scrapy}


def default(field: str) -> Any:
    """The default of a Config field: its row's, or a ``dataclasses.field`` that calls it."""
    row = BY_FIELD[field]
    if callable(row.default):
        return dataclass_field(default_factory=row.default)
    return row.default


def scrapy_default(name: str) -> Any:
    """A Scrapy setting's default, as the crawler gets it (a list for several values)."""
    return scrapy_value(BY_SCRAPY[name].default_value())


def scrapy_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -------------------------------------------------------------------------------------------------
# docs/operations.md

BEGIN = "<!-- settings table: generated by `python -m service.core.settings --write` -->"
END = "<!-- end of the settings table -->"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def shown_default(row: Setting) -> str:
    """The default as the docs show it."""
    if row.shown is not None:
        return row.shown
    value = row.default_value()
    if value in ("", ()):
        return "empty"
    if isinstance(value, bool):
        if row.env:
            return "`1`" if value else "`0`"
        return f"`{value}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, int) and value >= MIB and value % MIB == 0:
        return f"`{value}` ({value // MIB} MiB)"
    return f"`{value}`"


def shown_bounds(row: Setting) -> str:
    if row.kind == "int":
        parts = [f"at least {row.minimum if row.minimum is not None else 0:g}"]
    elif row.kind == "float":
        parts = ["above 0" if row.minimum is None else f"at least {row.minimum:g}"]
    else:
        return ""
    if row.maximum is not None:
        parts.append(f"at most {row.maximum:g}")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """The two tables of docs/operations.md: the variables, then the Scrapy settings."""
    lines = [
        "| variable | default | allowed | meaning |",
        "|---|---|---|---|",
    ]
    for row in SETTINGS:
        if row.env:
            meaning = row.doc
            if row.scrapy == row.env:
                meaning += " (also the crawler's Scrapy setting)"
            elif row.scrapy:
                meaning += f" (the crawler's Scrapy setting `{row.scrapy}`)"
            lines.append(
                f"| `{row.env}` | {_cell(shown_default(row))} | {shown_bounds(row)} "
                f"| {_cell(meaning)} |"
            )
    lines += [
        "",
        "Scrapy settings of the service's crawler (`service/scrape/scrapy_settings.py`) that no",
        "variable sets, for `scrapy shell -s NAME=VALUE` or a crawler of your own:",
        "",
        "| setting | default | meaning |",
        "|---|---|---|",
    ]
    for row in SETTINGS:
        if not row.env and row.scrapy:
            lines.append(f"| `{row.scrapy}` | {_cell(shown_default(row))} | {_cell(row.doc)} |")
    return "\n".join(lines) + "\n"


def with_table(text: str) -> str:
    """``text`` (docs/operations.md) with the table between its markers replaced."""
    head, begin, rest = text.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"{DOCS.name} has no settings table markers")
    return f"{head}{BEGIN}\n\n{markdown()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        DOCS.write_text(with_table(DOCS.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if argv:
        print("usage: python -m service.core.settings [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
