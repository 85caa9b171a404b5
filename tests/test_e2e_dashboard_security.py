"""End to end over plain HTTP: the dashboard's security (CSRF, sessions, limits, one account's
data only, the key shown once) and its pages' behaviour, against the real service."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import ServiceProcess, call, paused_between_writes
from harness.site import echo_request
from service.billing import accounts as accounts_module
from service.billing.passwords import hash_password
from service.billing.payments.checkout_limit import CHECKOUTS_PER_MINUTE
from tests.dashboard_client import (
    NEW_KEY,
    PAGES,
    PASSWORD,
    UNAUTHORIZED,
    PublicService,
    WebClient,
    key_prefix,
    member,
    new_email,
    new_key,
    payments_of,
    press_create_key,
    shown_key,
    text_of,
)

pytestmark = pytest.mark.long(minutes=1)


@pytest.fixture(scope="module")
def shop(database_url, tmp_path_factory) -> Iterator[PublicService]:
    service = PublicService.start(
        database_url, tmp_path_factory.mktemp("dashboard"), SCRAPESPY_PAYMENTS="demo"
    )
    yield service
    service.stop()


def test_a_form_post_without_its_csrf_token_is_refused_and_changes_nothing(shop, accounts, site):
    client, account_id, email = member(shop.public, accounts, "csrf", credits=50)
    for fields in ({}, {"csrf_token": "forged"}, {"csrf_token": ""}):
        reply = client.post("/dashboard/key", fields)
        assert reply.status == 403
        assert reply.headers["Content-Type"].startswith("text/html")
        assert "security token is missing or out of date" in text_of(reply)
        assert "spy_" not in reply.body.decode()
    assert key_prefix(accounts, account_id) is None

    assert client.post("/dashboard/credits", {"pack": "10"}).status == 403
    assert payments_of(accounts, account_id) == 0
    assert client.post("/dashboard/try", {"url": site.url("/article")}).status == 403
    assert client.post("/dashboard/logout", {}).status == 403
    assert client.get("/dashboard").status == 200  # still signed in
    assert accounts.summary(account_id)["balance"] == 50

    # the forms shown before signing in carry a signed token bound to their own cookie
    stranger = WebClient(shop.public)
    login = {"email": email, "password": PASSWORD}
    assert stranger.post("/dashboard/login", login).status == 403
    assert stranger.post("/dashboard/login", {**login, "form_token": "x" * 64}).status == 403
    other_token = WebClient(shop.public).form_token("/dashboard/login")
    assert stranger.post("/dashboard/login", {**login, "form_token": other_token}).status == 403
    assert not stranger.has_session()
    signup = {"email": new_email("nocsrf"), "password": PASSWORD, "password_confirm": PASSWORD}
    assert stranger.post("/dashboard/signup", signup).status == 403
    with pytest.raises(accounts_module.NoSuchAccount):
        accounts.database.run_sync(accounts_module.find_id, signup["email"])


def test_a_form_cookie_planted_from_a_sibling_origin_logs_nobody_in(shop, accounts):
    """Login CSRF: another port of this host (or a subdomain) can set a cookie for this host. The
    attacker gets a form cookie and its token from the log-in page, plants the cookie in the
    victim's browser and posts the attacker's own credentials from the sibling origin."""
    _, _, attacker_email = member(shop.public, accounts, "attacker")
    attacker = WebClient(shop.public)
    token = attacker.form_token("/dashboard/login")
    planted = next(c.value for c in attacker.cookies if c.name == "scrapespy_form")
    port = int(shop.public.rsplit(":", 1)[1])
    sibling = f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}"
    fields = {"form_token": token, "email": attacker_email, "password": PASSWORD}
    victim = WebClient(shop.public)
    victim.origin = None  # each request below says where it comes from, or does not
    cookie = {"Cookie": f"scrapespy_form={planted}"}
    for sent in (
        {"Origin": sibling},
        {"Origin": "http://evil.127.0.0.1.example"},
        {"Origin": "null"},
        {"Referer": f"{sibling}/dashboard/login"},  # a browser that sends no Origin
        {"Origin": sibling, "Referer": f"{shop.public}/dashboard/login"},
        {},  # neither: nothing says where the form comes from
    ):
        for _ in range(3):  # more than the log-in limit allows: refused forms are not attempts
            reply = victim.request("POST", "/dashboard/login", fields, {**cookie, **sent})
            assert reply.status == 403, sent
            assert "security token is missing or out of date" in text_of(reply)
            assert "Set-Cookie" not in reply.headers
        signup = {**fields, "email": new_email("planted"), "password_confirm": PASSWORD}
        reply = victim.request("POST", "/dashboard/signup", signup, {**cookie, **sent})
        assert reply.status == 403 and "Set-Cookie" not in reply.headers
        with pytest.raises(accounts_module.NoSuchAccount):
            accounts.database.run_sync(accounts_module.find_id, signup["email"])
    assert not victim.has_session()

    # the very same cookie and token, sent from the service's own page, log in as a browser would
    for sent in ({"Origin": shop.public}, {"Referer": f"{shop.public}/dashboard/login"}):
        browser = WebClient(shop.public)
        browser.origin = None
        reply = browser.request("POST", "/dashboard/login", fields, {**cookie, **sent})
        assert reply.status == 303, sent
        assert reply.headers["Set-Cookie"].startswith("scrapespy_session=")


def test_a_signed_in_form_from_a_sibling_origin_changes_nothing(shop, accounts):
    client, account_id, _ = member(shop.public, accounts, "sibling")
    port = int(shop.public.rsplit(":", 1)[1])
    sibling = f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}"
    form = {"csrf_token": client.csrf_token()}
    for path, fields in [
        ("/dashboard/key", form),
        ("/dashboard/credits", {**form, "pack": "10"}),
        ("/dashboard/logout", form),
    ]:
        reply = client.request("POST", path, fields, {"Origin": sibling})
        assert reply.status == 403, path
    assert key_prefix(accounts, account_id) is None
    assert payments_of(accounts, account_id) == 0
    assert client.get("/dashboard").status == 200  # still signed in
    assert client.post("/dashboard/key", form).status == 303


def test_another_accounts_data_is_never_shown(shop, accounts, site):
    bob, bob_id, bob_email = member(shop.public, accounts, "bob", credits=4321)
    bob_key = new_key(bob)
    marker = site.url("/article?owner=bob-only-marker")
    assert call("POST", shop.process.url("/scrape"), {"url": marker}, key=bob_key).status == 200
    checkout = bob.post("/dashboard/credits", {"csrf_token": bob.csrf_token(), "pack": "50"})
    assert checkout.status == 303
    bob_session = checkout.headers["Location"].rsplit("/", 1)[1]
    assert "bob-only-marker" in bob.get("/dashboard/usage").body.decode()

    alice, alice_id, _ = member(shop.public, accounts, "alice")
    seen = {path: alice.get(f"/dashboard{path}") for path in PAGES}
    seen["/usage.csv"] = alice.get("/dashboard/usage.csv")
    seen["/ledger?page=2"] = alice.get("/dashboard/ledger?page=2")
    for path, reply in seen.items():
        body = reply.body.decode()
        assert reply.status == 200, path
        for secret in (
            bob_email,
            "bob-only-marker",
            bob_key,
            bob_key[:12],
            "4\u202f320",
            bob_session,
        ):
            assert secret not in body, (path, secret)

    # bob's purchase is not alice's to look at
    foreign = alice.get(f"/dashboard/credits/return?session_id={bob_session}")
    assert foreign.status == 404 and "No such purchase" in text_of(foreign)
    assert "50" not in re.sub(r"<(head|footer)>.*?</\1>", "", foreign.body.decode(), flags=re.S)

    # nor is bob's key usable from alice's "try it" form
    tried = alice.post(
        "/dashboard/try",
        {"csrf_token": alice.csrf_token(), "api_key": bob_key, "url": site.url("/article")},
    )
    assert "belongs to another account" in text_of(tried)
    assert accounts.summary(bob_id)["balance"] == 4320
    assert "Nothing was scraped or charged" in text_of(tried)
    assert "No scrapes yet" in text_of(alice.get("/dashboard/usage"))


def test_reloading_the_new_key_page_shows_it_no_more_and_makes_no_other(shop, accounts, site):
    client, account_id, _ = member(shop.public, accounts, "reload", credits=5)
    form = {"csrf_token": client.csrf_token()}
    made = client.post("/dashboard/key", form)
    assert made.status == 303 and made.headers["Location"] == "/dashboard/key/new"
    assert made.body == b"" and made.headers["Cache-Control"] == "no-store"
    shown = client.get(made.headers["Location"])
    key = NEW_KEY.search(shown.body.decode()).group(1)
    assert shown.status == 200 and shown.headers["Cache-Control"] == "no-store"
    assert key not in "".join(f"{k}: {v}" for k, v in {**made.headers, **shown.headers}.items())

    for _ in range(2):  # the browser's reload
        again = client.get("/dashboard/key/new")
        assert again.status == 200 and key not in again.body.decode()
        assert "already shown" in text_of(again)
        assert NEW_KEY.search(again.body.decode()) is None
        assert re.search(r'<form method="post" action="/dashboard/key"', again.body.decode())
        assert "Regenerate key" in text_of(again)
    assert key_prefix(accounts, account_id) == key[:12]
    scraped = call("POST", shop.process.url("/scrape"), {"url": site.url("/article")}, key=key)
    assert scraped.status == 200 and scraped.json["success"] is True, scraped.body

    # the key waits for its page in this session only
    other, _, _ = member(shop.public, accounts, "reload-other")
    made = client.post("/dashboard/key", form)
    stolen = WebClient(shop.public)
    stolen.cookies = other.cookies
    assert NEW_KEY.search(stolen.get("/dashboard/key/new").body.decode()) is None
    regenerated = NEW_KEY.search(client.get("/dashboard/key/new").body.decode()).group(1)
    assert regenerated != key and key_prefix(accounts, account_id) == regenerated[:12]
    refused = call("POST", shop.process.url("/scrape"), {"url": site.url("/article")}, key=key)
    assert refused.status == 401


def test_the_key_is_on_the_page_that_makes_it_and_on_no_other(shop, accounts, site):
    client, account_id, _ = member(shop.public, accounts, "keyonce", credits=20)
    made = client.post("/dashboard/key", {"csrf_token": client.csrf_token()})
    assert made.status == 303
    reply = client.get(made.headers["Location"])
    key = NEW_KEY.search(reply.body.decode()).group(1)
    assert reply.headers["Cache-Control"] == "no-store"
    assert key not in "".join(f"{k}: {v}" for k, v in reply.headers.items())
    assert reply.body.decode().count(key) == 1

    tried = client.post(
        "/dashboard/try",
        {"csrf_token": client.csrf_token(), "api_key": key, "url": site.url("/article")},
    )
    assert tried.status == 200 and "Charged: 1 credit." in text_of(tried)
    assert key not in tried.body.decode()

    pages = {path: client.get(f"/dashboard{path}") for path in PAGES}
    pages["/usage.csv"] = client.get("/dashboard/usage.csv")
    pages["/login"] = client.get("/dashboard/login")
    for path, page in pages.items():
        assert key not in page.body.decode(), path
        assert key[4:20] not in page.body.decode(), path
    assert key[:12] in pages[""].body.decode()  # the prefix is shown, as a reminder
    assert key_prefix(accounts, account_id) == key[:12]


def test_log_in_answers_do_not_tell_which_emails_exist(shop, accounts):
    _, _, email = member(shop.public, accounts, "known")
    wrong_password = WebClient(shop.public).log_in(email, "not the password")
    unknown_email = WebClient(shop.public).log_in("nobody-" + email, PASSWORD)
    assert wrong_password.status == unknown_email.status == 400
    assert "Wrong email or password." in text_of(wrong_password)
    assert text_of(wrong_password).replace(email, "E") == text_of(unknown_email).replace(
        "nobody-" + email, "E"
    )

    taken = WebClient(shop.public)
    reply = taken.sign_up(email.upper(), "another password")
    assert reply.status == 400 and not taken.has_session()
    message = text_of(reply)
    assert "could not create an account with these details" in message
    assert "exist" not in message and "taken" not in message and "registered" not in message


def test_log_in_attempts_are_limited_per_email(shop, accounts):
    client, _, email = member(shop.public, accounts, "limited")
    stranger = WebClient(shop.public)
    for _ in range(4):  # member() used the first of the five attempts a minute
        assert stranger.log_in(email, "guess").status == 400
    refused = stranger.log_in(email, PASSWORD)
    assert refused.status == 429 and not stranger.has_session()
    assert int(refused.headers["Retry-After"]) >= 1
    assert "Too many log-in attempts" in text_of(refused)
    # another email from the same address is not held back
    assert member(shop.public, accounts, "unlimited")[0].has_session()
    assert client.get("/dashboard").status == 200  # sessions already open are not affected


def test_logging_out_ends_the_session_for_good(shop, accounts):
    client, _, _ = member(shop.public, accounts, "logout")
    cookie = next(c.value for c in client.cookies if c.name == "scrapespy_session")
    reply = client.post("/dashboard/logout", {"csrf_token": client.csrf_token()})
    assert reply.status == 303 and reply.headers["Location"] == "/dashboard/login"
    assert client.get("/dashboard").headers["Location"] == "/dashboard/login"
    replayed = WebClient(shop.public).request(
        "GET", "/dashboard/usage", headers={"Cookie": f"scrapespy_session={cookie}"}
    )
    assert replayed.status == 303 and replayed.headers["Location"] == "/dashboard/login"


def test_the_return_page_tells_pending_from_arrived(shop, accounts):
    client, account_id, _ = member(shop.public, accounts, "returns")
    started = client.post(
        "/dashboard/credits", {"csrf_token": client.csrf_token(), "amount_eur": "7.5"}
    )
    assert started.status == 303
    checkout = started.headers["Location"]
    session_id = checkout.rsplit("/", 1)[1]
    pending = client.get(f"/dashboard/credits/return?session_id={session_id}")
    assert pending.status == 200 and 'data-status="pending"' in pending.body.decode()
    assert "7.50 EUR" in text_of(pending)
    assert re.search(r'http-equiv="refresh" content="2; url=[^"]+check=1"', pending.body.decode())
    stopped = client.get(f"/dashboard/credits/return?session_id={session_id}&check=10")
    assert "http-equiv" not in stopped.body.decode()
    assert "credits are added automatically" in text_of(stopped)

    confirm = WebClient(shop.public).post(checkout.removeprefix(shop.public) + "/confirm", {})
    assert confirm.status == 303
    paid = client.get(f"/dashboard/credits/return?session_id={session_id}&check=3")
    assert 'data-status="paid"' in paid.body.decode() and "http-equiv" not in paid.body.decode()
    assert "7\u202f500 credits have arrived" in text_of(paid)
    assert accounts.summary(account_id)["balance"] == 7500


def test_the_api_and_the_buy_form_share_the_accounts_checkout_limit(shop, accounts):
    client, account_id, _ = member(shop.public, accounts, "buyer")
    key = new_key(client)
    for n in range(CHECKOUTS_PER_MINUTE - 1):
        reply = call("POST", shop.url("/credits/buy"), {"pack": "10"}, key=key)
        assert reply.status == 200, (n, reply.body)
    form = {"csrf_token": client.csrf_token(), "pack": "10"}
    assert client.post("/dashboard/credits", form).status == 303  # the tenth
    refused = call("POST", shop.url("/credits/buy"), {"pack": "10"}, key=key)
    assert refused.status == 429 and int(refused.headers["Retry-After"]) >= 1
    assert refused.json["error"].startswith("too many checkout sessions")
    page = client.post("/dashboard/credits", form)
    assert page.status == 429 and int(page.headers["Retry-After"]) >= 1
    assert page.headers["Content-Type"].startswith("text/html")
    assert "too many checkout sessions" in text_of(page)
    assert payments_of(accounts, account_id) == CHECKOUTS_PER_MINUTE


def test_bad_amounts_are_explained_and_start_no_checkout(shop, accounts):
    client, account_id, _ = member(shop.public, accounts, "amounts")
    for amount, message in [("4", "smallest amount is 5"), ("5.555", "two decimals")]:
        reply = client.post(
            "/dashboard/credits", {"csrf_token": client.csrf_token(), "amount_eur": amount}
        )
        assert reply.status == 400 and message in text_of(reply)
    assert payments_of(accounts, account_id) == 0


def test_without_a_payment_provider_the_credits_page_says_so(service, accounts):
    client, account_id, _ = member(service.base, accounts, "nopay")
    page = client.get("/dashboard/credits")
    assert page.status == 200
    assert "payments are not configured" in text_of(page)
    assert 'name="pack"' not in page.body.decode()
    refused = client.post("/dashboard/credits", {"csrf_token": client.csrf_token(), "pack": "10"})
    assert refused.status == 503 and "payments are not configured" in text_of(refused)
    assert payments_of(accounts, account_id) == 0


def test_api_errors_stay_json_while_dashboard_errors_are_pages(shop):
    assert call("GET", shop.url("/nope")).error_answer == ({"error": "not found"}, "not_found")
    assert (
        call("POST", shop.url("/scrape"), {"url": "https://example.com/"}).error_answer
        == UNAUTHORIZED
    )
    page = call("GET", shop.url("/dashboard/nope"))
    assert page.status == 404 and page.headers["Content-Type"].startswith("text/html")
    assert "There is no such page." in text_of(page) and "Traceback" not in text_of(page)
    assert WebClient(shop.public).get("/dashboard/").headers["Location"] == "/dashboard"
    css = call("GET", shop.url("/dashboard/static/dashboard.css"))
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    assert call("GET", shop.url("/dashboard/static/../app.py")).status == 404


def test_session_cookies_are_http_only_and_same_site(shop, accounts):
    email = new_email("cookie")
    accounts.database.run_sync(
        accounts_module.create, email, trials=1, password_hash=hash_password(PASSWORD)
    )
    cookie = WebClient(shop.public).log_in(email, PASSWORD).headers["Set-Cookie"]
    assert cookie.startswith("scrapespy_session=")
    assert "; HttpOnly" in cookie and "; SameSite=lax" in cookie and "; Path=/dashboard" in cookie
    assert "Secure" not in cookie  # the public address is plain http here


def test_behind_an_https_proxy_cookies_are_secure_and_log_ins_are_limited_per_address(
    database_url, tmp_path_factory
):
    process = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("https"),
        env={
            "SCRAPESPY_PUBLIC_URL": "https://spy.example.test",
            "SCRAPESPY_TRUST_X_FORWARDED_FOR": "1",
        },
    ).start()
    try:
        # as behind a proxy that ends TLS: the client speaks http, so it sends the cookies itself;
        # its forms come from the public https origin
        client = WebClient(process.base, origin="https://spy.example.test")
        form = client.get("/dashboard/login")
        form_cookie = form.headers["Set-Cookie"]
        # __Host-: only this host can set it (Secure, Path=/, no Domain)
        assert form_cookie.startswith("__Host-scrapespy_form=")
        assert "; Path=/; Secure; HttpOnly" in form_cookie and "Domain" not in form_cookie
        jar = {"Cookie": form_cookie.split(";")[0]}
        token = re.search(r'name="form_token" value="([^"]+)"', form.body.decode()).group(1)
        email = new_email("secure")
        fields = {"form_token": token, "email": email, "password": PASSWORD}
        signed_up = client.request(
            "POST", "/dashboard/signup", {**fields, "password_confirm": PASSWORD}, jar
        )
        assert signed_up.status == 303
        cookie = signed_up.headers["Set-Cookie"]
        assert cookie.startswith("__Host-scrapespy_session=")
        assert "; Path=/;" in cookie and "; Secure; HttpOnly" in cookie
        # thirty attempts a minute from one address, whatever the emails; the address is the
        # one the trusted proxy appended, not what the visitor wrote before it
        for n in range(30):
            attempt = {**fields, "email": f"x{n}-{email}", "password": "guess"}
            sent = {**jar, "X-Forwarded-For": f"10.9.9.{n}, 203.0.113.5"}
            assert client.request("POST", "/dashboard/login", attempt, sent).status == 400, n
        sent = {**jar, "X-Forwarded-For": "203.0.113.5"}
        refused = client.request("POST", "/dashboard/login", fields, sent)
        assert refused.status == 429 and "Too many log-in attempts" in text_of(refused)
        elsewhere = {**jar, "X-Forwarded-For": "203.0.113.6"}
        assert client.request("POST", "/dashboard/login", fields, elsewhere).status == 303
    finally:
        process.stop()


def test_a_new_key_reaches_its_page_whichever_worker_serves_it(
    database_url, tmp_path_factory, accounts
):
    """``--workers 2``: the redirect to the key's page may land on the other process; the key
    waits in the database's session row, so it is shown whichever process serves the page.

    Which process accepts a connection is the kernel's choice, so the test makes it: the process
    that made the key is stopped (SIGSTOP) while the page is asked for, and only the other one
    can answer."""
    process = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("workers"),
        env={"SCRAPESPY_SESSION_SECRET": "one secret for both workers"},
        args=("--workers", "2"),
    ).start()

    def served(method: str, path: str) -> list[dict[str, Any]]:
        return [e for e in process.access_entries() if (e["method"], e["path"]) == (method, path)]

    def next_entry(method: str, path: str, seen: int) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while len(entries := served(method, path)) <= seen:
            assert time.monotonic() < deadline, process.log_text()
            time.sleep(0.05)
        return entries[seen]

    try:
        deadline = time.monotonic() + 60
        while sum("scrapespy listening on" in line for line in process.output) < 2:
            assert time.monotonic() < deadline, process.log_text()
            time.sleep(0.1)
        client, account_id, _ = member(process.base, accounts, "workers")
        for round_ in range(2):
            press_create_key(client)
            maker = next_entry("POST", "/dashboard/key", round_)["pid"]
            with paused_between_writes(maker, database_url):
                page = client.get("/dashboard/key/new")
            assert page.status == 200
            assert key_prefix(accounts, account_id) == shown_key(page)[:12]
            shown_by = next_entry("GET", "/dashboard/key/new", round_)["pid"]
            assert shown_by != maker
    finally:
        process.stop()


def test_try_it_takes_actions_as_json_and_says_what_is_wrong_with_them(shop, accounts, site):
    site.routes["/echo"] = echo_request

    def read(reply: Any) -> str:
        return html.unescape(text_of(reply))

    client, account_id, _ = member(shop.public, accounts, "actions", credits=20)
    key = new_key(client)
    form = {"csrf_token": client.csrf_token(), "api_key": key, "url": site.url("/echo")}
    before = site.count("/echo")

    broken = client.post("/dashboard/try", {**form, "engine": "js", "actions": '[{"type": '})
    assert broken.status == 400
    assert "Actions: the JSON is not valid" in read(broken)
    assert '[{"type": ' in html.unescape(broken.body.decode())  # kept, to be fixed
    not_a_list = client.post("/dashboard/try", {**form, "actions": '{"type": "click"}'})
    assert not_a_list.status == 400 and "write a JSON list of steps" in read(not_a_list)

    steps = '[{"type": "wait", "ms": 10}, {"type": "click", "selector": "p[["}]'
    bad_step = client.post("/dashboard/try", {**form, "engine": "js", "actions": steps})
    assert "HTTP status 400" in read(bad_step)
    assert "'actions[1].selector': invalid CSS selector" in read(bad_step)
    static = client.post("/dashboard/try", {**form, "wait_for": "#prices"})
    assert "'wait_for' waits in a browser: it needs the js engine" in read(static)
    assert site.count("/echo") == before
    assert accounts.summary(account_id)["balance"] == 20

    phone = client.post(
        "/dashboard/try", {**form, "device": "mobile", "selectors": "ua = #ua::text"}
    )
    assert phone.status == 200 and "Charged: 1 credit." in read(phone)
    assert "Mobile Safari" in read(phone)
    assert '<option value="mobile" selected>' in phone.body.decode()


def test_try_it_offers_auto_and_bills_the_engine_that_answered(shop, accounts, site):
    client, account_id, _ = member(shop.public, accounts, "auto", credits=20)
    key = new_key(client)
    form = {"csrf_token": client.csrf_token(), "api_key": key, "url": site.url("/js-only")}
    reply = client.post("/dashboard/try", {**form, "engine": "auto", "proxy_type": "auto"})
    assert reply.status == 200
    assert "Charged: 5 credits." in html.unescape(text_of(reply))  # js, direct
    assert "Rendered by JS" in html.unescape(text_of(reply))
    body = reply.body.decode()
    assert '<option value="auto" selected>' in body
    assert accounts.summary(account_id)["balance"] == 15
