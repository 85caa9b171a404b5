"""What a scrape's request carries in its meta: every key named once, with typed access.

A scrape's Scrapy request (and its response: ``response.meta`` is the request's) carries the
order it serves and what the components tell each other about it. Each key below says who
writes it and who reads it. The accessors take the request or the response
(``meta.deadline(request)``); code that holds the meta dict itself (a request being built, the
browser's helpers) uses the key's name.

The ``playwright*`` keys are scrapy-playwright's, named here because several components write
them; Scrapy's own (``download_timeout``, ``proxy``, ``cookiejar``...) keep their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from service.scrape import timings

if TYPE_CHECKING:
    from service.core.escalation import Ladder
    from service.scrape.order import ScrapeOrder


class Carrier(Protocol):
    """A Scrapy request or response."""

    @property
    def meta(self) -> dict[str, Any]: ...


# --- The scrape --------------------------------------------------------------------------------

# ScrapeOrder: spiders.feed writes; the spiders' items, middlewares.escalation, service.browser read
ORDER = "scrapespy_order"
# service.scrape.timings.Clock: spiders.feed writes; service.scrape.timings reads (and adds to)
CLOCK = timings.CLOCK
# float, time.monotonic() when the scrape's time is up: spiders.feed writes; the deadline, proxy
# pool and escalation middlewares and service.browser read
DEADLINE = "scrapespy_deadline"

# --- Proxies and escalation -------------------------------------------------------------------

# str, the proxy tier asked for: spiders.feed and middlewares.escalation write; the proxy pool
# and escalation middlewares read
PROXY_TIER = "scrapespy_proxy_tier"
# str, the tier that carried the request ("none" when direct): middlewares.proxy_pool writes;
# middlewares.escalation and pipelines.result read
TIER_USED = "scrapespy_tier_used"
# str, the proxy in use, "<tier>/<n>" (no credentials): middlewares.proxy_pool writes and reads;
# middlewares.escalation drops it for the next attempt
PROXY_IN_USE = "scrapespy_proxy"
# list[str], the proxies that failed this request: middlewares.proxy_pool writes and reads
PROXIES_FAILED = "scrapespy_proxies_failed"
# str, the country whose proxies alone may carry the request (location.country): spiders.feed
# writes; middlewares.proxy_pool reads
COUNTRY = "scrapespy_country"
# str, the anti-bot vendor whose page the answer is: middlewares.antibot writes;
# middlewares.escalation and pipelines.result read
BLOCK_REASON = "scrapespy_block_reason"
# str, the fingerprint a static attempt presents (service.core.vocabulary.FINGERPRINTS):
# middlewares.escalation writes (chrome after a block); service.impersonation and
# middlewares.escalation read; absent, SCRAPESPY_STATIC_FINGERPRINT's
FINGERPRINT = "scrapespy_fingerprint"
# service.core.escalation.Ladder of an auto scrape: middlewares.escalation (start_escalation,
# called by spiders.feed) writes; middlewares.escalation reads
LADDER = "scrapespy_ladder"
# float, time.monotonic() when the attempt started: middlewares.escalation writes and reads
ATTEMPT_STARTED = "scrapespy_attempt_started"

# --- The browser (service.scrape.browser_request writes what the caller asked) -----------------

# {"full_page": bool}: browser_request writes; service.browser.screenshot reads
SCREENSHOT = "scrapespy_screenshot"
# bytes, the PNG: service.browser.screenshot writes; pipelines.result reads
SCREENSHOT_PNG = "scrapespy_screenshot_png"
# {"selector": S} or {"ms": N}: browser_request writes; service.browser.actions reads
WAIT_FOR = "scrapespy_wait_for"
# int, the caller's quiet period in ms: browser_request writes; service.browser.handler reads
SETTLE_MS = "scrapespy_settle_ms"
# list of the steps, in order: browser_request writes; service.browser.actions reads
ACTIONS = "scrapespy_actions"
# list, each step's outcome: service.browser.actions writes; pipelines.result reads
ACTION_OUTCOMES = "scrapespy_action_outcomes"
# list, what the steps returned: service.browser.actions writes; pipelines.result reads
ACTION_RESULTS = "scrapespy_action_results"
# "mobile" (absent: desktop): browser_request writes; service.browser.handler reads
DEVICE = "scrapespy_device"
# dict, what the context's browser identity is made from (languages, country, a session's
# stored identity): browser_request writes; service.browser.handler reads
IDENTITY = "scrapespy_identity"
# str, the identity a js attempt went out with (service.browser.identity's label):
# service.browser.handler writes; middlewares.escalation reads
PRESENTED = "scrapespy_presented"
# list of the caller's cookies: browser_request writes; service.browser.handler reads
COOKIES = "scrapespy_cookies"
# float, the loop's time when the navigation ended: service.browser.read writes;
# service.browser.handler reads
LOADED_AT = "scrapespy_loaded_at"
# str, the page's HTML read in the round trip that found it settled: service.browser.handler
# writes; service.browser.read takes it (and reads the page itself without it)
SETTLED_HTML = "scrapespy_settled_html"

# --- scrapy-playwright's -----------------------------------------------------------------------

# True for the js engine: browser_request writes; the middlewares, pipelines.result and
# service.browser read
PLAYWRIGHT = "playwright"
# str, the browser context's name: browser_request writes; service.browser reads (and names one)
PLAYWRIGHT_CONTEXT = "playwright_context"
# dict, the context's options: middlewares.proxy_pool writes (its proxy); service.browser reads
PLAYWRIGHT_CONTEXT_KWARGS = "playwright_context_kwargs"
# dict, page.goto's options: browser_request and middlewares.deadline (its timeout) write;
# service.browser.read reads
PLAYWRIGHT_PAGE_GOTO_KWARGS = "playwright_page_goto_kwargs"


# --- Accessors ---------------------------------------------------------------------------------


def order(r: Carrier) -> ScrapeOrder:
    order: ScrapeOrder = r.meta[ORDER]
    return order


def order_if_any(r: Carrier) -> ScrapeOrder | None:
    """The order, or None for a request that is no scrape's (robots.txt, ``scrapy shell``)."""
    return r.meta.get(ORDER)


def deadline(r: Carrier) -> float | None:
    return r.meta.get(DEADLINE)


def renders(r: Carrier) -> bool:
    """Whether the request is the js engine's."""
    return bool(r.meta.get(PLAYWRIGHT))


def engine(r: Carrier) -> str:
    return "js" if r.meta.get(PLAYWRIGHT) else "static"


def proxy_tier(r: Carrier) -> str | None:
    return r.meta.get(PROXY_TIER)


def attempt_tier(r: Carrier) -> str:
    """The proxy tier of an auto scrape's attempt, which is always in its meta."""
    tier: str = r.meta[PROXY_TIER]
    return tier


def set_proxy_tier(r: Carrier, tier: str) -> None:
    r.meta[PROXY_TIER] = tier


def tier_used(r: Carrier, default: str = "none") -> str:
    """The tier that carried the request, ``default`` before the proxy pool has seen it."""
    tier: str = r.meta.get(TIER_USED, default)
    return tier


def set_tier_used(r: Carrier, tier: str) -> None:
    r.meta[TIER_USED] = tier


def proxy_in_use(r: Carrier) -> str | None:
    return r.meta.get(PROXY_IN_USE)


def set_proxy_in_use(r: Carrier, key: str | None) -> None:
    """``None``: none (the key goes)."""
    if key is None:
        r.meta.pop(PROXY_IN_USE, None)
    else:
        r.meta[PROXY_IN_USE] = key


def proxies_failed(r: Carrier) -> list[str]:
    """The meta's own list (empty and not in the meta when none failed)."""
    return r.meta.get(PROXIES_FAILED, [])


def set_proxies_failed(r: Carrier, keys: list[str]) -> None:
    r.meta[PROXIES_FAILED] = keys


def country(r: Carrier) -> str | None:
    return r.meta.get(COUNTRY)


def block_reason(r: Carrier) -> str | None:
    return r.meta.get(BLOCK_REASON)


def set_block_reason(r: Carrier, vendor: str | None) -> None:
    """``None``: not blocked (the key goes)."""
    if vendor is None:
        r.meta.pop(BLOCK_REASON, None)
    else:
        r.meta[BLOCK_REASON] = vendor


def fingerprint(r: Carrier, default: str) -> str:
    return str(r.meta.get(FINGERPRINT) or default)


def set_fingerprint(r: Carrier, name: str) -> None:
    r.meta[FINGERPRINT] = name


def ladder(r: Carrier) -> Ladder | None:
    """The steps of an auto scrape; None for any other request."""
    return r.meta.get(LADDER)


def attempt_started(r: Carrier) -> float:
    started: float = r.meta[ATTEMPT_STARTED]
    return started


def set_attempt_started(r: Carrier, when: float) -> None:
    r.meta[ATTEMPT_STARTED] = when


def screenshot_png(r: Carrier) -> bytes | None:
    return r.meta.get(SCREENSHOT_PNG)


def action_outcomes(r: Carrier) -> list[dict[str, Any]]:
    return list(r.meta.get(ACTION_OUTCOMES, ()))


def action_results(r: Carrier) -> list[dict[str, Any]]:
    return list(r.meta.get(ACTION_RESULTS, ()))


def is_mobile(r: Carrier) -> bool:
    return r.meta.get(DEVICE) == "mobile"


def identity_ask(r: Carrier) -> dict[str, Any]:
    return dict(r.meta.get(IDENTITY) or {})


def presented(r: Carrier) -> str | None:
    return r.meta.get(PRESENTED)


def cookies(r: Carrier) -> list[dict[str, Any]] | None:
    return r.meta.get(COOKIES)


def loaded_at(r: Carrier) -> float | None:
    return r.meta.get(LOADED_AT)


def set_loaded_at(r: Carrier, when: float) -> None:
    r.meta[LOADED_AT] = when


def take_settled_html(r: Carrier) -> str | None:
    return r.meta.pop(SETTLED_HTML, None)


def settle_ms(r: Carrier) -> int | None:
    return r.meta.get(SETTLE_MS)


def context_name(r: Carrier) -> str | None:
    return r.meta.get(PLAYWRIGHT_CONTEXT)


def context_kwargs(r: Carrier) -> dict[str, Any]:
    """A copy of the browser context's options (empty when none)."""
    return dict(r.meta.get(PLAYWRIGHT_CONTEXT_KWARGS) or {})


def set_context_kwargs(r: Carrier, kwargs: dict[str, Any]) -> None:
    r.meta[PLAYWRIGHT_CONTEXT_KWARGS] = kwargs


def goto_kwargs(r: Carrier) -> dict[str, Any]:
    """A copy of page.goto's options (empty when none)."""
    return dict(r.meta.get(PLAYWRIGHT_PAGE_GOTO_KWARGS) or {})


def set_goto_kwargs(r: Carrier, kwargs: dict[str, Any]) -> None:
    r.meta[PLAYWRIGHT_PAGE_GOTO_KWARGS] = kwargs
