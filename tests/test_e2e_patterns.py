"""End to end: the caller's patterns (issue 43) through the real service. A regular expression that
backtracks for minutes under Python's ``re``, in a ``json.selectors`` regex field or a map's
``include_paths``, and an XPath query that is cubic in the page, hold no other caller: ``/healthz``
and another account's scrape answer while they run. The XPath one fails cleanly, unbilled; RE2
runs the regular expressions in linear time, so those just answer. An XPath with an undefined
prefix is a 400 with nothing fetched; a JSON-LD list nested 900 deep is left out on both engines
and ``/v2/scrape``; six long pages of one account leave a worker to another account's page.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.pages import article
from harness.procinfo import TICKS
from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from tests.test_e2e_scrape import extraction_workers

# the pages: Python's re needs minutes for (a+)+$ on the first, 160 s on the link
BACKTRACKING = "(a+)+$"
REGEX_PAGE = "<html><body><p class=r>" + "a" * 40_000 + "!</p></body></html>"
LINKS_PAGE = '<html><body><a href="/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!">x</a><a href="/aaa">y</a>'
# the query is cubic in the number of <i> (12.6 s on the reactor thread at 900); one more
# level makes it quartic, past the worker's 10 s on any machine, on a page small enough (2,004
# tags) to have been parsed in place
RUNAWAY = "//i[count(//i[count(//i[count(//i) > 0]) > 0]) > 0]"
XPATH_PAGE = "<html><body>" + "<i>x</i>" * 1000 + "</body></html>"
DEEP = 900
DEEP_JSONLD = (
    '<html><head><script type="application/ld+json">'
    + "[" * DEEP
    + '{"@type": "Thing", "name": "deep"}'
    + "]" * DEEP
    + '</script><script type="application/ld+json">{"@context": "https://schema.org", '
    '"@type": "Product", "name": "Tide clock"}</script></head><body><p>A clock.</p></body></html>'
)
# under every bound (1,900 deep, 152,000 elements, 836 KB), and seconds of a worker for its main
# content: little for the reactor thread to receive, much for a worker to parse
LONG_PAGE = "<html><body>" + ("<div>" * 1900 + "x" + "</div>" * 1900) * 40 + "</body></html>"


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/patterns/regex", REGEX_PAGE)
    site.page("/patterns/links", LINKS_PAGE)
    site.page("/patterns/xpath", XPATH_PAGE)
    site.page("/patterns/deep", DEEP_JSONLD)
    site.page("/patterns/long", LONG_PAGE)
    site.page("/patterns/small", article(1))
    return site


class InFlight:
    """A request sent on a thread of its own; ``reply`` once it is answered."""

    def __init__(self, send: Callable[[], Reply]) -> None:
        self.reply: Reply | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(send,), daemon=True)
        self._thread.start()

    def _run(self, send: Callable[[], Reply]) -> None:
        try:
            self.reply = send()
        finally:
            self.done.set()

    def wait(self, timeout: float = 120) -> Reply:
        assert self.done.wait(timeout), "never answered"
        assert self.reply is not None, "the request failed"
        return self.reply


def asked(site: TargetSite, path: str, times: int = 1) -> None:
    """Returns once the target has served ``path`` ``times`` times."""
    for _ in range(600):
        if site.count(path) >= times:
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"{path} was asked {site.count(path)} times, not {times}")


def others_are_answered(service: ServiceProcess, accounts: Accounts, site: TargetSite) -> None:
    """``/healthz`` and another account's small scrape answer."""
    assert call("GET", service.url("/healthz"), timeout=60).status == 200
    _, other = accounts.create(credits=10)
    reply = service.scrape(other, {"url": site.url("/patterns/small")}, timeout=60)
    assert reply.status == 200 and reply.json["success"] is True, reply.body


def records(pattern_field: dict[str, Any]) -> dict[str, Any]:
    return {"baseSelector": "body", "fields": [{"name": "found", **pattern_field}]}


def test_a_backtracking_regex_field_holds_nobody_and_answers(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    field = {"selector": "p.r", "type": "regex", "pattern": BACKTRACKING}
    body = {"url": pages.url("/patterns/regex"), "formats": ["json"]}
    hostile = InFlight(
        lambda: service.scrape(key, {**body, "json": {"selectors": records(field)}}, timeout=90)
    )
    asked(pages, "/patterns/regex")
    others_are_answered(service, accounts, pages)
    reply = hostile.wait()
    assert reply.status == 200 and reply.json["success"] is True, reply.body
    assert reply.json["json"] == []  # no match: the record has no key, and is left out
    # a group RE2 runs still finds what it should, on the same page
    field = {"selector": "p.r", "type": "regex", "pattern": "(a{3})!"}
    again = service.scrape(key, {**body, "json": {"selectors": records(field)}}, timeout=90)
    assert again.json["json"] == [{"found": "aaa"}], again.body
    assert accounts.entries_sum(account_id) == 10 - 2  # two plain static scrapes


def test_a_pattern_re2_cannot_run_is_a_400_naming_it_with_nothing_fetched(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    pages.page("/patterns/never", "<p>never</p>")
    field = {"selector": "p", "type": "regex", "pattern": r"(a)\1"}
    body = {"url": pages.url("/patterns/never"), "formats": ["json"]}
    reply = service.scrape(key, {**body, "json": {"selectors": records(field)}})
    assert reply.status == 400, reply.body
    assert "'json.selectors.fields[0].pattern'" in reply.json["error"]
    reply = call(
        "POST",
        service.url("/map"),
        {"url": pages.url("/patterns/never"), "include_paths": ["^/(?=x)"]},
        key=key,
    )
    assert reply.status == 400, reply.body
    assert "include_paths" in reply.json["error"]
    assert pages.count("/patterns/never") == 0


@pytest.mark.parametrize(
    "selector", ["//p[re:test(., 'x')]", "//p[exsl:node-set(.)]", "//p[shout(.)]", "svg|p"]
)
def test_an_xpath_that_would_fail_on_a_page_is_a_400_with_nothing_fetched(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite, selector: str
) -> None:
    _, key = accounts.create(credits=10)
    pages.page("/patterns/unfetched", "<p>x</p>")
    body = {
        "url": pages.url("/patterns/unfetched"),
        "formats": ["json"],
        "json": {"selectors": records({"selector": selector, "type": "text"})},
    }
    reply = service.scrape(key, body)
    assert reply.status == 400, reply.body
    assert "'json.selectors.fields[0].selector': invalid" in reply.json["error"]
    assert reply.headers.get("X-Error-Code") != "internal"
    assert pages.count("/patterns/unfetched") == 0


def test_a_runaway_xpath_fails_alone_cleanly_and_unbilled(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    body = {
        "url": pages.url("/patterns/xpath"),
        "formats": ["json"],
        "json": {"selectors": records({"selector": RUNAWAY, "type": "text"})},
    }
    hostile = InFlight(lambda: service.scrape(key, body, timeout=120))
    asked(pages, "/patterns/xpath")
    others_are_answered(service, accounts, pages)
    assert not hostile.done.is_set(), "the query ended before the others were answered"
    reply = hostile.wait()
    assert reply.status == 200, reply.body
    result = reply.json
    assert result["success"] is False
    assert result["error_code"] in ("too_large", "timeout"), result
    assert result["credits_charged"] == 0
    assert accounts.entries_sum(account_id) == 10
    assert accounts.summary(account_id)["held"] == 0


def test_a_backtracking_path_filter_holds_nobody(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    body = {
        "url": pages.url("/patterns/links"),
        "include_paths": [BACKTRACKING],
        "sitemap": "skip",
        "respect_robots": False,
    }
    mapping = InFlight(lambda: call("POST", service.url("/map"), body, key=key, timeout=90))
    asked(pages, "/patterns/links")
    assert call("GET", service.url("/healthz"), timeout=60).status == 200
    reply = mapping.wait()
    assert reply.status == 200, reply.body
    assert reply.json["urls"] == [pages.url("/aaa")]


@pytest.mark.parametrize("engine", ["static", "js"])
def test_a_json_ld_list_nested_900_deep_is_left_out_and_the_page_stands(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite, engine: str
) -> None:
    _, key = accounts.create(credits=100)
    body = {"url": pages.url("/patterns/deep"), "engine": engine, "formats": ["structured_data"]}
    reply = service.scrape(key, body, timeout=90)
    assert reply.status == 200 and reply.json["success"] is True, reply.body
    assert reply.json["structured_data"]["items"] == [{"@type": "Product", "name": "Tide clock"}]


def test_a_json_ld_list_nested_900_deep_is_left_out_on_v2_scrape(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    body = {"url": pages.url("/patterns/deep"), "formats": [{"type": "structuredData"}]}
    reply = call("POST", service.url("/v2/scrape"), body, key=key, timeout=90)
    assert reply.status == 200 and reply.json["success"] is True, reply.body
    found = reply.json["data"]["metadata"]["structuredData"]
    assert found["items"] == [{"@type": "Product", "name": "Tide clock"}]


def workers_cpu(service: ServiceProcess) -> float:
    """The CPU seconds the service's extraction workers have used."""
    assert service.process is not None
    total = 0
    for pid in extraction_workers(service.process.pid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # one that ended meanwhile
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def test_six_long_pages_of_one_account_leave_a_worker_to_another(
    service: ServiceProcess, accounts: Accounts, pages: TargetSite
) -> None:
    _, heavy = accounts.create(credits=100)
    body = {"url": pages.url("/patterns/long"), "only_main_content": True, "timeout": 90}
    before, idle = pages.count("/patterns/long"), workers_cpu(service)
    long_ones = [InFlight(lambda: service.scrape(heavy, body, timeout=180)) for _ in range(6)]
    asked(pages, "/patterns/long", before + 6)
    # the long pages are being parsed (seconds each), not still on their way to the workers
    for _ in range(1200):
        if workers_cpu(service) - idle >= 1.0 or any(one.done.is_set() for one in long_ones):
            break
        threading.Event().wait(0.05)
    _, light = accounts.create(credits=10)
    reply = service.scrape(light, {"url": pages.url("/patterns/small")}, timeout=120)
    assert reply.status == 200 and reply.json["success"] is True, reply.body
    assert not any(one.done.is_set() for one in long_ones), reply.json["timings"]
    for one in long_ones:
        assert one.wait(300).status == 200
