"""Schemathesis against the service's own ``/openapi.json``, on a real port: the fixtures and the
test, which tests/test_schemathesis_positive.py and tests/test_schemathesis_negative.py run in
one generation mode each (so that pytest-xdist runs the two side by side).

Every documented operation is run with at least ``EXAMPLES`` generated examples in each generation
mode (``positive``: data the schema accepts; ``negative``: data it rejects), after schemathesis'
coverage phase (boundaries and edge values of every field), and each response goes through every
check schemathesis offers that applies to this API: no 5xx, documented status, documented content
type, response body and headers matching their schemas, invalid input rejected, valid input
accepted, the key actually required, unexpected methods refused, answers within a bound.

Every scrape ``url`` the schema accepts is pointed at the local ``site`` before it is sent (scheme
and host replaced, path and query kept), so nothing leaves 127.0.0.1; a ``url`` the schema rejects
is sent as generated, so the 400s are exercised too. A check of our own fails the run if a scrape
result ever names another host. ``POST /search`` asks a SearXNG stand-in whose few results are
pages of the same local site, so its scrapes stay local too.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import schemathesis
from schemathesis.core.failures import ServerError
from schemathesis.generation.meta import TestPhase
from schemathesis.openapi.checks import RejectedPositiveData

from harness.search_backends import Hit, SearchStandIn
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.conftest import BACKEND
from tests.llm_standin import ModelStandin

EXAMPLES = 100
# On PostgreSQL, the operations that keep what the caller sends (jobs, monitors, sessions,
# idempotency keys) or look it up (cursors, ids) are fuzzed again; a scrape, a search and a map
# store nothing of the caller's beyond what POST /batch and /crawl store through the same code
# (an idempotency key, a session's name, which its pattern bounds), so they run once, on SQLite.
ONCE = ("/scrape", "/search", "/map")
# Hypothesis may stop a hair short of its target; asking for a tenth more keeps EXAMPLES a floor.
ASKED = EXAMPLES + EXAMPLES // 10
WEBHOOK_SECRET = "whsec_schemathesis_only"
# Pages of the local site that generated URLs are spread over, besides their own generated path.
PAGES = ("/article", "/redirect", "/js-only", "/status/404", "/status/500", "/private/secret")


@pytest.fixture(scope="module")
def model() -> Iterator[ModelStandin]:
    standin = ModelStandin().start()
    yield standin
    standin.stop()


@pytest.fixture(scope="module")
def search_backend(site: TargetSite) -> Iterator[SearchStandIn]:
    """Three web results (a page, a 404, a page robots.txt disallows) and two of each other
    source, whatever the query: a search scrapes at most three pages, all local."""
    web = [Hit(site.url(path)) for path in ("/article", "/status/404", "/private/secret")]
    others = [Hit(site.url(f"/photos/{n}")) for n in range(2)]
    stand_in = SearchStandIn("searxng", {"web": web, "news": others, "images": others}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def fuzzed_service(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    model: ModelStandin,
    search_backend: SearchStandIn,
) -> Iterator[ServiceProcess]:
    workdir: Path = tmp_path_factory.mktemp("schemathesis")
    env = {
        # /search asks the stand-in instead of answering 400 "search is not configured"
        **search_backend.env(),
        # json.prompt and the summary format are answered (by the chat-completions stand-in)
        # instead of 400 "needs a language model endpoint"
        "SCRAPESPY_LLM_BASE_URL": model.base_url,
        "SCRAPESPY_LLM_MODEL": "stand-in-model",
        # /credits/buy answers a checkout URL instead of 503 "payments are not configured"
        "SCRAPESPY_PAYMENTS": "demo",
        # /webhooks/stripe verifies signatures (400) instead of 503 "payments are not configured"
        "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET,
        # a generated batch is up to 1,000 pages: one page of jobs at a time, so that they do
        # not slow the scrapes under test; past two jobs in flight, /batch answers 429
        "SCRAPESPY_JOB_PAGES_IN_FLIGHT": "1",
        "SCRAPESPY_MAX_JOBS_PER_ACCOUNT": "2",
        # the monitors made are stored and answered, never run: their first tick is an hour away
        "SCRAPESPY_MONITOR_TICK_SECONDS": "3600",
    }
    proc = ServiceProcess(database_url, workdir, env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def api_key(accounts: Accounts) -> str:
    _, key = accounts.create(credits=10**9)
    return key


class LocalTargets:
    """Rewrites the ``url`` of a scrape body the schema accepts into a page of the local site."""

    def __init__(self, site: TargetSite, url_schema: dict[str, Any]):
        self.site = site
        pattern = url_schema.get("pattern")
        self.pattern = re.compile(pattern) if pattern else None
        self.max_length = url_schema.get("maxLength", 2048)

    def accepted(self, url: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(url) is not None
        # no documented pattern: anything that parses as http(s) with a host goes local
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            return False
        return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)

    def local(self, url: str) -> str:
        stripped = url.strip()
        lead = url[: len(url) - len(url.lstrip())]
        trail = url[len(url.rstrip()) :]
        rest = stripped.split("://", 1)[1] if "://" in stripped else ""
        suffix_at = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        suffix = rest[suffix_at:]
        choice = zlib.crc32(url.encode("utf-8", "surrogatepass")) % (len(PAGES) + 1)
        path = suffix if choice == len(PAGES) else PAGES[choice]
        if path.startswith("/slow"):
            path = "/article"  # the 4 s page would only slow the run down
        local = lead + self.site.base + path + trail
        if len(local) > self.max_length or not self.accepted(local):
            local = self.site.url("/article")
        return local

    def rewrite(self, case: schemathesis.Case) -> None:
        body = case.body
        if case.operation.path == "/search" and isinstance(body, dict):
            if isinstance(body.get("scrape"), dict):
                self.short_waits(body["scrape"])
            return
        if case.operation.path not in (
            "/scrape",
            "/batch",
            "/crawl",
            "/map",
            "/monitors",
            "/monitors/{monitor_id}",
        ) or not isinstance(body, dict):
            return
        crawl = body.get("crawl")
        if isinstance(crawl, dict) and isinstance(crawl.get("url"), str):
            if self.accepted(crawl["url"]):
                crawl["url"] = self.local(crawl["url"])
        url = body.get("url")
        if isinstance(url, str) and self.accepted(url):
            body["url"] = self.local(url)
        urls = body.get("urls")
        if isinstance(urls, list):
            body["urls"] = [
                self.local(one) if isinstance(one, str) and self.accepted(one) else one
                for one in urls
            ]
        webhook = body.get("webhook")
        if isinstance(webhook, dict) and isinstance(webhook.get("url"), str):
            if self.accepted(webhook["url"]):  # deliveries go to the local site, not out
                webhook["url"] = self.local(webhook["url"])
        self.short_waits(body)

    @staticmethod
    def short_waits(body: dict[str, Any]) -> None:
        timeout = body.get("timeout")
        waits = body.get("actions") or body.get("wait_for")
        numeric = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        if waits and numeric and 0 < timeout <= 120:
            # a step that waits for what never comes waits out the timeout: keep it short (and a
            # timeout the schema refuses as it is)
            body["timeout"] = min(timeout, 5)
        elif waits and "timeout" not in body:
            body["timeout"] = 5


@pytest.fixture(scope="module")
def openapi_document(fuzzed_service: ServiceProcess) -> dict[str, Any]:
    reply = call("GET", fuzzed_service.url("/openapi.json"))
    assert reply.status == 200, reply.body
    document: dict[str, Any] = reply.json
    return document


@pytest.fixture(scope="module")
def local_targets(openapi_document: dict[str, Any], site: TargetSite) -> LocalTargets:
    scrape_request = openapi_document["components"]["schemas"]["ScrapeRequest"]
    return LocalTargets(site, scrape_request["properties"]["url"])


def _without_inputs(document: dict[str, Any]) -> list[str]:
    """Paths whose every operation takes nothing: one possible request, nothing to make invalid."""
    return [
        path
        for path, operations in document["paths"].items()
        if not any(op.get("parameters") or op.get("requestBody") for op in operations.values())
    ]


def _config(base_url: str, key: str, mode: str, document: dict[str, Any]) -> schemathesis.Config:
    operations = []
    inputless = _without_inputs(document)
    if mode == "negative" and inputless:
        # The coverage phase still sends them unexpected methods; fuzzing has nothing to negate.
        operations.append({"include-path": inputless, "phases": {"fuzzing": {"enabled": False}}})
    return schemathesis.Config.from_dict(
        {
            "base-url": base_url,
            "request-timeout": 30,
            "generation": {"mode": mode, "max-examples": ASKED, "database": "none"},
            "auth": {"openapi": {"ApiKey": {"api_key": key}}},
            "checks": {"max_response_time": 20},
            "phases": {"stateful": {"enabled": False}},
            "operations": operations,
        }
    )


class Tally:
    """Generated examples sent per operation and mode, and the operations that failed."""

    def __init__(self) -> None:
        self.fuzzed: Counter[tuple[str, str]] = Counter()
        self.failed: set[tuple[str, str]] = set()

    def shortfalls(self, mode: str, document: dict[str, Any]) -> list[str]:
        inputless = set(_without_inputs(document))
        short = []
        for path, operations in document["paths"].items():
            if BACKEND == "postgresql" and path in ONCE:
                continue
            for method in operations:
                label = f"{method.upper()} {path}"
                if (label, mode) in self.failed:
                    continue  # its failure is the report; hypothesis stopped at it
                # an operation that takes nothing has exactly one request to send
                wanted = 1 if path in inputless else EXAMPLES
                if mode == "negative" and path in inputless:
                    wanted = 0
                if self.fuzzed[(label, mode)] < wanted:
                    short.append(f"{label}: {self.fuzzed[(label, mode)]} of {wanted}")
        return short


tally = Tally()


def schema_fixture(mode: str) -> Any:
    """The ``api_schema`` fixture of a module that fuzzes in ``mode``."""

    @pytest.fixture
    def api_schema(
        request: pytest.FixtureRequest,
        fuzzed_service: ServiceProcess,
        api_key: str,
        openapi_document: dict[str, Any],
    ) -> Iterator[schemathesis.BaseSchema]:
        yield from _schema(request, mode, fuzzed_service, api_key, openapi_document)

    return api_schema


def _schema(
    request: pytest.FixtureRequest,
    mode: str,
    fuzzed_service: ServiceProcess,
    api_key: str,
    openapi_document: dict[str, Any],
) -> Iterator[schemathesis.BaseSchema]:
    # schemathesis 4.32 renames the running item through ``Node._nodeid``, which pytest 9.2 no
    # longer has (it keeps ``_id``); give it the attribute it reads and writes back.
    node: Any = request.node
    if not hasattr(node, "_nodeid"):
        node._nodeid = node.nodeid
    schema = schemathesis.openapi.from_url(
        fuzzed_service.url("/openapi.json"),
        config=_config(fuzzed_service.base, api_key, mode, openapi_document),
    )
    schema.hook("filter_failure")(refusals_the_schema_cannot_express)
    yield schema
    short = tally.shortfalls(mode, openapi_document)
    if short:
        pytest.fail(f"fewer {mode} examples than required were sent: " + "; ".join(short))


def error_code(response: schemathesis.Response) -> str | None:
    """An error answer's X-Error-Code (schemathesis keeps headers lowercased, as lists)."""
    return next(iter(response.headers.get("x-error-code", [])), None)


def refusals_the_schema_cannot_express(
    ctx: Any, failure: Any, case: schemathesis.Case, response: schemathesis.Response
) -> bool:
    """Keep every failure except the refusals of schema-valid data that no schema can foresee.

    Whether a string is valid CSS is not expressible in JSON Schema: a 400 that names one of the
    request's selectors, tags or steps' selectors as invalid CSS is the documented answer. No
    generated Stripe-Signature is ever valid: ``webhook_refuses`` requires the 400 instead. Nor is
    a generated ``cursor`` one the service handed out: the documented answer is the 400 naming it.
    A scrape's price is the operator's: a ``max_credits`` under it is the documented 402. Nor can a
    schema know which Idempotency-Key an earlier example used with another body: the documented
    answer is the 422 idempotency_conflict. Nor is whether a string is a regular expression: a
    crawl's or map's path pattern that is not one is the 400 naming it. A session's longest idle
    time is the operator's (SCRAPESPY_SESSION_MAX_IDLE_SECONDS): over it is the 400 naming it.
    Nor whether an object is a valid JSON Schema (json.schema, for the language model): the 400
    names its path. ``change_tracking``'s rules across the request (the format asked, a way for
    its json mode to extract, its selectors that run) are kept out of the published schema on
    purpose, since rules across fields there left the generators without a valid example: the
    400 naming ``change_tracking`` is the documented answer. A search's scrape options are
    refused as a scrape's, named under ``scrape.``;
    and a search whose ``timeout`` is shorter than any backend's answer is the documented 503.
    """
    path = case.operation.path
    if isinstance(failure, ServerError):
        return not backend_out_of_time(case, response)
    if not isinstance(failure, RejectedPositiveData):
        return True
    if response.status_code == 422:
        return error_code(response) != "idempotency_conflict"
    if response.status_code not in (400, 402):
        return True
    if response.status_code == 402:
        return not (
            path in ("/scrape", "/search") and error_code(response) == "max_credits_exceeded"
        )
    if path == "/webhooks/stripe":
        return False
    if (
        path
        in (
            "/usage",
            "/ledger",
            "/jobs",
            "/jobs/{job_id}",
            "/monitors",
            "/monitors/{monitor_id}/checks",
        )
        and (case.query or {}).get("cursor") is not None
    ):
        return not response.json().get("error", "").startswith("invalid request: 'cursor':")
    if path in ("/crawl", "/map", "/monitors") and isinstance(case.body, dict):
        # a path pattern that is not a regular expression: no JSON schema can say so
        error = response.json().get("error", "")
        if any(
            error.startswith(f"invalid request: '{field}'") and "not a regular expression" in error
            for field in ("include_paths", "exclude_paths")
        ):
            return False
    if path in ("/scrape", "/batch", "/crawl", "/monitors") and isinstance(case.body, dict):
        return not refused_options(response.json().get("error", ""), case.body, "")
    if path == "/search" and isinstance(case.body, dict):
        options = case.body.get("scrape")
        if isinstance(options, dict):  # a search's scrape options, refused as a scrape's
            return not refused_options(response.json().get("error", ""), options, "scrape.")
    return True


# a search backend answers a local stand-in within this; a caller's timeout below it is the 503
BACKEND_TIME = 2.0


def backend_out_of_time(case: schemathesis.Case, response: schemathesis.Response) -> bool:
    """A search whose ``timeout`` leaves the backend no time to answer: the documented 503
    search_unavailable, nothing charged."""
    body = case.body if isinstance(case.body, dict) else {}
    timeout = body.get("timeout")
    return (
        case.operation.path == "/search"
        and response.status_code == 503
        and error_code(response) == "search_unavailable"
        and isinstance(timeout, (int, float))
        and timeout < BACKEND_TIME
    )


def refused_options(error: str, options: dict[str, Any], prefix: str) -> bool:
    """Whether ``error`` refuses the scrape ``options`` (their fields named after ``prefix``)
    for what no schema can say: a selector, tag or step that is not valid CSS, a json.selectors
    that does not run, a json.schema that is not a JSON Schema, a prompt without a model."""
    invalid = f"invalid request: '{prefix}"
    if error.startswith(invalid + "json.schema"):
        return True
    if error.startswith(invalid + "change_tracking"):  # its rules across fields, in Python
        return True
    named = [f"selectors[{name!r}]" for name in options.get("selectors") or {}]
    for field in ("include_tags", "exclude_tags"):
        tags = options.get(field)
        named += [f"{field}[{index}]" for index in range(len(tags))] if tags else []
    if any(
        error.startswith(f"invalid request: invalid CSS selector for {prefix}{name}")
        for name in named
    ):
        return True
    # json.selectors: its selectors and patterns, as above; a prompt needs an operator's model
    if error.startswith(invalid + "json.selectors") and any(
        why in error
        for why in ("invalid CSS selector", "invalid XPath", "not a regular expression")
    ):
        return True
    if "json.prompt needs a language model endpoint" in error:
        return True
    # a step's or wait_for's selector: the same refusal, worded with its location
    steps = options.get("actions")
    where = [f"actions[{index}].selector" for index in range(len(steps))] if steps else []
    where.append("wait_for.selector")
    return any(error.startswith(f"{invalid}{place}': invalid CSS selector ") for place in where)


def stays_local(site: TargetSite) -> schemathesis.CheckFunction:
    local = f"127.0.0.1:{site.port}"

    def stays_on_the_local_site(ctx: Any, response: schemathesis.Response, case: Any) -> None:
        if case.operation.path not in ("/scrape", "/search") or response.status_code != 200:
            return
        answer = response.json()
        if case.operation.path == "/search":
            results = [item["page"] for item in answer["web"] if item.get("page")]
        else:
            results = [answer]
        for result in results:
            for field in ("url", "final_url"):
                address = str(result.get(field) or "")
                if address:
                    assert urlsplit(address.strip()).netloc == local, (
                        f"a scrape left the local site: {field} {address!r}"
                    )

    return stays_on_the_local_site


def webhook_refuses(ctx: Any, response: schemathesis.Response, case: Any) -> None:
    if case.operation.path != "/webhooks/stripe" or case.method.upper() != "POST":
        return  # other methods are the unexpected-method checks' business
    assert response.status_code in (400, 503), (
        f"an unsigned webhook answered {response.status_code}, not 400/503: {response.text[:200]}"
    )


def schema_test() -> Any:
    """The test of a module whose ``api_schema`` fixture is :func:`schema_fixture`'s."""
    schema = schemathesis.pytest.from_fixture("api_schema")
    if BACKEND == "postgresql":  # the lazy schema's filters are the ones its tests follow
        schema = schema.exclude(path=list(ONCE))

    @schema.parametrize()
    def test_every_operation_holds_to_its_schema(
        case: schemathesis.Case, local_targets: LocalTargets, site: TargetSite
    ) -> None:
        every_operation_holds_to_its_schema(case, local_targets, site)

    return test_every_operation_holds_to_its_schema


def every_operation_holds_to_its_schema(
    case: schemathesis.Case, local_targets: LocalTargets, site: TargetSite
) -> None:
    local_targets.rewrite(case)
    meta = case.meta
    mode = meta.generation.mode.value if meta is not None else "explicit"
    if meta is not None and meta.phase.name == TestPhase.FUZZING:
        tally.fuzzed[(case.operation.label, mode)] += 1
    try:
        case.call_and_validate(additional_checks=[stays_local(site), webhook_refuses])
    except BaseException:
        tally.failed.add((case.operation.label, mode))
        raise
