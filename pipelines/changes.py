"""Compares a page with the account's previous scrape of it: the ``change_tracking`` format.

Runs after the page's fields are parsed (pipelines.result.FieldsPipeline leaves its markdown,
and what change_tracking's selectors extracted, in the item) and after the language model
(pipelines.llm, for a json mode by prompt), before the billing answers. One transaction on a
database thread reads the newest snapshot of the account's (URL, tag) and writes this one
(service.scrape.snapshots); the comparison (service.extraction.changes) runs on a thread of
the reactor's pool when the page changed, never on the reactor's thread.

A page that succeeded is compared and kept; one whose target now answers 404 or 410 is
``removed``, compared with nothing and kept as nothing, so the page that comes back is compared
with its last version. Any other failure, and a blocked page, leave ``change_tracking`` null:
nothing was seen to compare. Nothing here changes the bill: change_tracking costs what the
scrape costs.

Configured with the service's database (``crawler.scrapespy_database``); without one
(``scrapy crawl page``) the pipeline is not configured and ``change_tracking`` stays null.

    ITEM_PIPELINES = {"pipelines.changes.ChangeTrackingPipeline": 380}
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from service.db.times import timestamp
from service.extraction.changes import (
    GONE,
    change_status,
    git_diff,
    json_changes,
    normalised_lines,
)
from service.scrape.order import ScrapeItem
from service.scrape.snapshots import Snapshot, previous_and_keep

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from service.core.config import Config
    from service.db import Database

log = logging.getLogger(__name__)


class ChangeTrackingPipeline:
    def __init__(self, crawler: Crawler, database: Database, config: Config):
        self.stats = crawler.stats
        self.database = database
        self.bound = config.change_snapshots_per_url
        self.retention_days = config.change_retention_days

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangeTrackingPipeline:
        database = getattr(crawler, "scrapespy_database", None)
        config = getattr(crawler, "scrapespy_config", None)
        if database is None or config is None:
            raise NotConfigured
        return cls(crawler, database, config)

    async def process_item(self, item: ScrapeItem) -> ScrapeItem:
        order, result = item.order, item.result
        markdown, item.tracked_markdown = item.tracked_markdown, None
        extracted, item.tracked_json = item.tracked_json, None
        if not order.tracks_changes or order.account_id is None or order.done.called:
            return item
        gone = result.status_code in GONE and not result.blocked
        if not gone and (not result.success or result.blocked):
            return item
        if "json" in order.change_modes and order.change_records is None:
            if order.change_model is None:  # the json mode reads what the request's json made
                extracted = getattr(result, "json", None)
        lines = normalised_lines(markdown)
        current = None
        if not gone:
            current = Snapshot(datetime.now(UTC), "\n".join(lines), extracted)
        try:
            reading = self.database.run(
                previous_and_keep,
                order.account_id,
                order.url,
                order.change_tag,
                current,
                bound=self.bound,
                retention_days=self.retention_days,
            )
            previous = await maybe_deferred_to_future(reading)
        except Exception as exc:  # the page is still the caller's; the comparison is not made
            log.error("change tracking: the snapshots could not be read: %s", type(exc).__name__)
            return item
        answer = await self._compared(order.change_modes, previous, lines, extracted, gone)
        setattr(result, "change_tracking", answer)  # noqa: B010 - a result_class field
        if self.stats is not None:
            self.stats.inc_value(f"scrapespy/change_tracking/{answer['change_status']}")
        return item

    async def _compared(
        self,
        modes: tuple[str, ...],
        previous: Snapshot | None,
        lines: list[str],
        extracted: Any,
        gone: bool,
    ) -> dict[str, Any]:
        before = previous.markdown.split("\n") if previous is not None and previous.markdown else []
        status = change_status(
            before if previous is not None else None, lines, 404 if gone else 200
        )
        answer: dict[str, Any] = {
            "previous_scrape_at": timestamp(previous.taken_at) if previous is not None else None,
            "change_status": status,
            "visibility": "visible",
        }
        if "git-diff" in modes:
            diff = None
            if status == "changed":
                diff = await maybe_deferred_to_future(deferToThread(git_diff, before, lines))
            answer["diff"] = diff
        if "json" in modes:
            compared = None
            if status in ("same", "changed") and previous is not None:
                compared = json_changes(previous.extracted, extracted)
            answer["json"] = compared
        return answer
