"""Operator configuration, read once from the environment.

Every variable has a default that works on a laptop; docs/operations.md lists them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from service.core.vocabulary import ENGINES, TIERS
from service.extraction import bounds

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


DEFAULT_COSTS: dict[str, dict[str, int]] = {
    "static": {"none": 1, "datacenter": 2, "residential": 10},
    "js": {"none": 5, "datacenter": 6, "residential": 25},
}


class ConfigError(ValueError):
    """A configuration variable holds a value the service cannot use."""


def _str(env: Mapping[str, str], name: str, default: str) -> str:
    return env.get(name, "").strip() or default


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be 0 or 1, not {raw!r}")


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}")
    return value


def _float(
    env: Mapping[str, str], name: str, default: float, minimum: float | None = None
) -> float:
    """A number; above 0 unless ``minimum`` is given (then at least ``minimum``): a rate or a
    period of 0 means nothing, a pause of 0 means no pause."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"{name} must be a finite number, not {raw!r}")
    if minimum is None and value <= 0:
        raise ConfigError(f"{name} must be greater than 0")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be at least {minimum:g}")
    return value


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in env.get(name, "").split(",") if item.strip())


def _proxies(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Comma-separated proxy URLs, plus the lines of the file named by ``<name>_FILE``."""
    urls = list(_list(env, name))
    path = env.get(f"{name}_FILE", "").strip()
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [line.strip() for line in fh]
        except OSError as exc:
            raise ConfigError(f"{name}_FILE: cannot read {path}: {exc.strerror}") from None
        urls.extend(line for line in lines if line and not line.startswith("#"))
    for index, url in enumerate(urls):
        # The message names the entry and never echoes it: it may hold a password.
        parts = urlsplit(url if "://" in url else f"http://{url}")
        try:
            _ = parts.port
        except ValueError:
            raise ConfigError(f"{name}: entry #{index + 1} has an invalid port") from None
        if parts.scheme != "http" or not parts.hostname:
            raise ConfigError(
                f"{name}: entry #{index + 1} must be http://[user:password@]host:port "
                "(only http:// proxies are supported)"
            )
    return tuple(urls)


def _test_public_hosts(env: Mapping[str, str]) -> tuple[str, ...]:
    name = "SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS"
    entries = _list(env, name)
    for entry in entries:
        host, sep, address = entry.partition("=")
        try:
            ipaddress.ip_address(address.strip())
        except ValueError:
            sep = ""
        if not sep or not host.strip():
            raise ConfigError(f"{name} takes name=address pairs, not {entry!r}")
    return entries


def _costs(env: Mapping[str, str]) -> dict[str, dict[str, int]]:
    costs = {engine: dict(tiers) for engine, tiers in DEFAULT_COSTS.items()}
    for engine in ENGINES:
        for tier in TIERS:
            name = f"SCRAPESPY_COST_{engine.upper()}_{tier.upper()}"
            costs[engine][tier] = _int(env, name, costs[engine][tier])
    for engine in ENGINES:
        if not costs[engine]["none"] <= costs[engine]["datacenter"] <= costs[engine]["residential"]:
            raise ConfigError(f"{engine} costs must not decrease from none to residential")
    return costs


@dataclass(frozen=True)
class Config:
    database_url: str = "sqlite:///var/scrapespy.db"
    allow_private_targets: bool = False
    proxies_datacenter: tuple[str, ...] = ()
    proxies_residential: tuple[str, ...] = ()
    residential_trials: int = 10
    proxy_bench_seconds: float = 60.0
    rate_limit_per_second: float = 10.0
    rate_limit_burst: int = 20
    redis_url: str = ""
    chromium_path: str = field(default_factory=default_chromium_path)
    browser_url: str = ""
    max_pages: int = 4
    block_heavy_resources: bool = True
    # TEST ONLY, empty by default: "name=address" pairs the browser egress guard treats as public.
    egress_test_public_hosts: tuple[str, ...] = ()
    # where callers reach the service (job status_url, /docs, /openapi.json, checkout returns);
    # unless SCRAPESPY_PUBLIC_URL sets it, the address it listens on (Config.listening_at)
    public_url: str = "http://127.0.0.1:8080"
    public_url_configured: bool = False
    payments: str = ""
    stripe_secret_key: str = ""
    stripe_webhook_secret: str = ""
    stripe_api_base: str = ""
    costs: dict[str, dict[str, int]] = field(default_factory=lambda: _costs({}))
    max_concurrent_scrapes: int = 256
    hold_ttl_seconds: int = 300
    sweep_interval_seconds: float = 30.0
    shutdown_grace_seconds: float = 30.0
    db_threads: int = DEFAULT_DB_THREADS
    # processes that parse pages (service.extraction.pool); 0 parses on the reactor thread.
    # Two, so that one page that is slow to parse does not queue every other page behind it.
    extract_workers: int = 2
    robots_ttl_seconds: int = 3600
    session_secret: str = ""
    trust_forwarded_for: bool = False
    log_level: str = "INFO"
    log_format: str = "json"
    # empty: /metrics is open; else it needs "Authorization: Bearer <token>"
    metrics_token: str = field(default="", repr=False)
    # a js screenshot's PNG larger than this fails the scrape; the full page is cut at this height
    max_screenshot_bytes: int = 8 * 1024 * 1024
    screenshot_max_height: int = 10_000
    # what one js page may bring in, all its responses as decoded (each one is also held to
    # the static engine's DOWNLOAD_MAXSIZE); past it the scrape fails as too_large
    browser_max_page_bytes: int = 64 * 1024 * 1024
    # a renderer's JavaScript heap (V8's old space), in MB; past it the page crashes
    browser_max_heap_mb: int = 512
    # "formats": ["raw_html"] answers a failure past this many bytes of the document
    max_raw_html_bytes: int = 2 * 1024 * 1024
    # an answer's fields (service.extraction.bounds): a short one (title, meta, heading, link,
    # image URL) and a long one (text, markdown, html, a selector's match) is cut past these
    # characters; a whole answer past max_answer_bytes fails too_large
    max_field_chars: int = bounds.FIELD_CHARS
    max_text_chars: int = bounds.TEXT_CHARS
    max_answer_bytes: int = bounds.ANSWER_BYTES
    # a page nesting elements deeper, with more of them, or taking longer to parse and convert
    # fails too_large (lexbor's parse of deep nesting is quadratic and cannot be interrupted)
    extract_max_depth: int = bounds.MAX_DEPTH
    extract_max_elements: int = bounds.MAX_ELEMENTS
    extract_max_seconds: float = bounds.MAX_SECONDS
    # answers kept for "max_age" (service.scrape.answer_cache), in each process: how many, how many
    # bytes of JSON, how long at most; 0 entries or bytes turns the cache off
    cache_max_entries: int = 1000
    cache_max_bytes: int = 64 * 1024 * 1024
    cache_max_age_seconds: int = 3600
    # jobs (POST /batch, service.jobs.batches): pages of jobs one instance scrapes at once, so that
    # jobs never take more than this share of the engine from POST /scrape callers
    job_pages_in_flight: int = 8
    # jobs of one account queued or running at once; one more is a 429 too_many_jobs
    max_jobs_per_account: int = 5
    # a page's stored result larger than this keeps its status and loses its page fields
    job_result_max_bytes: int = 4 * 1024 * 1024
    # jobs, their results and Idempotency-Key answers are deleted this long after their start
    job_retention_days: int = 7
    # PostgreSQL: an instance whose queue worker sent no heartbeat for this long is taken as dead
    # and its pages are taken over by the others
    job_stalled_seconds: float = 30.0
    # POST /crawl (service.jobs.crawls): a crawl's pages in flight at once, across all instances, so
    # that a crawl is polite to its site; and the pause each takes before its fetch
    crawl_pages_per_site: int = 2
    crawl_delay_seconds: float = 0.0
    # POST /map: its price in credits, held and settled as a scrape's (0: free)
    map_credits: int = 1

    # webhooks (service.jobs.webhooks): attempts of one delivery, the wait before the second (each
    # next one waits 4 times longer: 10 s, 40 s, 160 s, 640 s, 2560 s, about an hour in all), and
    # the time one attempt may take
    webhook_max_attempts: int = 6
    webhook_retry_seconds: float = 10.0
    webhook_timeout_seconds: float = 10.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """The configuration the environment gives: the only reader of ``SCRAPESPY_*``.

        An unset or empty variable keeps the field's default, written once, above.
        """
        env = os.environ if env is None else env
        return cls(
            database_url=_str(env, "SCRAPESPY_DATABASE_URL", cls.database_url),
            allow_private_targets=_bool(
                env, "SCRAPESPY_ALLOW_PRIVATE_TARGETS", cls.allow_private_targets
            ),
            proxies_datacenter=_proxies(env, "SCRAPESPY_PROXIES_DATACENTER"),
            proxies_residential=_proxies(env, "SCRAPESPY_PROXIES_RESIDENTIAL"),
            residential_trials=_int(env, "SCRAPESPY_RESIDENTIAL_TRIALS", cls.residential_trials),
            proxy_bench_seconds=_float(
                env, "SCRAPESPY_PROXY_BENCH_SECONDS", cls.proxy_bench_seconds
            ),
            rate_limit_per_second=_float(
                env, "SCRAPESPY_RATE_LIMIT_PER_SECOND", cls.rate_limit_per_second
            ),
            rate_limit_burst=_int(
                env, "SCRAPESPY_RATE_LIMIT_BURST", cls.rate_limit_burst, minimum=1
            ),
            redis_url=_str(env, "SCRAPESPY_REDIS_URL", cls.redis_url),
            chromium_path=_str(env, "SCRAPESPY_CHROMIUM_PATH", "") or default_chromium_path(),
            browser_url=_str(env, "SCRAPESPY_BROWSER_URL", cls.browser_url),
            max_pages=_int(env, "SCRAPESPY_MAX_PAGES", cls.max_pages, minimum=1),
            block_heavy_resources=_bool(
                env, "SCRAPESPY_BLOCK_HEAVY_RESOURCES", cls.block_heavy_resources
            ),
            egress_test_public_hosts=_test_public_hosts(env),
            public_url=_str(env, "SCRAPESPY_PUBLIC_URL", cls.public_url).rstrip("/"),
            public_url_configured=bool(_str(env, "SCRAPESPY_PUBLIC_URL", "")),
            payments=_str(env, "SCRAPESPY_PAYMENTS", cls.payments).lower(),
            stripe_secret_key=_str(env, "STRIPE_SECRET_KEY", cls.stripe_secret_key),
            stripe_webhook_secret=_str(env, "STRIPE_WEBHOOK_SECRET", cls.stripe_webhook_secret),
            stripe_api_base=_str(env, "SCRAPESPY_STRIPE_API_BASE", cls.stripe_api_base),
            costs=_costs(env),
            max_concurrent_scrapes=_int(
                env, "SCRAPESPY_MAX_CONCURRENT_SCRAPES", cls.max_concurrent_scrapes, minimum=1
            ),
            hold_ttl_seconds=_int(
                env, "SCRAPESPY_HOLD_TTL_SECONDS", cls.hold_ttl_seconds, minimum=1
            ),
            sweep_interval_seconds=_float(
                env, "SCRAPESPY_SWEEP_INTERVAL_SECONDS", cls.sweep_interval_seconds
            ),
            shutdown_grace_seconds=_float(
                env, "SCRAPESPY_SHUTDOWN_GRACE_SECONDS", cls.shutdown_grace_seconds
            ),
            db_threads=_int(env, "SCRAPESPY_DB_THREADS", cls.db_threads, minimum=1),
            extract_workers=_int(env, "SCRAPESPY_EXTRACT_WORKERS", cls.extract_workers),
            robots_ttl_seconds=_int(
                env, "SCRAPESPY_ROBOTS_TTL_SECONDS", cls.robots_ttl_seconds, minimum=1
            ),
            session_secret=_str(env, "SCRAPESPY_SESSION_SECRET", cls.session_secret),
            trust_forwarded_for=_bool(
                env, "SCRAPESPY_TRUST_X_FORWARDED_FOR", cls.trust_forwarded_for
            ),
            log_level=_str(env, "SCRAPESPY_LOG_LEVEL", cls.log_level).upper(),
            log_format=_str(env, "SCRAPESPY_LOG_FORMAT", cls.log_format).lower(),
            metrics_token=_str(env, "SCRAPESPY_METRICS_TOKEN", cls.metrics_token),
            max_screenshot_bytes=_int(
                env, "SCRAPESPY_MAX_SCREENSHOT_BYTES", cls.max_screenshot_bytes, minimum=1
            ),
            screenshot_max_height=_int(
                env, "SCRAPESPY_SCREENSHOT_MAX_HEIGHT", cls.screenshot_max_height, minimum=1
            ),
            max_raw_html_bytes=_int(
                env, "SCRAPESPY_MAX_RAW_HTML_BYTES", cls.max_raw_html_bytes, minimum=1
            ),
            browser_max_page_bytes=_int(
                env, "SCRAPESPY_BROWSER_MAX_PAGE_BYTES", cls.browser_max_page_bytes, minimum=1
            ),
            browser_max_heap_mb=_int(
                env, "SCRAPESPY_BROWSER_MAX_HEAP_MB", cls.browser_max_heap_mb, minimum=16
            ),
            max_field_chars=_int(env, "SCRAPESPY_MAX_FIELD_CHARS", cls.max_field_chars, minimum=1),
            max_text_chars=_int(env, "SCRAPESPY_MAX_TEXT_CHARS", cls.max_text_chars, minimum=1),
            max_answer_bytes=_int(
                env, "SCRAPESPY_MAX_ANSWER_BYTES", cls.max_answer_bytes, minimum=1024
            ),
            extract_max_depth=_int(
                env, "SCRAPESPY_EXTRACT_MAX_DEPTH", cls.extract_max_depth, minimum=1
            ),
            extract_max_elements=_int(
                env, "SCRAPESPY_EXTRACT_MAX_ELEMENTS", cls.extract_max_elements, minimum=1
            ),
            extract_max_seconds=_float(
                env, "SCRAPESPY_EXTRACT_MAX_SECONDS", cls.extract_max_seconds
            ),
            cache_max_entries=_int(env, "SCRAPESPY_CACHE_MAX_ENTRIES", cls.cache_max_entries),
            cache_max_bytes=_int(env, "SCRAPESPY_CACHE_MAX_BYTES", cls.cache_max_bytes),
            cache_max_age_seconds=_int(
                env, "SCRAPESPY_CACHE_MAX_AGE_SECONDS", cls.cache_max_age_seconds
            ),
            job_pages_in_flight=_int(
                env, "SCRAPESPY_JOB_PAGES_IN_FLIGHT", cls.job_pages_in_flight, minimum=1
            ),
            max_jobs_per_account=_int(
                env, "SCRAPESPY_MAX_JOBS_PER_ACCOUNT", cls.max_jobs_per_account, minimum=1
            ),
            job_result_max_bytes=_int(
                env, "SCRAPESPY_JOB_RESULT_MAX_BYTES", cls.job_result_max_bytes, minimum=1024
            ),
            job_retention_days=_int(
                env, "SCRAPESPY_JOB_RETENTION_DAYS", cls.job_retention_days, minimum=1
            ),
            job_stalled_seconds=_float(
                env, "SCRAPESPY_JOB_STALLED_SECONDS", cls.job_stalled_seconds
            ),
            crawl_pages_per_site=_int(
                env, "SCRAPESPY_CRAWL_PAGES_PER_SITE", cls.crawl_pages_per_site, minimum=1
            ),
            crawl_delay_seconds=_float(
                env, "SCRAPESPY_CRAWL_DELAY_SECONDS", cls.crawl_delay_seconds, minimum=0
            ),
            map_credits=_int(env, "SCRAPESPY_MAP_CREDITS", cls.map_credits),
            webhook_max_attempts=_int(
                env, "SCRAPESPY_WEBHOOK_MAX_ATTEMPTS", cls.webhook_max_attempts, minimum=1
            ),
            webhook_retry_seconds=_float(
                env, "SCRAPESPY_WEBHOOK_RETRY_SECONDS", cls.webhook_retry_seconds
            ),
            webhook_timeout_seconds=_float(
                env, "SCRAPESPY_WEBHOOK_TIMEOUT_SECONDS", cls.webhook_timeout_seconds
            ),
        )

    def listening_at(self, address: str) -> Config:
        """This configuration for a service listening at ``address`` (``http://host:port``): the
        public URL is that address unless the operator set one."""
        if self.public_url_configured:
            return self
        return replace(self, public_url=address)
