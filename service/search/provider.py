"""The search backend the operator chose (``SCRAPESPY_SEARCH_BACKEND``), as payments pick their
provider (service.billing.payments.provider): ``searxng``, ``brave``, ``serper``, or none (the
default), when ``POST /search`` is a 400 that says search is off and ``GET /pricing`` shows
``"search": null``. A backend without what it needs (its URL, its key) stops the service at
start, rather than failing every search.

Answers are kept for ``SCRAPESPY_SEARCH_CACHE_SECONDS`` per (query, options), so an agent that
repeats a query makes the backend answer once (:class:`KeptAnswers`); what was kept is shared
by every account, as a search engine's results are the same for all.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from service.core.config import Config, ConfigError
from service.search.backend import Found, Query, SearchBackend

BACKENDS = ("searxng", "brave", "serper")
NOT_CONFIGURED = "search is not configured on this server (SCRAPESPY_SEARCH_BACKEND)"
KEPT_MAX = 1000


def make_backend(config: Config) -> SearchBackend | None:
    choice = config.search_backend
    if not choice:
        return None
    if choice not in BACKENDS:
        raise ConfigError(
            f"SCRAPESPY_SEARCH_BACKEND must be one of {', '.join(BACKENDS)}, not {choice!r}"
        )
    if choice == "searxng":
        if not config.searxng_url:
            raise ConfigError("SCRAPESPY_SEARCH_BACKEND=searxng needs SCRAPESPY_SEARXNG_URL")
        from service.search.searxng import SearxngBackend

        return SearxngBackend(config)
    if choice == "brave":
        if not config.brave_api_key:
            raise ConfigError("SCRAPESPY_SEARCH_BACKEND=brave needs SCRAPESPY_BRAVE_API_KEY")
        from service.search.brave import BraveBackend

        return BraveBackend(config)
    if not config.serper_api_key:
        raise ConfigError("SCRAPESPY_SEARCH_BACKEND=serper needs SCRAPESPY_SERPER_API_KEY")
    from service.search.serper import SerperBackend

    return SerperBackend(config)


class KeptAnswers:
    """The backend's answers of the last ``seconds``, at most :data:`KEPT_MAX`, oldest out
    first. A failure is never kept."""

    def __init__(self, backend: SearchBackend, seconds: float) -> None:
        self.backend = backend
        self.seconds = seconds
        self._kept: OrderedDict[Query, tuple[float, Found]] = OrderedDict()

    async def search(self, query: Query) -> tuple[Found, bool]:
        """The backend's answer to ``query``, and whether it was a kept one."""
        now = time.monotonic()
        kept = self._kept.get(query)
        if kept is not None and kept[0] > now:
            return kept[1], True
        found = await self.backend.search(query)
        if self.seconds > 0:
            self._kept[query] = (now + self.seconds, found)
            self._kept.move_to_end(query)
            while len(self._kept) > KEPT_MAX:
                self._kept.popitem(last=False)
        return found, False
