"""End to end: ``location`` picks the country a page is fetched from, on the real service.

The operator's pools hold real forward proxies on loopback tagged by country (``de=...``),
each stamping what it forwards with its name (tests.proxies) and recording what passed through
it: a datacenter pool with a German, a French and an untagged proxy, a residential pool read
from a file with a German, a Japanese and a dead Italian proxy. The target shows what it
received (the stamp, ``Accept-Language``); a js page shows the language and time zone the
browser gives it; a guarded page refuses the German datacenter proxy, so that ``auto`` climbs.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from firecrawl import Firecrawl
from firecrawl.v2.utils.error_handler import BadRequestError
from scrapespy import Scrapespy

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.billing import accounts as service_accounts
from tests.conftest import a_database_of_its_own
from tests.dashboard_client import member, text_of
from tests.proxies import ForwardProxy, closed_port

COST = {"none": 1, "datacenter": 2, "residential": 10}  # static engine defaults
JS_COST = {"none": 5, "datacenter": 6, "residential": 25}
FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")
ECHO, GUARDED, JS_PAGE = "/places/echo", "/places/guarded", "/places/js"
# what the page's own script finds out about the visitor, as its text
BROWSER_SIDE = (
    "<html><head><title>where</title></head><body><p id=w></p><script>"
    "document.getElementById('w').textContent = 'language ' + navigator.language + "
    "' zone ' + Intl.DateTimeFormat().resolvedOptions().timeZone;</script></body></html>"
)


def echo(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """Which proxy the request came through, and the languages it asked for."""
    via = handler.headers.get("X-Test-Proxy") or "direct"
    language = handler.headers.get("Accept-Language") or "-"
    body = (
        f"<html><head><title>echo</title></head><body><p>via {html.escape(via)}</p>"
        f"<p>accept-language {html.escape(language)}</p></body></html>"
    )
    return 200, {"Content-Type": "text/html"}, body.encode()


def guarded(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """An anti-bot vendor that knows the German datacenter proxy's address."""
    if handler.headers.get("X-Test-Proxy") == "dc-de":
        challenge = b"<html><head><title>Just a moment...</title></head><body></body></html>"
        return 403, {"Content-Type": "text/html", "CF-Mitigated": "challenge"}, challenge
    return echo(handler)


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.routes[ECHO] = echo
    site.routes[GUARDED] = guarded
    site.page(JS_PAGE, BROWSER_SIDE)
    return site


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, ForwardProxy]]:
    made = {name: ForwardProxy(stamp=name).start() for name in ("dc-de", "dc-fr", "dc-any")}
    made.update({name: ForwardProxy(stamp=name).start() for name in ("resi-de", "resi-jp")})
    yield made
    for proxy in made.values():
        proxy.stop()


@pytest.fixture(scope="module")
def own_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    """No other test's instance takes this module's batch pages (they would go direct)."""
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("places-db"))


@pytest.fixture(scope="module")
def accounts(own_db: tuple[str, Accounts]) -> Accounts:
    return own_db[1]


@pytest.fixture(scope="module")
def placed(
    own_db: tuple[str, Accounts],
    tmp_path_factory: pytest.TempPathFactory,
    proxies: dict[str, ForwardProxy],
) -> Iterator[ServiceProcess]:
    workdir = tmp_path_factory.mktemp("placed")
    pool_file = Path(workdir / "residential.txt")
    pool_file.write_text(
        f"# residential, by country\nde={proxies['resi-de'].url}\nJP={proxies['resi-jp'].url}\n"
        f"it=http://127.0.0.1:{closed_port()}\n"
    )
    env = {
        "SCRAPESPY_PROXIES_DATACENTER": (
            f"de={proxies['dc-de'].url}, fr={proxies['dc-fr'].url}, {proxies['dc-any'].url}"
        ),
        "SCRAPESPY_PROXIES_RESIDENTIAL_FILE": str(pool_file),
    }
    proc = ServiceProcess(own_db[0], workdir, env=env).start()
    yield proc
    proc.stop()


def unlocked_account(accounts: Accounts, credits: int = 100) -> tuple[int, str]:
    account_id, key = accounts.create(credits=credits)
    accounts.database.run_sync(service_accounts.unlock_residential, account_id)
    return account_id, key


def scrape_ok(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body, timeout=90)
    assert reply.status == 200, reply.body
    return reply.json


def through(proxies: dict[str, ForwardProxy], url: str) -> list[str]:
    """The proxies that ``url`` went through, by name, each as often as it did."""
    return sorted(name for name, proxy in proxies.items() for t in proxy.targets() if t == url)


def wait_for_job(service: ServiceProcess, key: str, job_id: str) -> list[dict[str, Any]]:
    """The job's results once it finished (bounded wait)."""
    deadline = time.monotonic() + 60
    while True:
        reply = call("GET", service.url(f"/jobs/{job_id}"), key=key)
        assert reply.status == 200, reply.body
        if reply.json["status"] in FINISHED and reply.json["counts"]["pending"] == 0:
            return list(reply.json["results"])
        assert time.monotonic() < deadline, reply.json["status"]
        time.sleep(0.2)


def test_a_country_goes_through_its_proxies_with_its_language(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url(ECHO) + "?de"
    for _ in range(2):
        body = {"url": url, "proxy_type": "datacenter", "location": {"country": "DE"}}
        result = scrape_ok(placed, key, body)
        assert result["success"] is True and result["country"] == "de"
        assert result["tier_used"] == "datacenter" and result["proxy_used"] is True
        # no languages given: the country's own
        assert "via dc-de" in result["text"] and "accept-language de-DE" in result["text"]
    assert through(proxies, url) == ["dc-de", "dc-de"]
    assert accounts.summary(account_id)["balance"] == 100 - 2 * COST["datacenter"]


def test_the_callers_languages_and_header(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    location = {"country": "fr", "languages": ["fr-CH", "de-CH", "en"]}
    url = pages.url(ECHO) + "?fr"
    result = scrape_ok(placed, key, {"url": url, "proxy_type": "datacenter", "location": location})
    assert "via dc-fr" in result["text"]
    assert "accept-language fr-CH, de-CH;q=0.9, en;q=0.8" in result["text"]
    own = {"Accept-Language": "it"}
    body = {"url": url, "proxy_type": "datacenter", "location": location, "headers": own}
    assert "accept-language it" in scrape_ok(placed, key, body)["text"]  # the caller's wins
    # languages alone pick no proxy: a direct scrape in those languages, without "country"
    alone = scrape_ok(placed, key, {"url": url, "location": {"languages": ["ja-JP"]}})
    assert "via direct" in alone["text"] and "accept-language ja-JP" in alone["text"]
    assert "country" not in alone
    assert through(proxies, url) == ["dc-fr", "dc-fr"]


def test_a_request_without_a_country_may_use_any_proxy_of_its_tier(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    url = pages.url(ECHO) + "?anywhere"
    for _ in range(3):
        result = scrape_ok(placed, key, {"url": url, "proxy_type": "datacenter"})
        assert result["proxy_used"] is True and "country" not in result
        assert "accept-language en" in result["text"]  # Scrapy's default, as before
    assert through(proxies, url) == ["dc-any", "dc-de", "dc-fr"]


def test_a_country_no_proxy_of_the_tier_offers_is_a_400_before_anything(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url(ECHO) + "?refused"
    cases = [
        ({"proxy_type": "datacenter", "location": {"country": "jp"}}, "'jp'", "de, fr"),
        ({"proxy_type": "residential", "location": {"country": "fr"}}, "'fr'", "de, it, jp"),
        ({"proxy_type": "auto", "location": {"country": "br"}}, "'br'", "residential: de, it"),
        ({"location": {"country": "de"}}, "needs a proxy", "datacenter or residential"),
        ({"proxy_type": "datacenter", "location": {"country": "xx"}}, "'xx'", "ISO 3166-1"),
        ({"location": {"country": "deu"}}, "'deu'", "ISO 3166-1"),
        ({"location": {"languages": ["not a tag"]}}, "location.languages[0]", "language tag"),
        ({"location": {"city": "Berlin"}}, "unknown field 'location.city'", ""),
    ]
    for extra, named, listed in cases:
        reply = placed.scrape(key, {"url": url, **extra})
        assert reply.status == 400, (extra, reply.body)
        message = reply.json["error"]
        assert set(reply.json) == {"error"}
        assert named in message and listed in message, message
    assert through(proxies, url) == []
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100, 0)


def test_auto_climbs_within_the_country(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    account_id, key = unlocked_account(accounts)
    url = pages.url(GUARDED) + "?auto"
    before = pages.count(GUARDED)
    body = {"url": url, "proxy_type": "auto", "location": {"country": "de"}}
    result = scrape_ok(placed, key, body)
    assert result["success"] is True and result["blocked"] is False, result
    assert result["country"] == "de" and result["tier_used"] == "residential"
    assert "via resi-de" in result["text"]
    # blocked with Scrapy's fingerprint, then Chrome's on the same tier (decision 0037)
    assert [(a["tier"], a["fingerprint"], a["blocked"]) for a in result["attempts"]] == [
        ("datacenter", "scrapy", True),
        ("datacenter", "chrome", True),
        ("residential", "chrome", False),
    ]
    # never direct (not in the country), never another country's proxy
    assert through(proxies, url) == ["dc-de", "dc-de", "resi-de"]
    assert pages.count(GUARDED) == before + 3
    assert accounts.summary(account_id)["balance"] == 100 - COST["residential"]
    # a country only residential offers: auto starts there
    jp = scrape_ok(
        placed, key, {**body, "url": pages.url(ECHO) + "?jp", "location": {"country": "jp"}}
    )
    assert jp["country"] == "jp" and [a["tier"] for a in jp["attempts"]] == ["residential"]


def test_a_dead_countrys_pool_falls_back_to_direct_billed_none(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    url = pages.url(ECHO) + "?it"
    body = {"url": url, "proxy_type": "residential", "location": {"country": "it"}}
    result = scrape_ok(placed, key, body)
    assert result["success"] is True and "via direct" in result["text"]
    assert result["country"] is None and result["tier_used"] == "none"
    assert "accept-language it-IT" in result["text"]
    assert accounts.summary(account_id)["balance"] == 100 - COST["none"]


@pytest.mark.browser
def test_js_gets_the_countrys_locale_and_time_zone(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url(JS_PAGE)
    body = {
        "url": url,
        "engine": "js",
        "proxy_type": "datacenter",
        "location": {"country": "de"},
        "actions": [{"type": "evaluate", "script": "navigator.languages.join(',')"}],
    }
    result = scrape_ok(placed, key, body)
    assert result["success"] is True and result["country"] == "de", result
    assert "language de-DE zone Europe/Berlin" in result["text"]
    assert result["action_results"][0]["value"].startswith("de-DE")
    assert through(proxies, url) == ["dc-de"]
    assert accounts.summary(account_id)["balance"] == 100 - JS_COST["datacenter"]
    # the caller's languages, in France
    body["location"] = {"country": "fr", "languages": ["en-GB"]}
    result = scrape_ok(placed, key, body)
    assert "language en-GB zone Europe/Paris" in result["text"]
    assert through(proxies, url) == ["dc-de", "dc-fr"]


@pytest.mark.browser
def test_js_echoes_the_accept_language_through_the_countrys_proxy(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    url = pages.url(ECHO) + "?js"
    body = {"url": url, "engine": "js", "proxy_type": "datacenter", "location": {"country": "fr"}}
    result = scrape_ok(placed, key, body)
    assert "via dc-fr" in result["text"] and "accept-language fr-FR" in result["text"]


def test_pricing_lists_the_countries_offered_per_tier(placed: ServiceProcess) -> None:
    reply = call("GET", placed.url("/pricing"))
    assert reply.status == 200
    assert reply.json["countries"] == {
        "datacenter": ["de", "fr"],
        "residential": ["de", "it", "jp"],
    }


def test_a_batch_runs_its_pages_in_the_country(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    urls = [pages.url(ECHO) + f"?batch{n}" for n in range(2)]
    refused = call(
        "POST",
        placed.url("/batch"),
        key=key,
        body={"urls": urls, "proxy_type": "datacenter", "location": {"country": "jp"}},
    )
    assert refused.status == 400 and "'jp'" in refused.json["error"]
    body = {"urls": urls, "proxy_type": "datacenter", "location": {"country": "fr"}}
    started = call("POST", placed.url("/batch"), key=key, body=body)
    assert started.status == 202, started.body
    results = wait_for_job(placed, key, started.json["id"])
    assert [item["result"]["country"] for item in results] == ["fr", "fr"]
    assert [through(proxies, url) for url in urls] == [["dc-fr"], ["dc-fr"]]


def test_the_dashboard_lists_the_countries_per_tier(
    placed: ServiceProcess, accounts: Accounts
) -> None:
    client, _, _ = member(placed.base, accounts, "places")
    page = client.get("/dashboard")
    assert page.status == 200
    shown = text_of(page)
    assert "Countries" in shown
    assert "datacenter de Germany, fr France" in shown
    assert "residential de Germany, it Italy, jp Japan" in shown


def test_firecrawls_location_country_goes_through_the_country(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts, proxies: dict[str, ForwardProxy]
) -> None:
    account_id, key = unlocked_account(accounts)
    client = Firecrawl(api_key=key, api_url=placed.url(""), max_retries=1)
    url = pages.url(ECHO) + "?firecrawl"
    doc = client.scrape(url, location={"country": "FR", "languages": ["fr-BE"]})
    assert doc.markdown is not None and "via dc-fr" in doc.markdown
    assert "accept-language fr-BE" in doc.markdown
    assert doc.metadata is not None and doc.metadata.proxy_used == "basic"
    # no proxy field: auto within the country, the cheapest tier that offers it first
    assert through(proxies, url) == ["dc-fr"]
    assert accounts.summary(account_id)["balance"] == 100 - COST["datacenter"]
    with pytest.raises(BadRequestError) as refused:
        client.scrape(url, location={"country": "br"})
    assert refused.value.status_code == 400 and "'br'" in str(refused.value)


def test_the_python_client_reads_the_country(
    placed: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=100)
    with Scrapespy(api_key=key, base_url=placed.base) as client:
        url = pages.url(ECHO) + "?client"
        result = client.scrape(url, proxy_type="datacenter", location={"country": "de"})
        assert result.ok and result.country == "de" and "via dc-de" in (result.text or "")
        assert client.scrape(url).country is None
