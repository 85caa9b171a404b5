"""End to end: what a scrape cost, why it failed and where its time went, as a caller reads them
from ``POST /scrape`` (headers and fields), checked against the ledger (``GET /ledger``,
``GET /account``); and ``max_age``: a kept answer is free and never another account's."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.billing import keys

CORPUS = Path(__file__).with_name("antibot_corpus")
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
SKIPPED_HEADERS = {"content-length", "content-encoding", "transfer-encoding", "connection", "date"}
PHASES = ["queue", "connect", "first_byte", "download", "render", "extraction"]
SLACK_MS = 3  # elapsed_ms is truncated to the millisecond, each timing rounded to 0.1


def get(service: ServiceProcess, path: str, key: str) -> Any:
    reply = call("GET", service.url(path), key=key)
    assert reply.status == 200, reply.body
    return reply.json


def charged(reply: Reply) -> int:
    return int(reply.headers["X-Credits-Charged"])


def remaining(reply: Reply) -> int:
    return int(reply.headers["X-Credits-Remaining"])


def assert_matches_the_ledger(service: ServiceProcess, key: str, reply: Reply, before: int) -> None:
    """The answer's figures are the ledger's: what it cost, and the balance after it."""
    result = reply.json
    assert charged(reply) == result["credits_charged"]
    entries = get(service, "/ledger", key)["items"]
    balance = get(service, "/account", key)["balance"]
    assert remaining(reply) == balance == entries[0]["balance_after"]
    assert balance == before - result["credits_charged"]
    if result["credits_charged"]:
        assert entries[0]["amount"] == -result["credits_charged"]
        usage = get(service, "/usage", key)["items"][0]
        assert usage["reference"] == entries[0]["reference"]
        assert usage["credits"] == result["credits_charged"]


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


@pytest.fixture(scope="module")
def other_site() -> Iterator[TargetSite]:
    """A target on a port of its own, so that the first connection to it is a new one."""
    target = TargetSite().start()
    yield target
    target.stop()


@pytest.fixture(scope="module")
def guarded(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("guarded"),
        env={"SCRAPESPY_ALLOW_PRIVATE_TARGETS": "0"},
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def capped(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("capped"),
        env={"SCRAPESPY_MAX_SCREENSHOT_BYTES": "1000"},
    ).start()
    yield proc
    proc.stop()


def test_a_success_says_what_it_cost_and_the_balance_after(service, site, paying):
    _, key = paying
    reply = service.scrape(key, {"url": site.url("/article")})
    result = reply.json
    assert result["success"] is True and result["blocked"] is False
    assert (result["credits_charged"], result["tier_used"], result["error_code"]) == (
        1,
        "none",
        None,
    )
    assert result["cached"] is False
    assert (charged(reply), remaining(reply)) == (1, 99)
    assert_matches_the_ledger(service, key, reply, 100)


def test_a_failure_and_a_blocked_page_cost_nothing_and_say_so(service, site, paying):
    _, key = paying
    failed = service.scrape(key, {"url": site.url("/status/404")})
    assert failed.json["success"] is False and failed.json["credits_charged"] == 0
    assert (charged(failed), remaining(failed)) == (0, 100)
    assert_matches_the_ledger(service, key, failed, 100)

    fixture = "blocked/cloudflare__attention_required.html"
    blocked = scrape_fixture(service, site, key, fixture)
    assert blocked.json["blocked"] is True and blocked.json["credits_charged"] == 0
    assert (charged(blocked), remaining(blocked)) == (0, 100)
    assert_matches_the_ledger(service, key, blocked, 100)

    again = service.scrape(key, {"url": site.url("/article")})
    assert (charged(again), remaining(again)) == (1, 99)
    assert_matches_the_ledger(service, key, again, 100)


def scrape_fixture(service: ServiceProcess, site: TargetSite, key: str, fixture: str) -> Reply:
    entry = MANIFEST[fixture]
    path = "/antibot/" + fixture
    headers = {k: v for k, v in entry["headers"].items() if k.lower() not in SKIPPED_HEADERS}
    site.page(path, (CORPUS / fixture).read_bytes(), entry["status"], **headers)
    return service.scrape(key, {"url": site.url(path), "respect_robots": False})


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("not_found", "http_error"),
        ("server_error", "http_error"),
        ("robots", "robots_disallowed"),
        ("unresolvable", "dns_error"),
        ("refused", "connection_error"),
        ("timeout", "timeout"),
        ("tls", "tls_error"),
        ("raw_html_over_cap", "too_large"),
        ("blocked_403", "blocked"),
        ("blocked_200", "blocked"),
    ],
)
def test_every_failure_carries_its_code_and_costs_nothing(service, site, paying, case, code):
    _, key = paying
    if case.startswith("blocked"):
        fixture = {
            "blocked_403": "blocked/cloudflare__attention_required.html",
            "blocked_200": "blocked/hcaptcha__wall.html",
        }[case]
        reply = scrape_fixture(service, site, key, fixture)
    else:
        reply = service.scrape(key, failing_request(site, case))
    result = reply.json
    assert reply.status == 200
    assert result["error_code"] == code, result["error"]
    if code == "tls_error":
        assert result["error"] == "the TLS handshake with the target failed"
    if code == "blocked":
        assert result["blocked"] is True
    else:
        assert result["success"] is False and result["error"]
    assert (result["credits_charged"], charged(reply), remaining(reply)) == (0, 0, 100)


def failing_request(site: TargetSite, case: str) -> dict[str, Any]:
    if case == "raw_html_over_cap":  # SCRAPESPY_MAX_RAW_HTML_BYTES: 2 MiB by default
        big = "<html><body>" + "<p>filler text</p>" * 130_000 + "</body></html>"
        site.page("/big", big)
        return {"url": site.url("/big"), "formats": ["raw_html"], "respect_robots": False}
    return {
        "not_found": {"url": site.url("/status/404")},
        "server_error": {"url": site.url("/status/500")},
        "robots": {"url": site.url("/private/secret")},
        "unresolvable": {"url": "http://nothing-here.invalid/"},
        "refused": {"url": "http://127.0.0.1:9/"},
        "timeout": {"url": site.url("/slow"), "timeout": 1},
        # a plain-HTTP port spoken to in TLS: the handshake fails
        "tls": {"url": site.url("/article").replace("http://", "https://")},
    }[case]


@pytest.mark.parametrize("engine", ["static", "js"])
def test_a_private_target_with_the_guard_on_is_egress_blocked(guarded, site, accounts, engine):
    _, key = accounts.create(credits=100)
    reply = guarded.scrape(key, {"url": site.url("/article"), "engine": engine})
    result = reply.json
    assert (result["success"], result["error_code"]) == (False, "egress_blocked")
    assert (result["credits_charged"], charged(reply), remaining(reply)) == (0, 0, 100)


def test_the_js_engine_fails_with_the_same_codes(service, site, paying):
    _, key = paying
    # not port 9, which Chromium refuses to try (an unsafe port)
    refused = service.scrape(
        key, {"url": f"http://127.0.0.1:{closed_port()}/", "engine": "js"}
    ).json
    assert (refused["success"], refused["error_code"]) == (False, "connection_error")
    missing = service.scrape(key, {"url": site.url("/status/404"), "engine": "js"}).json
    assert (missing["success"], missing["error_code"]) == (False, "http_error")
    for asked in (
        {"actions": [{"type": "click", "selector": "#nowhere"}]},
        {"wait_for": {"selector": "#nowhere"}},
    ):
        body = {"url": site.url("/article"), "engine": "js", "timeout": 3, **asked}
        reply = service.scrape(key, body)
        failed = reply.json
        assert (failed["success"], failed["error_code"]) == (False, "action_failed"), failed
        assert (failed["credits_charged"], charged(reply), remaining(reply)) == (0, 0, 100)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_screenshot_over_its_cap_is_too_large(capped, site, accounts):
    _, key = accounts.create(credits=100)
    body = {"url": site.url("/article"), "engine": "js", "formats": ["screenshot"]}
    reply = capped.scrape(key, body)
    result = reply.json
    assert (result["success"], result["error_code"]) == (False, "too_large"), result["error"]
    assert (charged(reply), remaining(reply)) == (0, 100)


def assert_plausible(result: dict[str, Any], *, js: bool) -> dict[str, float]:
    timings = result["timings"]
    assert list(timings) == PHASES
    fetched = ("queue", "render") if js else ("queue", "connect", "first_byte", "download")
    absent = ("connect", "first_byte", "download") if js else ("render",)
    for phase in (*fetched, "extraction"):
        assert isinstance(timings[phase], int | float) and timings[phase] >= 0, phase
    for phase in absent:
        assert timings[phase] is None, phase
    # the phases up to the page's arrival are within elapsed_ms; the parse comes after it
    assert sum(timings[phase] for phase in fetched) <= result["elapsed_ms"] + SLACK_MS
    return timings  # type: ignore[no-any-return]


def test_static_timings_are_measured_where_they_happen(service, other_site, paying):
    _, key = paying
    other_site.page("/sized", "<html><body>" + "<p>a paragraph</p>" * 20_000 + "</body></html>")
    first = service.scrape(key, {"url": other_site.url("/sized"), "respect_robots": False}).json
    timings = assert_plausible(first, js=False)
    assert timings["connect"] > 0  # a new connection to a port never seen before
    assert timings["first_byte"] > 0 and timings["extraction"] > 0
    kept = service.scrape(key, {"url": other_site.url("/sized"), "respect_robots": False}).json
    assert assert_plausible(kept, js=False)["connect"] == 0  # the kept connection


def test_a_slow_target_shows_in_first_byte_and_a_redirect_adds_its_hops(service, site, paying):
    _, key = paying
    slow = service.scrape(key, {"url": site.url("/slow"), "respect_robots": False}).json
    assert slow["success"] is True
    assert assert_plausible(slow, js=False)["first_byte"] >= 3900  # the site sleeps 4 s
    redirected = service.scrape(key, {"url": site.url("/redirect"), "respect_robots": False}).json
    assert redirected["final_url"] == site.url("/article")
    assert_plausible(redirected, js=False)


def test_a_failure_has_the_timings_of_what_happened(service, paying):
    _, key = paying
    result = service.scrape(key, {"url": "http://127.0.0.1:9/"}).json
    timings = result["timings"]
    assert timings["queue"] is not None and timings["queue"] >= 0
    assert timings["connect"] is not None and timings["connect"] >= 0  # until it was refused
    assert (timings["first_byte"], timings["download"], timings["render"]) == (None, None, None)
    assert timings["extraction"] is None  # nothing to parse


def test_js_timings_show_the_render(service, site, paying):
    _, key = paying
    reply = service.scrape(key, {"url": site.url("/js-only"), "engine": "js"})
    result = reply.json
    assert result["success"] is True, result["error"]
    assert assert_plausible(result, js=True)["render"] > 0
    assert charged(reply) == result["credits_charged"] > 0
    assert_matches_the_ledger(service, key, reply, 100)


def test_a_kept_answer_is_free_and_never_another_accounts(service, site, accounts):
    _, key = accounts.create(credits=100)
    _, other_key = accounts.create(credits=100)
    body = {"url": site.url("/article"), "selectors": {"lead": "p.lead::text"}, "max_age": 60}
    hits = site.count("/article")

    first = service.scrape(key, body)
    assert (first.json["cached"], charged(first), remaining(first)) == (False, 1, 99)
    assert site.count("/article") == hits + 1
    usage_rows = len(get(service, "/usage", key)["items"])

    again = service.scrape(key, body)
    assert again.status == 200
    assert (again.json["cached"], again.json["credits_charged"]) == (True, 0)
    assert (charged(again), remaining(again)) == (0, 99)
    assert site.count("/article") == hits + 1  # nothing fetched
    same = {
        name: value
        for name, value in first.json.items()
        if name not in ("cached", "credits_charged")
    }
    assert {name: again.json[name] for name in same} == same
    assert get(service, "/account", key)["balance"] == 99
    assert len(get(service, "/usage", key)["items"]) == usage_rows  # a kept answer writes none
    assert len(get(service, "/ledger", key)["items"]) == 2  # the grant and the one charge

    theirs = service.scrape(other_key, body)  # the same request, another account
    assert (theirs.json["cached"], charged(theirs), remaining(theirs)) == (False, 1, 99)
    assert site.count("/article") == hits + 2
    assert_matches_the_ledger(service, other_key, theirs, 100)


def test_what_is_kept_and_for_how_long(service, site, accounts):
    _, key = accounts.create(credits=100)
    body = {"url": site.url("/article"), "max_age": 60}
    assert service.scrape(key, body).json["cached"] is False
    assert service.scrape(key, body).json["cached"] is True
    # other options, or too old for what is asked: a scrape of its own, billed
    other = service.scrape(key, {**body, "selectors": {"h": "h1"}})
    assert (other.json["cached"], charged(other)) == (False, 1)
    fresh = service.scrape(key, {**body, "max_age": 0})
    assert (fresh.json["cached"], charged(fresh)) == (False, 1)
    # without max_age, nothing is looked up
    plain = service.scrape(key, {"url": site.url("/article")})
    assert (plain.json["cached"], charged(plain)) == (False, 1)
    # failures are not kept
    missing = {"url": site.url("/status/404"), "max_age": 60}
    hits = site.count("/status/404")
    service.scrape(key, missing)
    assert service.scrape(key, missing).json["cached"] is False
    assert site.count("/status/404") == hits + 2
    # a kept answer still needs a valid key
    assert service.scrape(keys.generate_key(), body).status == 401
    assert get(service, "/account", key)["balance"] == 96


def test_max_age_is_validated(service, site, paying):
    _, key = paying
    for bad in (-1, "60", 1.5, True):
        reply = service.scrape(key, {"url": site.url("/article"), "max_age": bad})
        assert reply.status == 400 and "max_age" in reply.json["error"], (bad, reply.body)
    # JSON Schema counts 60.0 as an integer, and so does the service
    whole = service.scrape(key, {"url": site.url("/article"), "max_age": 60.0})
    assert whole.status == 200 and whole.json["success"] is True
