"""End to end: sessions (``"session"`` on POST /scrape, GET /sessions, DELETE /sessions/{id}).

A real login site on loopback: a form with a CSRF token bound to a pre-login cookie, a POST
that sets an HttpOnly session cookie and redirects to the members' page, which sends anyone
without that cookie back to the form, and counts the member's visits in localStorage. One
service runs for this module, with a datacenter pool of two real forward proxies.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from firecrawl import Firecrawl
from scrapespy import Scrapespy

from harness.service import Accounts, ServiceProcess, call
from tests.conftest import a_database_of_its_own
from tests.proxies import ForwardProxy
from tests.relay import Relay
from tests.test_e2e_batch import JOBS_ENV, all_results, wait_finished

USER, PASSWORD = "alice", "s3cret-pw"
LOGIN_PAGE = """<!doctype html><html><head><title>Log in</title></head><body>
<form method="post" action="/login">
<input type="hidden" name="csrf" value="{csrf}">
<input id="user" name="user"><input id="password" name="password" type="password">
<button id="go" type="submit">Log in</button>
</form></body></html>"""
MEMBERS_PAGE = """<!doctype html><html><head><title>Members</title></head><body>
<p id="who">Welcome, {user}</p><p id="visits">visits unknown</p>
<a href="/members/one">one</a> <a href="/members/two">two</a>
<script>
var n = Number(localStorage.getItem("visits") || 0) + 1;
localStorage.setItem("visits", String(n));
document.getElementById("visits").textContent = "visits " + n;
</script></body></html>"""


class LoginSite:
    """The site: ``/login`` (GET the form, POST it), ``/members`` and ``/open`` (anyone)."""

    def __init__(self) -> None:
        self.forms: dict[str, str] = {}  # pre-login cookie -> its CSRF token
        self.members: dict[str, str] = {}  # session cookie -> user
        site = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def cookies(self) -> dict[str, str]:
                jar = SimpleCookie(self.headers.get("Cookie", ""))
                return {name: morsel.value for name, morsel in jar.items()}

            def answer(self, status: int, body: str, **headers: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                for name, value in headers.items():
                    self.send_header(name.replace("_", "-"), value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                cookies = self.cookies()
                if self.path == "/login":
                    pre = secrets.token_hex(8)
                    site.forms[pre] = csrf = secrets.token_hex(8)
                    self.answer(200, LOGIN_PAGE.format(csrf=csrf), Set_Cookie=f"pre={pre}; Path=/")
                elif self.path in ("/members", "/members/one", "/members/two"):
                    user = site.members.get(cookies.get("member", ""))
                    if user is None:
                        self.answer(302, "", Location="/login")
                    else:
                        self.answer(200, MEMBERS_PAGE.format(user=user))
                elif self.path == "/open":
                    self.answer(200, "<html><head><title>Open</title></head></html>")
                else:
                    self.answer(404, "<html><head><title>Not here</title></head></html>")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                pre = self.cookies().get("pre", "")
                if (
                    self.path != "/login"
                    or site.forms.get(pre) != form.get("csrf")
                    or (form.get("user"), form.get("password")) != (USER, PASSWORD)
                ):
                    self.answer(403, "<html><head><title>Refused</title></head></html>")
                    return
                token = secrets.token_hex(16)
                site.members[token] = USER
                cookie = f"member={token}; Path=/; HttpOnly"
                self.answer(303, "", Location="/members", Set_Cookie=cookie)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def start(self) -> LoginSite:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def login_site() -> Iterator[LoginSite]:
    site = LoginSite().start()
    yield site
    site.stop()


class Exit:
    """A proxy of the pool behind a relay that the test can cut, connections and all (a
    stopped server would still answer on the connections the service keeps alive)."""

    def __init__(self) -> None:
        self.proxy = ForwardProxy().start()
        host, port = self.proxy.address.split(":")
        self.relay = Relay(host, int(port)).start()
        self.url = f"http://127.0.0.1:{self.relay.port}"

    def stop(self) -> None:
        self.relay.cut()
        self.proxy.stop()


@pytest.fixture(scope="module")
def exits() -> Iterator[list[Exit]]:
    made = [Exit(), Exit()]
    yield made
    for one in made:
        one.stop()


@pytest.fixture(scope="module")
def sessions_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    """Its own database: no other instance takes this module's jobs' pages."""
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("sessions-db"))


@pytest.fixture(scope="module")
def accounts(sessions_db: tuple[str, Accounts]) -> Accounts:
    return sessions_db[1]


@pytest.fixture(scope="module")
def sessions_service(
    sessions_db: tuple[str, Accounts], exits: list[Exit], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    env = {
        **JOBS_ENV,
        "SCRAPESPY_PROXIES_DATACENTER": ",".join(proxy.url for proxy in exits),
        "SCRAPESPY_PROXY_BENCH_SECONDS": "300",
        "SCRAPESPY_SESSIONS_PER_ACCOUNT": "3",
        "SCRAPESPY_SESSION_MAX_IDLE_SECONDS": "3600",
    }
    workdir: Path = tmp_path_factory.mktemp("sessions")
    proc = ServiceProcess(sessions_db[0], workdir, env=env).start()
    yield proc
    proc.stop()


def scrape(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    return reply.json


def log_in(service: ServiceProcess, key: str, site: LoginSite, session: str) -> dict[str, Any]:
    """Fill in and send the form in the browser, as a person would."""
    return scrape(
        service,
        key,
        {
            "url": site.url("/login"),
            "engine": "js",
            "session": session,
            "actions": [
                {"type": "type", "selector": "#user", "text": USER},
                {"type": "type", "selector": "#password", "text": PASSWORD},
                {"type": "click", "selector": "#go"},
                {"type": "wait_for", "selector": "#who"},
            ],
        },
    )


def sessions_of(service: ServiceProcess, key: str) -> list[dict[str, Any]]:
    reply = call("GET", service.url("/sessions"), key=key)
    assert reply.status == 200, reply.body
    items: list[dict[str, Any]] = reply.json["items"]
    return items


def test_a_login_in_the_browser_carries_over_to_both_engines(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=1000)
    logged_in = log_in(sessions_service, key, login_site, "shop")
    assert logged_in["success"], logged_in["error"]
    assert logged_in["final_url"] == login_site.url("/members")
    assert "Welcome, alice" in logged_in["text"]
    session = logged_in["session"]
    assert session["id"].startswith("ses_") and session["exit_changed"] is False

    page = {"url": login_site.url("/members"), "session": "shop"}
    static = scrape(sessions_service, key, page)
    assert static["final_url"] == login_site.url("/members"), static["final_url"]
    assert "Welcome, alice" in static["text"]
    assert static["session"] == session

    rendered = scrape(sessions_service, key, {**page, "engine": "js"})
    assert "Welcome, alice" in rendered["text"]
    assert "visits 2" in rendered["text"]  # localStorage of the first call, kept

    # without the session, the same page sends a stranger to the form
    alone = scrape(sessions_service, key, {"url": login_site.url("/members")})
    assert alone["title"] == "Log in" and "session" not in alone

    listed = sessions_of(sessions_service, key)
    assert [s["name"] for s in listed] == ["shop"]
    assert listed[0]["id"] == session["id"] and listed[0]["exit_tier"] == "none"
    raw = call("GET", sessions_service.url("/sessions"), key=key).body.decode()
    assert not any(token in raw for token in login_site.members)  # no cookie value shown


def test_another_account_with_the_same_name_sees_nothing_of_it(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, owner = accounts.create(credits=1000)
    _, other = accounts.create(credits=1000)
    mine = log_in(sessions_service, owner, login_site, "shared-name")["session"]["id"]

    theirs = scrape(
        sessions_service, other, {"url": login_site.url("/members"), "session": "shared-name"}
    )
    assert theirs["title"] == "Log in"
    assert theirs["session"]["id"] != mine
    assert [s["id"] for s in sessions_of(sessions_service, other)] == [theirs["session"]["id"]]

    ended = call("DELETE", sessions_service.url(f"/sessions/{mine}"), key=other)
    assert ended.status == 404
    assert ended.error_answer == ({"error": "no such session"}, "not_found")
    again = scrape(
        sessions_service, owner, {"url": login_site.url("/members"), "session": "shared-name"}
    )
    assert "Welcome, alice" in again["text"]


def test_an_ended_session_is_gone_and_its_name_starts_afresh(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=1000)
    first = log_in(sessions_service, key, login_site, "to-end")["session"]["id"]

    ended = call("DELETE", sessions_service.url(f"/sessions/{first}"), key=key)
    assert ended.status == 200 and ended.json == {"id": first, "ended": True}
    assert sessions_of(sessions_service, key) == []
    assert call("DELETE", sessions_service.url(f"/sessions/{first}"), key=key).status == 404

    after = scrape(sessions_service, key, {"url": login_site.url("/members"), "session": "to-end"})
    assert after["title"] == "Log in"
    assert after["session"]["id"] != first


def test_an_idle_session_expires(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=1000)
    body = {"url": login_site.url("/open"), "session": "brief", "session_idle_seconds": 1}
    first = scrape(sessions_service, key, body)["session"]["id"]
    assert [s["id"] for s in sessions_of(sessions_service, key)] == [first]
    time.sleep(1.5)
    assert sessions_of(sessions_service, key) == []
    assert scrape(sessions_service, key, body)["session"]["id"] != first

    too_long = sessions_service.scrape(key, {**body, "session_idle_seconds": 3601})
    assert too_long.status == 400
    assert "session_idle_seconds" in too_long.json["error"]


def test_sessions_per_account_are_bounded_before_anything_is_held(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    account_id, key = accounts.create(credits=100)
    for name in ("a", "b", "c"):
        scrape(sessions_service, key, {"url": login_site.url("/open"), "session": name})
    balance = accounts.summary(account_id)["balance"]

    refused = sessions_service.scrape(key, {"url": login_site.url("/open"), "session": "d"})
    assert refused.status == 409
    body, code = refused.error_answer
    assert code == "too_many_sessions" and list(body) == ["error"]
    assert accounts.summary(account_id)["balance"] == balance
    # a live one is still usable
    assert scrape(sessions_service, key, {"url": login_site.url("/open"), "session": "a"})


def test_one_session_keeps_one_exit_until_it_dies(
    sessions_service: ServiceProcess,
    accounts: Accounts,
    login_site: LoginSite,
    exits: list[Exit],
) -> None:
    _, key = accounts.create(credits=1000)
    url = login_site.url("/open")
    target = url.removeprefix("http://")

    def through(one: Exit) -> int:
        return sum(1 for seen in one.proxy.targets() if target in seen)

    body = {"url": url, "session": "sticky", "proxy_type": "datacenter"}
    for _ in range(4):
        answer = scrape(sessions_service, key, body)
        assert answer["proxy_used"] and answer["session"]["exit_changed"] is False
    counts = [through(proxy) for proxy in exits]
    assert sorted(counts) == [0, 4], counts
    used, other = (exits[0], exits[1]) if counts[0] else (exits[1], exits[0])
    assert sessions_of(sessions_service, key)[0]["exit_tier"] == "datacenter"

    used.relay.cut()  # the session's exit dies
    moved = scrape(sessions_service, key, body)
    assert moved["success"] and moved["proxy_used"], moved["error"]
    assert moved["session"]["exit_changed"] is True
    assert through(other) == 1
    settled = scrape(sessions_service, key, body)
    assert settled["session"]["exit_changed"] is False
    assert through(other) == 2


def test_a_crawl_behind_a_login_runs_its_pages_in_the_session(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=1000)
    log_in(sessions_service, key, login_site, "crawler")
    reply = call(
        "POST",
        sessions_service.url("/crawl"),
        {"url": login_site.url("/members"), "session": "crawler", "max_pages": 5},
        key=key,
    )
    assert reply.status == 202, reply.body
    found = wait_finished(sessions_service, key, reply.json["id"])
    assert found["status"] == "completed", found
    results = all_results(sessions_service, key, reply.json["id"])
    crawled = {entry["url"].removeprefix(login_site.url("")): entry for entry in results}
    assert set(crawled) == {"/members", "/members/one", "/members/two"}
    for entry in crawled.values():
        assert entry["status"] == "done", entry
        assert "Welcome, alice" in entry["result"]["text"]
        assert entry["result"]["final_url"] == entry["url"]  # no page was sent to the form

    # a batch in another account's session of the same name is a stranger's
    _, other = accounts.create(credits=100)
    batch = call(
        "POST",
        sessions_service.url("/batch"),
        {"urls": [login_site.url("/members/one")], "session": "crawler"},
        key=other,
    )
    assert batch.status == 202, batch.body
    wait_finished(sessions_service, other, batch.json["id"])
    [entry] = all_results(sessions_service, other, batch.json["id"])
    assert entry["result"]["title"] == "Log in"


def test_a_firecrawl_profile_is_the_session_of_that_name(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=1000)
    app = Firecrawl(api_key=key, api_url=sessions_service.url(""), max_retries=1)
    profile = {"name": "fc-shop", "saveChanges": True}
    logged_in = app.scrape(
        login_site.url("/login"),
        formats=["markdown"],
        only_main_content=False,
        profile=profile,
        actions=[
            {"type": "click", "selector": "#user"},
            {"type": "write", "text": USER},
            {"type": "click", "selector": "#password"},
            {"type": "write", "text": PASSWORD},
            {"type": "click", "selector": "#go"},
            {"type": "wait", "selector": "#who"},
        ],
    )
    assert "Welcome, alice" in (logged_in.markdown or "")
    # the SDK's default maxAge would answer from the cache: a profile's page is read afresh
    again = app.scrape(
        login_site.url("/members"), formats=["markdown"], only_main_content=False, profile=profile
    )
    assert "Welcome, alice" in (again.markdown or "")
    assert [s["name"] for s in sessions_of(sessions_service, key)] == ["fc-shop"]
    stranger = app.scrape(login_site.url("/members"), formats=["markdown"])
    assert "Welcome" not in (stranger.markdown or "")


def test_the_python_client_lists_and_ends_sessions(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=100)
    with Scrapespy(api_key=key, base_url=sessions_service.url("")) as client:
        result = client.scrape(login_site.url("/open"), session="from-client")
        assert result.session is not None and result.session.exit_changed is False
        [listed] = client.sessions().items
        assert (listed.id, listed.name, listed.exit_tier) == (
            result.session.id,
            "from-client",
            "none",
        )
        assert listed.expires_at > listed.last_used_at
        assert client.end_session(listed.id).ended
        assert client.sessions().items == []


def test_a_job_past_the_bound_of_sessions_is_refused_before_it_is_stored(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=100)
    for name in ("a", "b", "c"):
        scrape(sessions_service, key, {"url": login_site.url("/open"), "session": name})
    batch = call(
        "POST",
        sessions_service.url("/batch"),
        {"urls": [login_site.url("/open")], "session": "d"},
        key=key,
    )
    assert batch.status == 409 and batch.headers.get("X-Error-Code") == "too_many_sessions"
    assert call("GET", sessions_service.url("/jobs"), key=key).json["items"] == []


def test_concurrent_new_sessions_cannot_pass_the_bound(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    """30 calls at once, each with a new name, where the account may have 3: one at a time the
    4th got its 409, at once 26 of 30 went through (each counted the sessions before any had
    written its row). The bound is taken with the row, in one transaction."""
    from concurrent.futures import ThreadPoolExecutor

    account_id, key = accounts.create(credits=500)
    body = {"url": login_site.url("/open")}
    with ThreadPoolExecutor(30) as pool:
        replies = list(
            pool.map(
                lambda n: sessions_service.scrape(key, {**body, "session": f"s{n}"}), range(30)
            )
        )
    statuses = sorted(reply.status for reply in replies)
    assert statuses == [200] * 3 + [409] * 27, statuses
    for reply in replies:
        if reply.status == 409:
            assert reply.error_answer[1] == "too_many_sessions"
    assert len(sessions_of(sessions_service, key)) == 3
    assert accounts.summary(account_id)["balance"] == 500 - 3  # the refused were not billed


def test_a_new_session_whose_call_fails_before_its_scrape_is_not_kept(
    sessions_service: ServiceProcess, accounts: Accounts, login_site: LoginSite
) -> None:
    _, key = accounts.create(credits=0)
    refused = sessions_service.scrape(key, {"url": login_site.url("/open"), "session": "broke"})
    assert refused.status == 402, refused.body
    assert sessions_of(sessions_service, key) == []
