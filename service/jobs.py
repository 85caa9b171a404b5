"""One scrape on its way through the engine: what was asked, who pays, and where to answer."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.defer import Deferred

_ids = itertools.count(1)


@dataclass(eq=False)
class ScrapeJob:
    url: str
    engine: str = "static"
    selectors: Any = None  # service.extraction.CompiledSelectors
    respect_robots: bool = True
    timeout: float = 20.0
    proxy_type: str = "none"
    # billing; None when nothing is billed (``scrapy crawl page``)
    account_id: int | None = None
    hold_id: int | None = None
    trial: bool = False
    costs: dict[str, int] = field(default_factory=dict)  # tier -> credits for this engine
    request_id: str | None = None
    id: int = field(default_factory=lambda: next(_ids))
    started: float = field(default_factory=time.monotonic)
    done: Deferred[dict[str, Any]] = field(default_factory=Deferred)
    answer: dict[str, Any] | None = None  # what the caller was told, once ``done`` fired

    @property
    def deadline(self) -> float:
        return self.started + self.timeout

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def finish(self, result: dict[str, Any]) -> bool:
        """Fire ``done`` once; later results (a late item after the watchdog) are dropped."""
        if self.done.called:
            return False
        self.answer = result
        self.done.callback(result)
        return True
