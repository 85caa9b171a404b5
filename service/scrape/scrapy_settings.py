"""Scrapy settings of the service's crawler; ``scrapy.cfg`` points ``scrapy shell`` here too.

The component order lives here and nowhere else. The ``SCRAPESPY_*`` settings are the rows of
:data:`service.core.settings.SETTINGS` that name a Scrapy setting, through :func:`from_config`:
the service applies it to the Config it was started with (service.scrape.engine), and
``scrapy shell`` / ``scrapy crawl`` get it here, from ``Config.from_env()``; a row without a
variable gives its default. The components read them without defaults of their own
(:func:`default_settings` is what a test's crawler starts from).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import default_settings as scrapy_defaults

from service.core.config import Config
from service.core.places import split_tag
from service.core.settings import SETTINGS, scrapy_value

BOT_NAME = "scrapespy"
SPIDER_MODULES = ["spiders"]
# the spider the service's engine bridge feeds every scrape into (service.scrape.engine)
SCRAPESPY_FEED_SPIDER = "spiders.feed.FeedSpider"
NEWSPIDER_MODULE = "spiders"

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
USER_AGENT = "Mozilla/5.0 (compatible; scrapespy/0.1)"

ROBOTSTXT_OBEY = True

# One API call is one request: the service bounds concurrency itself, so Scrapy must not
# throttle a single busy target behind a per-domain queue.
CONCURRENT_REQUESTS = 512
CONCURRENT_REQUESTS_PER_DOMAIN = 512
DOWNLOAD_DELAY = 0
# Every response yields exactly one item; Scrapy starts CONCURRENT_ITEMS asyncio tasks per
# response to process its items, and the default (100) cost ~15% of the reactor thread.
CONCURRENT_ITEMS = 1
DOWNLOAD_TIMEOUT = 20
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
# Scrapy stops taking requests to download while the responses in its pipelines pass this many
# bytes (5 MB by default): two 3 MB pages of a batch waiting for their parse held another
# caller's small scrape before its download for 9 to 13 s. What is in flight is bounded by the
# service itself (SCRAPESPY_MAX_CONCURRENT_SCRAPES, SCRAPESPY_JOB_PAGES_IN_FLIGHT, each response
# at most DOWNLOAD_MAXSIZE), and pages wait for their parse in turns (service.extraction.turns).
SCRAPER_SLOT_MAX_ACTIVE_SIZE = 1024 * 1024 * 1024
DOWNLOAD_WARNSIZE = 0
RETRY_ENABLED = False
REDIRECT_MAX_TIMES = 10
HTTPERROR_ALLOW_ALL = True
HTTPCACHE_ENABLED = False
COOKIES_ENABLED = True
# A static request with the chrome fingerprint goes through curl_cffi (service.impersonation);
# a js one (meta["playwright"]) renders in the system Chromium, one browser context per request
# (service.browser); every other request goes to Scrapy's HTTP/1.1 handler.
DOWNLOAD_HANDLERS = {
    "http": "service.impersonation.FingerprintDownloadHandler",
    "https": "service.impersonation.FingerprintDownloadHandler",
}
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 120_000  # each request's own deadline is what bounds it
PLAYWRIGHT_ABORT_REQUEST = "service.browser.launch.abort_heavy_resource"
PLAYWRIGHT_PROCESS_REQUEST_HEADERS = "service.browser.launch.browser_request_headers"

# Both open a control channel into the process (telnet, and an HTTP code-execution server in
# Scrapy 2.19); a service must not expose either.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
LOGSTATS_INTERVAL = 300.0
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"

# The egress guard runs after HttpProxyMiddleware (750) so that it sees the proxy chosen for a
# request and can check the target's own addresses there; direct downloads are guarded by the
# resolver it installs, on the address actually connected to.
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's defaults that do nothing for one request per API call cost reactor time on each:
    # no allowed_domains, no http_user, and byte counts nobody reads (request_httprepr per
    # request). /metrics keeps the service's own figures.
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
    "scrapy.downloadermiddlewares.stats.DownloaderStats": None,
    "middlewares.egress_guard.EgressGuardMiddleware": 760,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "middlewares.robots.ExpiringRobotsTxtMiddleware": 100,
    "middlewares.deadline.DeadlineMiddleware": 120,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "middlewares.antibot.AntiBotMiddleware": 580,
    # Below the anti-bot middleware: sees an answer once it is marked blocked (or not).
    "middlewares.escalation.EscalationMiddleware": 560,
    # Just before HttpProxyMiddleware (750), which turns the chosen proxy's credentials into
    # Proxy-Authorization (and removes a stale one when the request falls back to direct).
    "middlewares.proxy_pool.ProxyPoolMiddleware": 740,
    # Scrapy's own, with a bomb, a redirect loop and an unfollowable redirect as clean failures
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "middlewares.decompression.DecompressionMiddleware": 590,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "middlewares.redirects.RedirectMiddleware": 600,
    # Scrapy's own, on the bundled Public Suffix List: nothing fetched under the first cookie
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "middlewares.cookies.CookiesMiddleware": 700,
    # just below AntiBotMiddleware (580), which sees a page before its meta refresh, as before
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "middlewares.redirects.MetaRefreshMiddleware": 579,
}

# The spiders yield one item per response and never a request, which is all these look at:
# each one wrapped every response's output in another async generator.
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.start.StartSpiderMiddleware": None,
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,  # HTTPERROR_ALLOW_ALL
    "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
}
# CoreStats counts every response and item through signal handlers; the service counts its own.
# The two control channels, off above, are left out of the base list itself: Scrapy imports every
# extension it is given (a None entry too) before it can say it is off, and RemoteControl's
# module brings in aiohttp's client and server, a quarter of a second of every start.
EXTENSIONS_BASE = {
    path: order
    for path, order in scrapy_defaults.EXTENSIONS_BASE.items()
    if path
    not in (
        "scrapy.extensions.corestats.CoreStats",
        "scrapy.extensions.telnet.TelnetConsole",
        "scrapy.extensions.remote_control.RemoteControl",
    )
}

# The settlement goes out as soon as the outcome is known and travels while the page is parsed.
ITEM_PIPELINES = {
    "pipelines.result.ResultPipeline": 100,
    "pipelines.billing.SettlePipeline": 200,
    "pipelines.result.FieldsPipeline": 300,
    "pipelines.llm.ModelPipeline": 350,
    "pipelines.changes.ChangeTrackingPipeline": 380,
    "pipelines.billing.BillingPipeline": 400,
}


def proxy_hosts(config: Config) -> list[str]:
    """The operator's own proxies may sit on a private network; the guard lets them through."""
    # "host:port" without a scheme is a valid pool entry (middlewares.proxy_pool reads it so),
    # and so is one tagged with its country ("de=http://host:port", service.core.places).
    urls = [split_tag(entry)[1] for entry in config.proxies_datacenter + config.proxies_residential]
    hosts = {urlsplit(url if "://" in url else f"http://{url}").hostname for url in urls}
    return sorted(host for host in hosts if host)


def from_config(config: Config) -> dict[str, Any]:
    """The settings that the table gives the crawler: a row's Config value, or its default when
    no variable sets it; and the hosts of the operator's proxies, which the guard lets through."""
    settings = {
        row.scrapy: scrapy_value(
            getattr(config, row.field) if row.field is not None else row.default_value()
        )
        for row in SETTINGS
        if row.scrapy is not None
    }
    settings["SCRAPESPY_EGRESS_ALLOW_HOSTS"] = proxy_hosts(config)
    return settings


def default_settings() -> dict[str, Any]:
    """Every ``SCRAPESPY_*`` setting at its default: what a crawler of the components needs
    (their ``from_crawler`` has no defaults of its own), e.g. ``get_crawler(settings_dict=...)``."""
    return from_config(Config())


# ``scrapy shell`` and ``scrapy crawl`` read this module's upper-case names as the settings.
globals().update(from_config(Config.from_env()))
