"""Typed results of the API (pydantic v2).

Every model keeps fields the API adds later (``extra="allow"``: they are attributes too, and in
``model_dump()``), and values are plain ``str`` where the API has a list of choices, so that a
new engine, tier or error code never breaks an older client. Fields have defaults because a
job's stored result may leave a page's fields out (over the service's size limit).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from scrapespy.errors import ScrapeFailed

if TYPE_CHECKING:
    from collections.abc import Awaitable

# a job in one of these states changes no more
TERMINAL_STATUSES = frozenset({"completed", "cancelled", "failed", "insufficient_credits"})


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Link(Model):
    text: str = ""
    href: str = ""


class Timings(Model):
    """Milliseconds per phase; None when the phase did not happen for this scrape."""

    queue: float | None = None
    connect: float | None = None
    first_byte: float | None = None
    download: float | None = None
    render: float | None = None
    extraction: float | None = None


class Attempt(Model):
    """One try of an ``auto`` engine or proxy_type; the last one is the answer's."""

    tier: str
    engine: str
    # what the attempt presented itself as: scrapy or chrome (static), the js engine's
    # browser identity (chrome-<major>-linux, chrome-<major>-android, honest-...)
    fingerprint: str | None = None
    status_code: int = 0
    blocked: bool = False
    block_reason: str | None = None
    error_code: str | None = None
    elapsed_ms: int = 0


class ActionRun(Model):
    """One browser step that ran (``actions``); ``error`` when it failed."""

    index: int
    type: str
    ok: bool
    elapsed_ms: int = 0
    error: str | None = None


class ActionResult(Model):
    """What a ``screenshot`` (base64 PNG) or ``evaluate`` (JSON value) step produced."""

    index: int
    type: str
    screenshot: str | None = None
    value: Any = None


class SessionRef(Model):
    """The session a scrape ran in (``session``); ``exit_changed``: its proxy died and another
    one of the pool carried this call."""

    id: str
    exit_changed: bool = False


class ScrapeResult(Model):
    """What ``POST /scrape`` answers (also each page of a job).

    A scrape that ran but failed is answered HTTP 200 with ``success`` false: the client returns
    it like any result; ``ok`` says whether it is a billable success and
    ``raise_for_failure()`` turns a failure into :class:`~scrapespy.ScrapeFailed`.
    """

    url: str = ""
    final_url: str | None = None
    status_code: int = 0
    success: bool = False
    engine: str | None = None
    elapsed_ms: int = 0
    error: str | None = None
    blocked: bool = False
    proxy_used: bool = False
    title: str | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    headings: dict[str, list[str]] = Field(default_factory=dict)
    links: list[Link] = Field(default_factory=list)
    images: list[str] = Field(default_factory=list)
    text: str | None = None
    extracted: dict[str, list[str]] = Field(default_factory=dict)
    error_code: str | None = None
    tier_used: str | None = None
    credits_charged: int = 0
    cached: bool = False
    timings: Timings | None = None
    # the page's <html lang>, None when it declares none
    language: str | None = None
    block_reason: str | None = None
    # with location.country: the country the page came from, None when it came directly
    country: str | None = None
    attempts: list[Attempt] | None = None
    actions: list[ActionRun] | None = None
    action_results: list[ActionResult] | None = None
    session: SessionRef | None = None
    markdown: str | None = None
    html: str | None = None
    raw_html: str | None = None
    screenshot: str | None = None
    # with formats ["json"]: the records json.selectors extracted, or the operator's language
    # model's answer to json.prompt/json.schema (``json`` in the body; the name is BaseModel's
    # method)
    json_: Any = Field(default=None, alias="json")
    # with formats=["structured_data"]: {"items", "opengraph", "twitter"} the page publishes
    structured_data: dict[str, Any] | None = None
    # with formats ["summary"]: the operator's language model's summary of the page
    summary: str | None = None
    # with formats ["change_tracking"]: {"previous_scrape_at", "change_status", "visibility",
    # "diff"?, "json"?}, the page compared with this account's previous scrape of it
    change_tracking: dict[str, Any] | None = None
    # with json.prompt or summary: the model's tokens and what they cost
    llm_usage: dict[str, int] | None = None
    # the fields cut to their size limit, when any was (docs/api.md, "Size limits of an answer")
    truncated: list[str] | None = None
    # not in the body: the X-Credits-Remaining header of a POST /scrape answer (the balance
    # once this scrape was settled); None for a job's page
    credits_remaining: int | None = None

    @property
    def ok(self) -> bool:
        """A success that is not an anti-bot page: what is billed."""
        return self.success and not self.blocked

    def raise_for_failure(self) -> ScrapeResult:
        """Raise :class:`~scrapespy.ScrapeFailed` unless ``ok``; returns the result when ok."""
        if self.ok:
            return self
        message = self.error or ("blocked by an anti-bot page" if self.blocked else "failed")
        raise ScrapeFailed(
            message,
            status_code=200,
            error_code=self.error_code or ("blocked" if self.blocked else None),
            body=self.model_dump(exclude={"credits_remaining"}),
            result=self,
        )


class JobCounts(Model):
    done: int = 0
    failed: int = 0
    blocked: int = 0
    pending: int = 0
    skipped: int = 0


class JobPage(Model):
    """One finished page of a job: its URL's index, status, charge and scrape result."""

    index: int
    url: str
    status: str
    credits: int = 0
    result: ScrapeResult | None = None


class JobStatus(Model):
    """``GET /jobs/{id}`` (with one page of ``results``), an item of ``GET /jobs`` or the
    answer of ``DELETE /jobs/{id}`` (these two without counts or results)."""

    id: str
    kind: str | None = None
    status: str
    total: int = 0
    created_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    counts: JobCounts | None = None
    credits_charged: int | None = None
    results: list[JobPage] = Field(default_factory=list)
    next_cursor: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def progress(self) -> str:
        """One line: status, pages finished of total, outcomes and credits so far."""
        line = f"job {self.id}: {self.status}"
        if self.counts is not None:
            c = self.counts
            finished = c.done + c.failed + c.blocked
            line += (
                f", {finished}/{self.total} pages (done {c.done}, failed {c.failed}, "
                f"blocked {c.blocked}" + (f", skipped {c.skipped}" if c.skipped else "") + ")"
            )
        if self.credits_charged is not None:
            line += f", {self.credits_charged} credits"
        return line


class JobClient(Protocol):
    """What a :class:`JobRef` asks of the client that made it (:class:`~scrapespy.Scrapespy`)."""

    def wait(
        self,
        job_id: str,
        poll_interval: float = ...,
        timeout: float | None = ...,
        progress: Any = ...,
        limit: int | None = ...,
    ) -> JobStatus: ...
    def job(self, job_id: str, cursor: str | None = ..., limit: int | None = ...) -> JobStatus: ...
    def cancel(self, job_id: str) -> JobStatus: ...


class AsyncJobClient(Protocol):
    """:class:`JobClient` of :class:`~scrapespy.AsyncScrapespy`."""

    def wait(
        self,
        job_id: str,
        poll_interval: float = ...,
        timeout: float | None = ...,
        progress: Any = ...,
        limit: int | None = ...,
    ) -> Awaitable[JobStatus]: ...
    def job(
        self, job_id: str, cursor: str | None = ..., limit: int | None = ...
    ) -> Awaitable[JobStatus]: ...
    def cancel(self, job_id: str) -> Awaitable[JobStatus]: ...


class JobRef(Model):
    """The 202 answer of ``POST /batch`` or ``POST /crawl``: the job's id and status URL,
    bound to the client that made it (``ref.wait()``, ``ref.status()``...)."""

    id: str
    status_url: str | None = None
    idempotency_key: str | None = None
    _client: JobClient | None = PrivateAttr(default=None)

    def _bound(self) -> JobClient:
        if self._client is None:
            raise RuntimeError("this JobRef is not bound to a client")
        return self._client

    def wait(self, **kwargs: Any) -> JobStatus:
        """``client.wait(self.id, **kwargs)``."""
        return self._bound().wait(self.id, **kwargs)

    def status(self, **kwargs: Any) -> JobStatus:
        return self._bound().job(self.id, **kwargs)

    def cancel(self) -> JobStatus:
        return self._bound().cancel(self.id)


class AsyncJobRef(Model):
    """:class:`JobRef` of :class:`~scrapespy.AsyncScrapespy`: its methods are awaited."""

    id: str
    status_url: str | None = None
    idempotency_key: str | None = None
    _client: AsyncJobClient | None = PrivateAttr(default=None)

    def _bound(self) -> AsyncJobClient:
        if self._client is None:
            raise RuntimeError("this JobRef is not bound to a client")
        return self._client

    async def wait(self, **kwargs: Any) -> JobStatus:
        return await self._bound().wait(self.id, **kwargs)

    async def status(self, **kwargs: Any) -> JobStatus:
        return await self._bound().job(self.id, **kwargs)

    async def cancel(self) -> JobStatus:
        return await self._bound().cancel(self.id)


class JobsPage(Model):
    items: list[JobStatus] = Field(default_factory=list)
    next_cursor: str | None = None


class MapResult(Model):
    """``POST /map``: the site's URLs; empty with ``error_code`` ``map_failed`` (then free)."""

    url: str = ""
    urls: list[str] = Field(default_factory=list)
    count: int = 0
    error: str | None = None
    error_code: str | None = None


class RateBucket(Model):
    per_second: float
    burst: int


class RateLimits(Model):
    scrape: RateBucket | None = None
    reads: RateBucket | None = None


class Account(Model):
    """``GET /account``: ``available`` (balance - held) is what the next hold is checked
    against."""

    account_id: int
    email: str
    balance: int
    held: int = 0
    available: int = 0
    residential_trials_left: int = 0
    residential_unlocked: bool = False
    rate_limits: RateLimits | None = None


class UsageRow(Model):
    """One scrape as billed (``credits`` charged; ``reference`` names its ledger entry)."""

    id: int
    created_at: datetime
    url: str
    engine: str
    tier_requested: str | None = None
    tier_used: str | None = None
    status_code: int | None = None
    success: bool = False
    blocked: bool = False
    error: str | None = None
    elapsed_ms: int = 0
    credits: int = 0
    # of ``credits``, what the language model's tokens cost (an ``extraction`` ledger entry)
    extraction_credits: int = 0
    trial: bool = False
    reference: str | None = None


class LedgerEntry(Model):
    """One change of balance: ``grant``, ``purchase``, ``scrape`` or ``extraction`` (the
    language model's share of a scrape's charge); negative: a charge."""

    id: int
    created_at: datetime
    kind: str
    amount: int
    balance_after: int
    reference: str | None = None


class UsagePage(Model):
    items: list[UsageRow] = Field(default_factory=list)
    next_cursor: str | None = None


class LedgerPage(Model):
    items: list[LedgerEntry] = Field(default_factory=list)
    next_cursor: str | None = None


class Session(Model):
    """One of the account's live sessions (``GET /sessions``); never its cookies."""

    id: str
    name: str
    created_at: datetime
    last_used_at: datetime
    expires_at: datetime
    exit_tier: str = "none"


class SessionsList(Model):
    items: list[Session] = Field(default_factory=list)


class SessionEnded(Model):
    id: str
    ended: bool = True
