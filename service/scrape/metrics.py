"""The scrape engine's Prometheus metrics: scrapes by engine, tier and outcome, their time,
the credits billed, the holds open and the browser's contexts and pages. ``/metrics`` serves
every metric of the process (:func:`metrics_page`), the HTTP front's own among them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from service.scrape.results import ScrapeResult

SCRAPES = Counter(
    "scrapespy_scrapes_total",
    "Scrapes by engine, tier asked, tier used and outcome",
    ["engine", "tier_requested", "tier_used", "success", "blocked"],
)
SCRAPE_LATENCY = Histogram(
    "scrapespy_scrape_seconds",
    "Scrape time (elapsed_ms) by engine",
    ["engine"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60, 120),
)
CREDITS_CAPTURED = Counter("scrapespy_credits_captured_total", "Credits billed for scrapes")
HOLDS_OPEN = Gauge("scrapespy_holds_open", "Credit holds of this process not yet settled")
BROWSER_PAGES = Gauge("scrapespy_browser_pages_open", "Browser pages open")
BROWSER_CONTEXTS = Gauge("scrapespy_browser_contexts_open", "Browser contexts open")
# SCRAPESPY_BROWSER_ENDPOINTS (service.browser.pool), by endpoint (scheme, host, port, path)
BROWSER_ENDPOINT_RENDERS = Counter(
    "scrapespy_browser_endpoint_renders_total",
    "js renders given to each browser server",
    ["endpoint"],
)
BROWSER_ENDPOINT_UP = Gauge(
    "scrapespy_browser_endpoint_up", "1 while the browser server is connected, else 0", ["endpoint"]
)

# (metric, label values) -> the labelled series; labels() costs a lock and a validation per call.
# The label values are drawn from small fixed sets (endpoints, statuses, engines, tiers).
_SERIES: dict[tuple[Any, tuple[str, ...]], Any] = {}


def series(metric: Any, *labels: str) -> Any:
    found = _SERIES.get((metric, labels))
    if found is None:
        found = _SERIES[metric, labels] = metric.labels(*labels)
    return found


def record_scrape(result: ScrapeResult, tier_requested: str, tier_used: str, charged: int) -> None:
    engine = result.engine
    success = "true" if result.success else "false"
    blocked = "true" if result.blocked else "false"
    series(SCRAPES, engine, tier_requested, tier_used, success, blocked).inc()
    series(SCRAPE_LATENCY, engine).observe(result.elapsed_ms / 1000)
    if charged:
        CREDITS_CAPTURED.inc(charged)


def watch_browser(handler: Any) -> None:
    """Report the js engine's open contexts and pages, read when /metrics is scraped."""

    def browsers() -> list[Any]:
        # the pool's browsers with SCRAPESPY_BROWSER_ENDPOINTS, else the one browser
        if hasattr(handler, "browsers"):
            return list(handler.browsers)
        browser = getattr(handler, "browser", None)
        return [browser] if browser is not None else []

    def contexts() -> int:
        return sum(len(browser.contexts) for browser in browsers())

    def pages() -> int:
        return sum(len(context.pages) for b in browsers() for context in b.contexts)

    BROWSER_CONTEXTS.set_function(contexts)
    BROWSER_PAGES.set_function(pages)


def metrics_page() -> tuple[bytes, str]:
    return generate_latest(), CONTENT_TYPE_LATEST
