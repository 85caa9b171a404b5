"""One scrape on its way through the engine: what was asked, who pays, and where to answer."""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from twisted.internet.defer import Deferred

from service.core.formats import OUTPUTS as FORMAT_OUTPUTS
from service.core.places import languages_for
from service.core.schemas.change_tracking import order_fields
from service.db.tables import UsageRow
from service.extraction.model_schema import ANY_OBJECT
from service.extraction.outputs import OutputOptions, PageProducer
from service.scrape.results import (
    ACTION_FIELDS,
    ATTEMPTS,
    COUNTRY,
    MODEL_USAGE,
    SESSION,
    BlockedResult,
    ScrapeResult,
    result_class,
)
from service.scrape.timings import Clock

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response, TextResponse
    from twisted.python.failure import Failure

    from service.billing.keys import Caller
    from service.billing.ledger import Settlement
    from service.billing.pricing import Quote
    from service.core.escalation import Ladder
    from service.core.schemas import ScrapeRequest
    from service.scrape.sessions import SessionState

_ids = itertools.count(1)


@dataclass(eq=False)
class ScrapeOrder:
    url: str
    engine: str = "static"
    selectors: Any = None  # service.extraction.CompiledSelectors
    respect_robots: bool = True
    timeout: float = 20.0
    proxy_type: str = "none"
    # outputs beyond the standard fields (docs/api.md); the defaults ask for none
    formats: frozenset[str] = frozenset()
    only_main_content: bool = False
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    screenshot_full_page: bool = False
    records: dict[str, Any] | None = None  # json.selectors, checked (service.extraction.records)
    # json.prompt/json.schema for the operator's language model (pipelines.llm), checked
    model_json: dict[str, Any] | None = None
    # change_tracking (pipelines.changes): service.core.schemas.change_tracking.order_fields
    change_modes: tuple[str, ...] = ()
    change_tag: str = ""
    change_records: dict[str, Any] | None = None
    change_model: dict[str, Any] | None = None
    # what the page is asked to do and be sent (docs/api.md), as spiders.feed hands it on: plain
    # JSON-like values, validated; the defaults ask for nothing and cost nothing per request
    wait_for: dict[str, Any] | None = None
    settle_ms: int | None = None
    actions: tuple[dict[str, Any], ...] = ()
    device: str = "desktop"
    headers: dict[str, str] | None = None
    cookies: tuple[dict[str, str], ...] = ()
    # the caller's session (service.scrape.sessions): its cookies, storage and proxy exit
    session: SessionState | None = None
    # location: the country whose proxies carry it, and the languages it asks in (preferred
    # first; the country's by default)
    country: str | None = None
    languages: tuple[str, ...] = ()
    # billing; None when nothing is billed (``scrapy crawl page``)
    account_id: int | None = None
    hold_id: int | None = None
    trial: bool = False
    costs: dict[str, int] = field(default_factory=dict)  # tier -> credits for this engine
    hold_amount: int = 0  # the credits held: what a scrape captures at most
    # what a document's blocks of pages may extend the hold to (pipelines.billing): the
    # request's max_credits and the key's monthly cap, as the hold was checked against them
    max_credits: int | None = None
    key_cap: int | None = None
    # the credits of the hold kept for the language model's worst case (pipelines.llm): held
    # with the page by POST /scrape, or added by the pipeline for a job's page
    model_reserve: int = 0
    # engine or proxy_type auto: the steps it may try (service.core.escalation), and each attempt
    # as middlewares.escalation records it; None for any other request
    ladder: Ladder | None = None
    attempts: list[dict[str, Any]] | None = None
    request_id: str | None = None
    # a job's page (service.jobs.batches): no caller waits on it, so a caller's scrape goes first
    background: bool = False
    id: int = field(default_factory=lambda: next(_ids))
    started: float = field(default_factory=time.monotonic)
    done: Deferred[ScrapeResult] = field(default_factory=Deferred)
    answer: ScrapeResult | None = None  # what the caller was told, once ``done`` fired
    clock: Clock = field(default_factory=Clock)  # where the time went (service.scrape.timings)
    balance_after: int | None = None  # the account's balance once the scrape was settled
    # a batch's page on PostgreSQL settles with its result, in one call (service.jobs.batches):
    # pipelines.billing leaves here what to settle, (cost, consume trial, usage row)
    settle_later: bool = False
    to_settle: tuple[int, bool, UsageRow] | None = None

    @classmethod
    def asked(cls, request: ScrapeRequest, selectors: Any, **billing: Any) -> ScrapeOrder:
        """The order a checked request (``service.core.schemas.checked_scrape``) asks for;
        ``billing`` gives who pays, when anyone does."""
        return cls(
            url=request.url,
            engine=request.engine,
            selectors=selectors,
            respect_robots=request.respect_robots,
            timeout=request.timeout,
            proxy_type=request.proxy_type,
            formats=frozenset(request.formats),
            only_main_content=request.only_main_content,
            include_tags=tuple(request.include_tags),
            exclude_tags=tuple(request.exclude_tags),
            screenshot_full_page=request.screenshot_full_page,
            records=request.json_.selectors if request.json_ is not None else None,
            model_json=_model_json(request),
            **order_fields(request.change_tracking, request.formats),
            wait_for=request.wait_for.model_dump(exclude_none=True) if request.wait_for else None,
            settle_ms=request.settle_ms,
            actions=tuple(step.model_dump(exclude_none=True) for step in request.actions)
            if request.actions
            else (),
            device=request.device,
            headers=dict(request.headers) if request.headers else None,
            cookies=tuple(cookie.model_dump(exclude_none=True) for cookie in request.cookies)
            if request.cookies
            else (),
            country=request.country,
            languages=languages_for(request.country, request.location.languages)
            if request.location is not None
            else (),
            **billing,
        )

    @classmethod
    def held(
        cls,
        request: ScrapeRequest,
        selectors: Any,
        caller: Caller,
        price: Quote,
        hold_id: int,
        **more: Any,
    ) -> ScrapeOrder:
        """The order of a request whose price (``service.billing.pricing.quote``) is held for
        ``caller``: who pays, what each tier costs and, for auto, the steps it may take.
        ``POST /scrape`` and a job's page build theirs here, so both bill alike."""
        return cls.asked(
            request,
            selectors,
            account_id=caller.account_id,
            hold_id=hold_id,
            trial=price.trial,
            costs=price.costs,
            hold_amount=price.hold,
            max_credits=request.max_credits,
            key_cap=caller.monthly_cap,
            ladder=price.ladder,
            **more,
        )

    @property
    def asks_model(self) -> bool:
        """Whether the operator's language model makes part of the answer (json.prompt, a
        format made by the model): pipelines.llm then asks it, from the page's markdown, and
        its tokens are billed (the formats' price rule, service.core.formats)."""
        return (
            self.model_json is not None
            or self.change_model is not None
            or any(FORMAT_OUTPUTS[name].price == "model_tokens" for name in self.formats)
        )

    @property
    def tracks_changes(self) -> bool:
        """Whether the page is compared with the account's previous one (pipelines.changes)."""
        return "change_tracking" in self.formats

    @property
    def deadline(self) -> float:
        return self.started + self.timeout

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def claim(self, result: ScrapeResult) -> bool:
        """Decide that the caller is told ``result``, unless another answer was decided first.
        The watchdog, a caller who went away and the billing pipeline each claim before they
        settle, so that a late finish bills nothing when the caller was told something else."""
        if self.answer is not None or self.done.called:
            return self.answer is result
        self.answer = result
        return True

    def finish(self, result: ScrapeResult) -> bool:
        """Fire ``done`` once, with the answer claimed; a late result (an item after the
        watchdog answered) is dropped."""
        if self.done.called or not self.claim(result):
            return False
        self.done.callback(result)
        return True

    def output_options(self) -> OutputOptions | None:
        """What the extraction computes beyond the standard fields; None when nothing."""
        producers = {
            name: PageProducer(output.producer, output.reads, output.attributes)
            for name in self.formats
            if (output := FORMAT_OUTPUTS[name]).made_from == "page" and output.producer
        }
        if self.asks_model or self.tracks_changes:
            # the model's input, the markdown compared (pipelines.result.FieldsPipeline keeps it)
            markdown = FORMAT_OUTPUTS["markdown"]
            assert markdown.producer is not None
            producers["markdown"] = PageProducer(markdown.producer)
        converted = frozenset(producers)
        records = self.records if "json" in self.formats else None
        tracked = self.change_records if self.tracks_changes else None
        if not (
            converted
            or records is not None
            or tracked is not None
            or self.only_main_content
            or self.include_tags
            or self.exclude_tags
        ):
            return None
        return OutputOptions(
            converted,
            self.only_main_content,
            self.include_tags,
            self.exclude_tags,
            records,
            producers,
            tracked,
        )


def _model_json(request: ScrapeRequest) -> dict[str, Any] | None:
    """json.prompt/json.schema as the model is asked them; None for json.selectors or none."""
    options = request.json_
    if options is None or options.selectors is not None:
        return None
    return {"prompt": options.prompt, "schema": options.schema_ or dict(ANY_OBJECT)}


@dataclass(slots=True, eq=False)
class ScrapeItem:
    """The item of one scrape: what the spider received, and what the pipelines add to it in
    their order (service.scrape.scrapy_settings' ``ITEM_PIPELINES``)."""

    order: ScrapeOrder
    request: Request
    response: Response | None = None  # or, when nothing was received:
    failure: Failure | None = None
    # pipelines.result.ResultPipeline: the answer, and the page that FieldsPipeline parses into it
    result: ScrapeResult = field(init=False)
    tier_used: str = "none"
    page: TextResponse | None = None
    # or a document's kind and bytes (service.extraction.documents), which FieldsPipeline converts
    document: tuple[str, bytes] | None = None
    blocks: int = 1  # a converted document's blocks of pages, each billed the engine's price
    # pipelines.llm: the page's markdown it sends the model, and the credits the model's tokens
    # cost (billed with the page, pipelines.billing)
    model_input: str | None = None
    model_credits: int = 0
    # pipelines.changes: the page's markdown and, for the json mode, what was extracted from
    # it (by change_tracking's selectors, or by the model), to compare with the previous scrape
    tracked_markdown: str | None = None
    tracked_json: Any = None
    # pipelines.billing: the settlement on its way, then what it charged
    settlement: Deferred[Settlement] | None = None
    charged: int = 0

    def __repr__(self) -> str:
        return f"<scrape {self.order.id} of {self.order.url}>"


def new_result(
    order: ScrapeOrder,
    page: Mapping[str, Any],
    *,
    final_url: str,
    status_code: int,
    error: str | None,
    error_code: str | None = None,
    tier_used: str = "none",
    block_reason: str | None = None,
    engine: str | None = None,
) -> ScrapeResult:
    """The answer to ``order``: a success unless there is an ``error`` (whose ``error_code`` says
    why; ``blocked`` for a blocked page); ``page`` gives the page's fields
    (``service.extraction.empty_fields`` until the page is parsed). Nothing is charged yet.
    ``engine`` is the one that answered an auto order (by default the one it starts with)."""
    if engine is None:
        engine = order.engine if order.ladder is None else order.ladder.first[0]
    outcome: dict[str, Any] = {
        "url": order.url,
        "final_url": final_url,
        "status_code": status_code,
        "success": error is None,
        "engine": engine,
        # the billing basis: the same figure in the usage row and in the answer
        "elapsed_ms": order.elapsed_ms(),
        "error": error,
        "error_code": "blocked"
        if block_reason is not None
        else (error_code or "internal" if error is not None else None),
        "blocked": block_reason is not None,
        "proxy_used": tier_used != "none",
        "tier_used": tier_used,
        "credits_charged": 0,
        "cached": False,
        "timings": order.clock.timings(order.started),
    }
    if (
        order.formats
        or order.actions
        or order.ladder is not None
        or order.session is not None
        or order.country is not None
    ):
        outputs: tuple[str, ...] = tuple(
            FORMAT_OUTPUTS[name].field for name in FORMAT_OUTPUTS.names if name in order.formats
        )
        if order.asks_model:
            outputs = outputs + MODEL_USAGE
        if order.session is not None:  # the proxy pool has chosen its exit by now
            outputs = SESSION + outputs
            outcome["session"] = order.session.answer()
        if order.actions:
            outputs = ACTION_FIELDS + outputs
        if order.ladder is not None:
            outputs = ATTEMPTS + outputs
            outcome["attempts"] = list(order.attempts or ())
        if order.country is not None:  # only its proxies carry it: direct is nowhere
            outputs = COUNTRY + outputs
            outcome["country"] = order.country if tier_used != "none" else None
        if block_reason is None:
            return result_class(ScrapeResult, outputs)(**outcome, **page)
        return result_class(BlockedResult, outputs)(**outcome, **page, block_reason=block_reason)
    if block_reason is None:
        return ScrapeResult(**outcome, **page)
    return BlockedResult(**outcome, **page, block_reason=block_reason)


def timed_out(order: ScrapeOrder) -> str:
    return f"timed out after {order.timeout:g} s"


@overload
def storable(text: str) -> str: ...
@overload
def storable(text: None) -> None: ...
def storable(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL, which a URL's fragment may carry: store it as %00."""
    return text.replace("\x00", "%00") if text is not None else None


def usage_row(
    order: ScrapeOrder, result: ScrapeResult, tier_used: str, extraction: int = 0
) -> UsageRow:
    """What the settlement records of the scrape; ``extraction``: the language model's share of
    its cost (pipelines.llm), a ledger entry of its own when it is charged."""
    return UsageRow(
        account_id=order.account_id,
        url=storable(order.url[:4000]),
        engine=result.engine,  # the engine that answered, for an auto request too
        tier_requested=order.proxy_type,
        tier_used=tier_used,
        status_code=result.status_code or None,
        success=result.success,
        blocked=result.blocked,
        error=storable(result.error),
        elapsed_ms=result.elapsed_ms,
        extraction_credits=extraction,
    )
