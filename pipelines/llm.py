"""Asks the operator's language model for what a request wants of it: ``json`` from
``json.prompt``/``json.schema``, and the formats made by the model (``summary``...), each by its
producer (service.core.formats), ``await ask(model, markdown, within) -> Answer``.

Runs after the page's fields are parsed (pipelines.result.FieldsPipeline leaves the page's
markdown in ``item.model_input``) and before the billing settles, which then charges the
page's price and the model's tokens together, in one capture and one usage row
(pipelines.billing). Only a page that succeeded is sent; a failure of the model fails the
scrape with its ``llm_*`` error_code, unbilled, and what the page gave is taken back. The call
is an asyncio coroutine on the reactor's loop, never on its thread's time: the pipeline awaits
it as it awaits the extraction workers.

A job's page (batch, crawl) is held by its job for the page's price; the model's worst case is
added to that hold here (service.scrape.model_reserve) before the model is asked, or the page
fails ``llm_over_budget``.

Configured by the engine bridge (``crawler.scrapespy_model``, when SCRAPESPY_LLM_BASE_URL is
set); without it, the pipeline is not configured, and the requests that need it are refused.

    ITEM_PIPELINES = {"pipelines.llm.ModelPipeline": 350}
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future

from service.billing import ledger
from service.billing.rules import model_credits, model_reserve
from service.core.config import Config
from service.core.formats import OUTPUTS as FORMATS
from service.core.formats import producer
from service.extraction import empty_fields
from service.extraction.llm import LanguageModel, ModelFailed, Usage
from service.scrape.model_reserve import REFUSALS, extend_for_model
from service.scrape.order import ScrapeItem

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from service.db import Database


class ModelPipeline:
    def __init__(self, crawler: Crawler, model: LanguageModel, config: Config):
        self.stats = crawler.stats
        self.model = model
        self.config = config
        self.database: Database | None = getattr(crawler, "scrapespy_database", None)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ModelPipeline:
        model = getattr(crawler, "scrapespy_model", None)
        if model is None:
            raise NotConfigured
        return cls(crawler, model, crawler.scrapespy_config)  # type: ignore[attr-defined]

    async def process_item(self, item: ScrapeItem) -> ScrapeItem:
        order, result = item.order, item.result
        page, item.model_input = item.model_input, None
        if not order.asks_model:
            return item
        if not result.success or result.blocked or page is None or order.answer is not None:
            return item
        if not await self._reserved(item):
            return item
        started = time.monotonic()
        used = Usage()
        try:
            if order.model_json is not None:
                spec = order.model_json
                left = order.deadline - time.monotonic()
                answer = await self.model.json(page, spec["prompt"], spec["schema"], left)
                used += answer.usage
                setattr(result, "json", answer.value)  # noqa: B010 - a result_class field
            if order.change_model is not None:  # change_tracking's json mode (pipelines.changes)
                spec = order.change_model
                left = order.deadline - time.monotonic()
                answer = await self.model.json(page, spec["prompt"], spec["schema"], left)
                used += answer.usage
                item.tracked_json = answer.value
            for output in FORMATS:  # the formats made by the model, by their producers
                if output.made_from == "model" and output.name in order.formats:
                    assert output.producer is not None
                    ask = producer(output.producer)
                    answer = await ask(self.model, page, order.deadline - time.monotonic())
                    used += answer.usage
                    setattr(result, output.field, answer.value)  # a result_class field
        except ModelFailed as failed:
            used += failed.usage
            self._failed(item, failed.code, str(failed))
        credits = min(model_credits(self.config, used.total), order.model_reserve)
        item.model_credits = credits if result.success else 0
        usage = {
            "prompt_tokens": used.prompt_tokens,
            "completion_tokens": used.completion_tokens,
            "credits": item.model_credits,
        }
        setattr(result, "llm_usage", usage)  # noqa: B010
        if self.stats is not None:
            self.stats.inc_value("scrapespy/llm/tokens", used.total)
            self.stats.inc_value("scrapespy/llm/ms", int((time.monotonic() - started) * 1000))
        return item

    async def _reserved(self, item: ScrapeItem) -> bool:
        """Whether the hold covers the model's worst case: held with the page by POST /scrape,
        or extended now for a job's page (a refusal fails it ``llm_over_budget``)."""
        order = item.order
        if order.model_reserve or order.hold_id is None or self.database is None:
            return True
        extra = model_reserve(self.config)
        try:
            extending = extend_for_model(
                self.database,
                order.hold_id,
                extra,
                max_credits=order.max_credits,
                key_cap=order.key_cap,
            )
            order.hold_amount = await maybe_deferred_to_future(extending)
        except ledger.HoldGone:  # answered otherwise meanwhile: billed nothing
            return False
        except REFUSALS:
            self._failed(
                item,
                "llm_over_budget",
                f"the language model may cost up to {extra} more credits than the page's "
                f"{order.hold_amount}, more than the balance, the request's max_credits or the "
                "key's monthly cap allow; nothing was charged",
            )
            return False
        order.model_reserve = extra
        return True

    def _failed(self, item: ScrapeItem, code: str, why: str) -> None:
        """The scrape as a failure, unbilled, without what the page gave."""
        result = item.result
        result.success = False
        result.error = why
        result.error_code = code
        result.empty(empty_fields(item.order.selectors))
        if self.stats is not None:
            self.stats.inc_value(f"scrapespy/llm/{code}")
