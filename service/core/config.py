"""Operator configuration, read once from the environment.

Every variable has a default that works on a laptop; docs/operations.md lists them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from service.core.places import countries_of, split_tag
from service.core.settings import BY_FIELD, SETTINGS, Setting, default
from service.core.settings import default_chromium_path as default_chromium_path
from service.core.vocabulary import ENGINES, FINGERPRINTS, PROXY_TIERS, TIERS

DEFAULT_COSTS: dict[str, dict[str, int]] = {
    engine: {tier: BY_FIELD[f"costs.{engine}.{tier}"].default for tier in TIERS}
    for engine in ENGINES
}


class ConfigError(ValueError):
    """A configuration variable holds a value the service cannot use."""


def _text(env: Mapping[str, str], row: Setting) -> str:
    """A variable's text, stripped; empty when unset."""
    assert row.env is not None
    return env.get(row.env, "").strip()


def _str(env: Mapping[str, str], row: Setting) -> str:
    value = _text(env, row) or row.default_value()
    return row.normalize(value) if row.normalize else value  # type: ignore[no-any-return]


def _url(env: Mapping[str, str], row: Setting) -> str:
    return _str(env, row).rstrip("/")


def _bool(env: Mapping[str, str], row: Setting) -> bool:
    raw = _text(env, row).lower()
    if not raw:
        return bool(row.default)
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{row.env} must be 0 or 1, not {raw!r}")


def _int(env: Mapping[str, str], row: Setting) -> int:
    raw = _text(env, row)
    if not raw:
        return int(row.default)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{row.env} must be an integer, not {raw!r}") from None
    minimum = int(row.minimum) if row.minimum is not None else 0
    if value < minimum:
        raise ConfigError(f"{row.env} must be at least {minimum}")
    if row.maximum is not None and value > row.maximum:
        raise ConfigError(f"{row.env} must be at most {int(row.maximum)}")
    return value


def _float(env: Mapping[str, str], row: Setting) -> float:
    """A number; above 0 unless the row has a ``minimum`` (then at least that): a rate or a
    period of 0 means nothing, a pause of 0 means no pause."""
    raw = _text(env, row)
    if not raw:
        return float(row.default)
    name, minimum = row.env, row.minimum
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
    if row.maximum is not None and value > row.maximum:
        raise ConfigError(f"{name} must be at most {row.maximum:g}")
    return value


def _list(env: Mapping[str, str], row: Setting) -> tuple[str, ...]:
    return tuple(item.strip() for item in _text(env, row).split(",") if item.strip())


def _proxies(env: Mapping[str, str], row: Setting) -> tuple[str, ...]:
    """Comma-separated proxy URLs, plus the lines of the file named by ``<name>_FILE``."""
    name = row.env
    urls = list(_list(env, row))
    path = env.get(f"{name}_FILE", "").strip()
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                lines = [line.strip() for line in fh]
        except OSError as exc:
            raise ConfigError(f"{name}_FILE: cannot read {path}: {exc.strerror}") from None
        urls.extend(line for line in lines if line and not line.startswith("#"))
    for index, entry in enumerate(urls):
        # The message names the entry and never echoes it: it may hold a password.
        try:
            _, url = split_tag(entry)
        except ValueError as exc:
            raise ConfigError(f"{name}: entry #{index + 1}: {exc}") from None
        parts = urlsplit(url if "://" in url else f"http://{url}")
        try:
            _ = parts.port
        except ValueError:
            raise ConfigError(f"{name}: entry #{index + 1} has an invalid port") from None
        if parts.scheme != "http" or not parts.hostname:
            raise ConfigError(
                f"{name}: entry #{index + 1} must be [cc=]http://[user:password@]host:port "
                "(only http:// proxies are supported)"
            )
    return tuple(urls)


def _pairs(env: Mapping[str, str], row: Setting) -> tuple[str, ...]:
    entries = _list(env, row)
    for entry in entries:
        host, sep, address = entry.partition("=")
        try:
            ipaddress.ip_address(address.strip())
        except ValueError:
            sep = ""
        if not sep or not host.strip():
            raise ConfigError(f"{row.env} takes name=address pairs, not {entry!r}")
    return entries


# how each kind of row (service.core.settings.Kind) is read from the environment
PARSERS: dict[str, Callable[[Mapping[str, str], Setting], Any]] = {
    "str": _str,
    "url": _url,
    "bool": _bool,
    "int": _int,
    "float": _float,
    "list": _list,
    "proxies": _proxies,
    "file": _text,  # read by its proxies' row; kept here so that it is a row of its own
    "pairs": _pairs,
}


def _costs(found: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """The credits per scrape, from the ``costs.<engine>.<tier>`` rows' values in ``found``."""
    costs = {engine: dict(tiers) for engine, tiers in DEFAULT_COSTS.items()}
    for engine in ENGINES:
        for tier in TIERS:
            costs[engine][tier] = found.get(f"costs.{engine}.{tier}", costs[engine][tier])
    for engine in ENGINES:
        prices = [costs[engine][tier] for tier in TIERS]
        if prices != sorted(prices):
            raise ConfigError(f"{engine} costs must not decrease from {TIERS[0]} to {TIERS[-1]}")
    return costs


@cache
def _countries(*proxies: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each proxy tier's countries, from its proxies (``proxies``, in the tiers' order)."""
    return {tier: countries_of(its) for tier, its in zip(PROXY_TIERS, proxies, strict=True)}


@dataclass(frozen=True)
class Config:
    """The operator's configuration. Each field's default is its row's in
    :data:`service.core.settings.SETTINGS`, the one place that says it."""

    database_url: str = default("database_url")
    allow_private_targets: bool = default("allow_private_targets")
    static_fingerprint: str = default("static_fingerprint")  # vocabulary.FINGERPRINTS
    proxies_datacenter: tuple[str, ...] = default("proxies_datacenter")
    proxies_residential: tuple[str, ...] = default("proxies_residential")
    residential_trials: int = default("residential_trials")
    proxy_bench_seconds: float = default("proxy_bench_seconds")
    rate_limit_per_second: float = default("rate_limit_per_second")
    rate_limit_burst: int = default("rate_limit_burst")
    redis_url: str = default("redis_url")
    chromium_path: str = default("chromium_path")
    browser_url: str = default("browser_url")
    browser_endpoints: tuple[str, ...] = default("browser_endpoints")
    browser_endpoint_token: str = field(default=default("browser_endpoint_token"), repr=False)
    browser_endpoint_retry_seconds: float = default("browser_endpoint_retry_seconds")
    browser_egress_host: str = default("browser_egress_host")
    max_pages: int = default("max_pages")
    browser_spares: int = default("browser_spares")
    browser_identity: str = default("browser_identity")
    block_heavy_resources: bool = default("block_heavy_resources")
    # TEST ONLY, empty by default: "name=address" pairs the browser egress guard treats as public.
    egress_test_public_hosts: tuple[str, ...] = default("egress_test_public_hosts")
    # where callers reach the service (job status_url, /docs, /openapi.json, checkout returns);
    # unless SCRAPESPY_PUBLIC_URL sets it, the address it listens on (Config.listening_at)
    public_url: str = default("public_url")
    public_url_configured: bool = False  # derived: SCRAPESPY_PUBLIC_URL is set
    payments: str = default("payments")
    stripe_secret_key: str = default("stripe_secret_key")
    stripe_webhook_secret: str = default("stripe_webhook_secret")
    stripe_api_base: str = default("stripe_api_base")
    # the search backend (service.search.provider); none when search_backend is empty
    search_backend: str = default("search_backend")
    searxng_url: str = default("searxng_url")
    brave_api_key: str = field(default=default("brave_api_key"), repr=False)
    brave_base_url: str = default("brave_base_url")
    serper_api_key: str = field(default=default("serper_api_key"), repr=False)
    serper_base_url: str = default("serper_base_url")
    search_credits: int = default("search_credits")
    search_cache_seconds: int = default("search_cache_seconds")
    search_scrapes_in_flight: int = default("search_scrapes_in_flight")
    # the operator's language model (service.extraction.llm); none without a base URL
    llm_base_url: str = default("llm_base_url")
    llm_model: str = default("llm_model")
    llm_api_key: str = field(default=default("llm_api_key"), repr=False)
    # modules declaring the deployment's own formats (service.core.formats), declared at start
    format_modules: tuple[str, ...] = default("format_modules")
    llm_timeout_seconds: float = default("llm_timeout_seconds")
    llm_concurrency: int = default("llm_concurrency")
    llm_max_input_tokens: int = default("llm_max_input_tokens")
    llm_max_output_tokens: int = default("llm_max_output_tokens")
    llm_credits_per_1k_tokens: int = default("llm_credits_per_1k_tokens")
    # derived: the SCRAPESPY_COST_<ENGINE>_<TIER> rows (costs.<engine>.<tier>)
    costs: dict[str, dict[str, int]] = field(default_factory=lambda: _costs({}))
    max_concurrent_scrapes: int = default("max_concurrent_scrapes")
    hold_ttl_seconds: int = default("hold_ttl_seconds")
    sweep_interval_seconds: float = default("sweep_interval_seconds")
    shutdown_grace_seconds: float = default("shutdown_grace_seconds")
    db_threads: int = default("db_threads")
    # processes that parse pages (service.extraction.pool); 0 parses on the reactor thread.
    # Two, so that one page that is slow to parse does not queue every other page behind it.
    extract_workers: int = default("extract_workers")
    robots_ttl_seconds: int = default("robots_ttl_seconds")
    session_secret: str = default("session_secret")
    trust_forwarded_for: bool = default("trust_forwarded_for")
    log_level: str = default("log_level")
    log_format: str = default("log_format")
    # empty: /metrics is open; else it needs "Authorization: Bearer <token>"
    metrics_token: str = field(default=default("metrics_token"), repr=False)
    # a js screenshot's PNG larger than this fails the scrape; the full page is cut at this height
    max_screenshot_bytes: int = default("max_screenshot_bytes")
    screenshot_max_height: int = default("screenshot_max_height")
    # what one js page may bring in, all its responses as decoded (each one is also held to
    # the static engine's DOWNLOAD_MAXSIZE); past it the scrape fails as too_large
    browser_max_page_bytes: int = default("browser_max_page_bytes")
    # a renderer's JavaScript heap (V8's old space), in MB; past it the page crashes
    browser_max_heap_mb: int = default("browser_max_heap_mb")
    # a renderer process's resident memory, in MB; past it the renderer is stopped (0: no cap)
    browser_max_renderer_mb: int = default("browser_max_renderer_mb")
    # "formats": ["raw_html"] answers a failure past this many bytes of the document
    max_raw_html_bytes: int = default("max_raw_html_bytes")
    # an answer's fields (service.extraction.bounds): a short one (title, meta, heading, link,
    # image URL) and a long one (text, markdown, html, a selector's match) is cut past these
    # characters; a whole answer past max_answer_bytes fails too_large
    max_field_chars: int = default("max_field_chars")
    max_text_chars: int = default("max_text_chars")
    max_answer_bytes: int = default("max_answer_bytes")
    # a page nesting elements deeper, with more of them, or taking longer to parse and convert
    # fails too_large (lexbor's parse of deep nesting is quadratic and cannot be interrupted)
    extract_max_depth: int = default("extract_max_depth")
    extract_max_elements: int = default("extract_max_elements")
    extract_max_seconds: float = default("extract_max_seconds")
    # an extraction worker's address space (MiB, RLIMIT_AS): a decompression bomb fails, alone
    extract_max_memory_mb: int = default("extract_max_memory_mb")
    # documents (service.extraction.documents): pages converted at most, pages billed per block
    document_max_pages: int = default("document_max_pages")
    document_pages_per_block: int = default("document_pages_per_block")
    # answers kept for "max_age" (service.scrape.answer_cache), in each process: how many, how many
    # bytes of JSON, how long at most; 0 entries or bytes turns the cache off
    cache_max_entries: int = default("cache_max_entries")
    cache_max_bytes: int = default("cache_max_bytes")
    cache_max_age_seconds: int = default("cache_max_age_seconds")
    # sessions (service.scrape.sessions): idle time by default and at most, how many per account,
    # and the bytes of a session's stored state
    session_idle_seconds: int = default("session_idle_seconds")
    session_max_idle_seconds: int = default("session_max_idle_seconds")
    sessions_per_account: int = default("sessions_per_account")
    session_max_bytes: int = default("session_max_bytes")
    # change tracking (service.scrape.snapshots): snapshots kept per account, URL and tag, and
    # how long
    change_snapshots_per_url: int = default("change_snapshots_per_url")
    change_retention_days: int = default("change_retention_days")
    # jobs (POST /batch, service.jobs.batches): pages of jobs one instance scrapes at once, so that
    # jobs never take more than this share of the engine from POST /scrape callers
    job_pages_in_flight: int = default("job_pages_in_flight")
    # jobs of one account queued or running at once; one more is a 429 too_many_jobs
    max_jobs_per_account: int = default("max_jobs_per_account")
    # a page's stored result larger than this keeps its status and loses its page fields
    job_result_max_bytes: int = default("job_result_max_bytes")
    # jobs, their results and Idempotency-Key answers are deleted this long after their start
    job_retention_days: int = default("job_retention_days")
    # PostgreSQL: an instance whose queue worker sent no heartbeat for this long is taken as dead
    # and its pages are taken over by the others
    job_stalled_seconds: float = default("job_stalled_seconds")
    # POST /crawl (service.jobs.crawls): a crawl's pages in flight at once, across all instances, so
    # that a crawl is polite to its site; and the pause each takes before its fetch
    crawl_pages_per_site: int = default("crawl_pages_per_site")
    crawl_delay_seconds: float = default("crawl_delay_seconds")
    # POST /monitors (service.jobs.monitors): the shortest schedule, the unpaid runs in a row
    # that pause a monitor, how many an account may have, how often the instances look for due
    # ones, and (tests only) a file that holds the time their schedules read
    monitor_min_interval_seconds: int = default("monitor_min_interval_seconds")
    monitor_pause_after_unpaid: int = default("monitor_pause_after_unpaid")
    max_monitors_per_account: int = default("max_monitors_per_account")
    monitor_tick_seconds: float = default("monitor_tick_seconds")
    monitor_test_clock_file: str = default("monitor_test_clock_file")
    # POST /map: its price in credits, held and settled as a scrape's (0: free)
    map_credits: int = default("map_credits")
    # Firecrawl's GET /v{1,2}/crawl/{id} and /batch/scrape/{id}: documents on one page of a job's
    # results (service.firecrawl.routes); the SDKs follow "next" to the others
    firecrawl_page_documents: int = default("firecrawl_page_documents")

    # webhooks (service.jobs.webhooks): attempts of one delivery, the wait before the second (each
    # next one waits 4 times longer: 10 s, 40 s, 160 s, 640 s, 2560 s, about an hour in all), and
    # the time one attempt may take
    webhook_max_attempts: int = default("webhook_max_attempts")
    webhook_retry_seconds: float = default("webhook_retry_seconds")
    webhook_timeout_seconds: float = default("webhook_timeout_seconds")

    @property
    def model_configured(self) -> bool:
        """Whether the operator gave a language model (json.prompt and summary need one)."""
        return bool(self.llm_base_url)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """The configuration the environment gives: the only reader of ``SCRAPESPY_*``.

        Each variable is a row of :data:`service.core.settings.SETTINGS`, read by its kind's
        parser (:data:`PARSERS`); an unset or empty variable keeps the row's default.
        """
        env = os.environ if env is None else env
        found: dict[str, Any] = {}
        for row in SETTINGS:
            if row.env is not None:
                value = PARSERS[row.kind](env, row)
                if row.field is not None:
                    found[row.field] = value
        if found["static_fingerprint"] not in FINGERPRINTS:
            raise ConfigError(
                f"SCRAPESPY_STATIC_FINGERPRINT must be one of {', '.join(FINGERPRINTS)}"
            )
        costs = {name: found.pop(name) for name in list(found) if name.startswith("costs.")}
        if found["llm_base_url"] and not found["llm_model"]:
            raise ConfigError("SCRAPESPY_LLM_BASE_URL needs SCRAPESPY_LLM_MODEL, the model to ask")
        if found["browser_identity"] not in ("browser", "honest"):
            raise ConfigError("SCRAPESPY_BROWSER_IDENTITY is browser or honest")
        for index, endpoint in enumerate(found["browser_endpoints"]):
            # the entry itself is not shown: it may carry a token
            if not endpoint.startswith(("ws://", "wss://")) or len(endpoint) < 8:
                raise ConfigError(
                    f"SCRAPESPY_BROWSER_ENDPOINTS: entry #{index + 1} is not a ws:// URL"
                )
        return cls(
            **found,
            costs=_costs(costs),
            public_url_configured=bool(env.get("SCRAPESPY_PUBLIC_URL", "").strip()),
        )

    @property
    def countries(self) -> dict[str, tuple[str, ...]]:
        """Proxy tier -> the countries its proxies are tagged with (service.core.places)."""
        return _countries(*(tuple(self.proxies_of(tier)) for tier in PROXY_TIERS))

    def proxies_of(self, tier: str) -> tuple[str, ...]:
        """The proxies of the proxy tier ``tier`` (its ``SCRAPESPY_PROXIES_<TIER>`` setting)."""
        return tuple(getattr(self, f"proxies_{tier}"))

    def listening_at(self, address: str) -> Config:
        """This configuration for a service listening at ``address`` (``http://host:port``): the
        public URL is that address unless the operator set one."""
        if self.public_url_configured:
            return self
        return replace(self, public_url=address)
