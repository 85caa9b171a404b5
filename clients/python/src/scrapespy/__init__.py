"""Python client of the scrapespy web scraping API.

from scrapespy import Scrapespy
with Scrapespy() as client:  # SCRAPESPY_API_KEY, SCRAPESPY_URL
    print(client.scrape("https://example.com/", formats=["markdown"]).markdown)
"""

from __future__ import annotations

from scrapespy._version import __version__
from scrapespy.async_client import AsyncScrapespy
from scrapespy.client import Scrapespy
from scrapespy.errors import (
    AuthenticationError,
    ConnectionFailed,
    InsufficientCredits,
    InvalidRequest,
    NotFound,
    RateLimited,
    ScrapeFailed,
    ScrapespyError,
    ServiceUnavailable,
    WaitTimeout,
)
from scrapespy.models import (
    Account,
    AsyncJobRef,
    JobCounts,
    JobPage,
    JobRef,
    JobsPage,
    JobStatus,
    LedgerEntry,
    LedgerPage,
    MapResult,
    ScrapeResult,
    Session,
    SessionEnded,
    SessionRef,
    SessionsList,
    UsagePage,
    UsageRow,
)
from scrapespy.monitors import ChecksPage, Monitor, MonitorCheck, MonitorDeleted, MonitorsPage
from scrapespy.search import SearchImage, SearchItem, SearchResult

__all__ = [
    "ChecksPage",
    "Monitor",
    "MonitorCheck",
    "MonitorDeleted",
    "MonitorsPage",
    "__version__",
    "Account",
    "AsyncJobRef",
    "AsyncScrapespy",
    "AuthenticationError",
    "ConnectionFailed",
    "InsufficientCredits",
    "InvalidRequest",
    "JobCounts",
    "JobPage",
    "JobRef",
    "JobStatus",
    "JobsPage",
    "LedgerEntry",
    "LedgerPage",
    "MapResult",
    "NotFound",
    "RateLimited",
    "ScrapeFailed",
    "ScrapeResult",
    "Scrapespy",
    "SearchImage",
    "SearchItem",
    "SearchResult",
    "ScrapespyError",
    "ServiceUnavailable",
    "Session",
    "SessionEnded",
    "SessionRef",
    "SessionsList",
    "UsagePage",
    "UsageRow",
    "WaitTimeout",
]
