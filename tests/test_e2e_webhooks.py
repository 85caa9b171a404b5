"""End to end: a job's ``webhook`` on the real service, received by a local HTTP server.

The receiver checks every delivery with the ``standardwebhooks`` library's own verifier under
the account's secret; a forged or tampered delivery is refused by that same verifier. A receiver
that fails gets the delivery again with the same ``webhook-id``, until a 2xx or the last attempt;
a webhook on a private address is a 400 when the URL spells the address, and a failed delivery
(nothing sent) when its name resolves there, on a service that does not reach private targets.
A delivery waiting for its retry when its instance is killed is sent by the next one; the
dashboard shows the secret deliveries are signed with, and rotates it.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.db.tables import jobs, webhook_deliveries
from service.jobs import webhook_store
from tests.dashboard_client import member, new_key
from tests.test_e2e_batch import a_database_of_its_own, add_pages, batch, start, wait_finished

pytestmark = pytest.mark.long(minutes=2)

HOOKS_ENV = {
    "SCRAPESPY_WEBHOOK_RETRY_SECONDS": "0.2",
    "SCRAPESPY_WEBHOOK_MAX_ATTEMPTS": "3",
    "SCRAPESPY_WEBHOOK_TIMEOUT_SECONDS": "1",
}


class Receiver:
    """Records each POST (path, headers, body); ``/fail-N/...`` answers 500 N times first,
    ``/down/...`` always; ``/slow/...`` answers after 2 seconds."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    receiver.received.append((self.path, headers, body))
                    seen = sum(1 for path, _, _ in receiver.received if path == self.path)
                first = self.path.split("/")[1]
                if first == "slow":
                    time.sleep(2)
                failing = first == "down" or (
                    first.startswith("fail-") and seen <= int(first.removeprefix("fail-"))
                )
                # an answer with a body the service does not read (it closes the connection)
                answer = b"x" * 256 * 1024
                self.send_response(500 if failing else 200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                try:
                    self.wfile.write(answer)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def at(self, path: str) -> list[tuple[dict[str, str], bytes]]:
        with self.lock:
            return [(headers, body) for got, headers, body in self.received if got == path]

    def wait(
        self, path: str, count: int, timeout: float = 30
    ) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.at(path)) < count:
            assert time.monotonic() < deadline, f"{len(self.at(path))} deliveries at {path}"
            time.sleep(0.05)
        return self.at(path)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture(scope="module")
def hooks_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("hooks-db"))


@pytest.fixture(scope="module")
def accounts(hooks_db: tuple[str, Accounts]) -> Accounts:
    return hooks_db[1]


@pytest.fixture(scope="module")
def hooks_service(
    hooks_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(hooks_db[0], tmp_path_factory.mktemp("hooks"), **HOOKS_ENV)
    yield proc
    proc.stop()


def secret_of(accounts: Accounts, account_id: int) -> str:
    return accounts.database.run_sync(webhook_store.secret_of, account_id)


def deliveries(accounts: Accounts, job_id: str) -> list[Any]:
    def read(conn: Any) -> list[Any]:
        seq = conn.execute(select(jobs.c.seq).where(jobs.c.public_id == job_id)).scalar_one()
        return list(
            conn.execute(
                select(webhook_deliveries)
                .where(webhook_deliveries.c.job_seq == seq)
                .order_by(webhook_deliveries.c.id)
            )
        )

    return accounts.database.run_sync(read)


def settled(accounts: Accounts, job_id: str, timeout: float = 30) -> list[Any]:
    """The job's deliveries once none is pending."""
    deadline = time.monotonic() + timeout
    while True:
        rows = deliveries(accounts, job_id)
        if rows and all(row.status != "pending" for row in rows):
            return rows
        assert time.monotonic() < deadline, [(row.event, row.status) for row in rows]
        time.sleep(0.1)


def recorded(accounts: Accounts, job_id: str, timeout: float = 30) -> None:
    """Waits until the job's first delivery has a failed attempt on record."""
    deadline = time.monotonic() + timeout
    while not any(row.attempts >= 1 for row in deliveries(accounts, job_id)):
        assert time.monotonic() < deadline, "the failed attempt was never recorded"
        time.sleep(0.05)


def test_a_batch_s_events_are_signed_and_verified_by_the_library(
    hooks_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/hooks-signed", 3)
    hook = receiver.url("/signed")
    reply = batch(hooks_service, key, {"urls": urls, "webhook": {"url": hook}})
    assert reply.status == 202, reply.body
    job_id = reply.json["id"]
    wait_finished(hooks_service, key, job_id)
    got = receiver.wait("/signed", 5)
    time.sleep(0.3)
    assert len(receiver.at("/signed")) == 5  # started, three pages, completed: no more

    verifier = Webhook(secret_of(accounts, account_id))
    payloads = [verifier.verify(body, headers) for headers, body in got]
    assert {h["webhook-id"] for h, _ in got} == {
        row.message_id for row in deliveries(accounts, job_id)
    }
    assert len({h["webhook-id"] for h, _ in got}) == 5
    # sent concurrently, so not necessarily in order: each says what it is and when it happened
    payloads.sort(key=lambda payload: (payload["timestamp"], payload["type"] != "job.started"))
    types = [payload["type"] for payload in payloads]
    assert types == ["job.started", "job.page", "job.page", "job.page", "job.completed"]
    for payload in payloads:
        assert payload["data"]["id"] == job_id
        assert payload["timestamp"].endswith("Z")
    assert payloads[0]["data"]["status"] == "running"
    completed = payloads[-1]["data"]
    assert completed["status"] == "completed" and completed["credits_charged"] == 3
    assert completed["counts"] == {
        "done": 3,
        "failed": 0,
        "blocked": 0,
        "pending": 0,
        "skipped": 0,
    }
    pages = sorted((p["data"]["page"] for p in payloads[1:-1]), key=lambda page: page["index"])
    assert [page["url"] for page in pages] == urls
    for n, page in enumerate(pages):
        assert (page["status"], page["credits"], page["result_left_out"]) == ("done", 1, False)
        assert page["result"]["title"] == f"Page {n}" and page["result"]["success"] is True

    headers, body = next((h, b) for h, b in got if b'"job.completed"' in b)
    other = Webhook(webhook_store.new_secret())
    with pytest.raises(WebhookVerificationError):
        other.verify(body, headers)  # signed under another secret
    with pytest.raises(WebhookVerificationError):
        verifier.verify(body.replace(b'"completed"', b'"cancelled"'), headers)  # tampered
    with pytest.raises(WebhookVerificationError):
        verifier.verify(body, {**headers, "webhook-timestamp": str(int(time.time()) - 3600)})


def test_a_crawl_s_events_are_signed_too(
    hooks_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    site.page("/hooks-crawl/", "<html><title>Start</title><a href='/hooks-crawl/a'>a</a></html>")
    site.page("/hooks-crawl/a", "<html><title>A</title><p>leaf</p></html>")
    body = {
        "url": site.url("/hooks-crawl/"),
        "sitemap": "skip",
        "include_paths": ["^/hooks-crawl/"],
        "webhook": {"url": receiver.url("/crawled"), "events": ["started", "completed"]},
    }
    reply = call("POST", hooks_service.url("/crawl"), body, key=key)
    assert reply.status == 202, reply.body
    job_id = reply.json["id"]
    wait_finished(hooks_service, key, job_id)
    got = receiver.wait("/crawled", 2)
    verifier = Webhook(secret_of(accounts, account_id))
    payloads = sorted(
        (verifier.verify(b, h) for h, b in got), key=lambda payload: payload["timestamp"]
    )
    assert [payload["type"] for payload in payloads] == ["job.started", "job.completed"]
    done = payloads[-1]["data"]
    assert (done["kind"], done["status"], done["counts"]["done"]) == ("crawl", "completed", 2)


def test_only_the_events_asked_for_are_sent_and_a_cancel_is_failed(
    hooks_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/hooks-cancel", 6, delay=0.5)
    hook = {"url": receiver.url("/cancelled"), "events": ["failed"]}
    reply = batch(hooks_service, key, {"urls": urls, "webhook": hook})
    assert reply.status == 202, reply.body
    job_id = reply.json["id"]
    time.sleep(0.3)
    assert call("DELETE", hooks_service.url(f"/jobs/{job_id}"), key=key).status == 200
    wait_finished(hooks_service, key, job_id)
    [(headers, body)] = receiver.wait("/cancelled", 1)
    payload = Webhook(secret_of(accounts, account_id)).verify(body, headers)
    assert payload["type"] == "job.failed" and payload["data"]["status"] == "cancelled"
    assert [row.event for row in settled(accounts, job_id)] == ["failed"]


def test_a_failing_receiver_gets_the_delivery_again_until_it_answers(
    hooks_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/hooks-retry", 1)
    flaky = {"url": receiver.url("/fail-2/hook"), "events": ["completed"]}
    reply = batch(hooks_service, key, {"urls": urls, "webhook": flaky})
    job_id = reply.json["id"]
    got = receiver.wait("/fail-2/hook", 3)
    [row] = settled(accounts, job_id)
    assert (row.status, row.attempts, row.last_error) == ("delivered", 3, None)
    assert len({headers["webhook-id"] for headers, _ in got}) == 1  # one message, three tries
    verifier = Webhook(secret_of(accounts, account_id))
    assert all(verifier.verify(body, headers)["type"] == "job.completed" for headers, body in got)
    time.sleep(0.5)
    assert len(receiver.at("/fail-2/hook")) == 3

    down = {"url": receiver.url("/down/hook"), "events": ["completed"]}
    job_id = batch(hooks_service, key, {"urls": urls, "webhook": down}).json["id"]
    [row] = settled(accounts, job_id)
    assert (row.status, row.attempts) == ("failed", 3)
    assert row.last_error == "the receiver answered HTTP 500"
    assert len(receiver.at("/down/hook")) == 3

    slow = {"url": receiver.url("/slow/hook"), "events": ["completed"]}
    job_id = batch(hooks_service, key, {"urls": urls, "webhook": slow}).json["id"]
    [row] = settled(accounts, job_id)
    assert (row.status, row.attempts) == ("failed", 3)
    assert row.last_error == "no answer within 1 seconds"


@pytest.mark.parametrize(
    ("webhook", "message"),
    [
        ({"url": "ftp://example.com/hook"}, "'webhook.url': must be a valid http or https URL"),
        ({"url": "http://example.com/", "events": []}, "'webhook.events'"),
        ({"url": "http://example.com/", "events": ["done"]}, "'webhook.events[0]'"),
        ({"url": "http://example.com/", "events": ["page", "page"]}, "name an event twice"),
        ({"url": "http://example.com/", "secret": "x"}, "unknown field 'webhook.secret'"),
        # the fields of Firecrawl's flavour are its routes' own, not the native API's
        ({"url": "http://example.com/", "flavour": "firecrawl"}, "unknown field 'webhook.flavour'"),
        ({"url": "http://example.com/", "headers": {"a": "b"}}, "unknown field 'webhook.headers'"),
        ("http://example.com/", "'webhook'"),
    ],
)
def test_a_bad_webhook_is_a_400_naming_its_field(
    hooks_service: ServiceProcess, accounts: Accounts, webhook: Any, message: str
) -> None:
    _, key = accounts.create(credits=10)
    reply = batch(hooks_service, key, {"urls": ["http://example.com/"], "webhook": webhook})
    assert reply.status == 400, reply.body
    assert message in reply.json["error"], reply.json


@pytest.fixture
def own_database(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Accounts]]:
    """No service that reaches private targets shares it (it would send what this one refuses)."""
    yield from a_database_of_its_own(database_url, tmp_path)


def test_private_webhook_targets_are_refused_by_a_guarded_service(
    own_database: tuple[str, Accounts], tmp_path: Path, site: TargetSite, receiver: Receiver
) -> None:
    accounts = own_database[1]
    guarded = start(
        own_database[0],
        tmp_path / "guarded",
        **{**HOOKS_ENV, "SCRAPESPY_WEBHOOK_MAX_ATTEMPTS": "2"},
        SCRAPESPY_ALLOW_PRIVATE_TARGETS="0",
        SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS="hooks.test=127.0.0.1",
    )
    try:
        account_id, key = accounts.create(credits=100)
        # the pages are on loopback too: refused and unbilled, the job completes all the same
        urls = [site.url("/article")]
        literal = {"url": receiver.url("/literal"), "events": ["completed"]}
        reply = batch(guarded, key, {"urls": urls, "webhook": literal})
        assert reply.status == 400
        assert reply.json["error"] == (
            "invalid request: 'webhook.url': target address is not allowed "
            "(private, loopback or reserved network)"
        )
        named = {"url": receiver.url("/named", host="localhost"), "events": ["completed"]}
        refused = batch(guarded, key, {"urls": urls, "webhook": named}).json["id"]
        allowed = {"url": receiver.url("/allowed", host="hooks.test"), "events": ["completed"]}
        sent = batch(guarded, key, {"urls": urls, "webhook": allowed}).json["id"]
        [row] = settled(accounts, refused)
        assert (row.status, row.attempts) == ("failed", 2)
        assert "not allowed" in row.last_error
        assert receiver.at("/named") == []
        [(headers, body)] = receiver.wait("/allowed", 1)
        assert Webhook(secret_of(accounts, account_id)).verify(body, headers)["data"]["id"] == sent
        assert json.loads(body)["data"]["counts"]["failed"] == 1
    finally:
        guarded.stop()


SECRET_SHOWN = re.compile(r'<code class="webhook-secret">(whsec_[A-Za-z0-9+/=]+)</code>')


def test_the_dashboard_shows_the_signing_secret_and_rotates_it(
    hooks_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    client, account_id, _ = member(hooks_service.base, accounts, "webhook-secret", credits=100)
    shown = SECRET_SHOWN.search(client.get("/dashboard/key").body.decode())
    assert shown, "no signing secret on the API keys page"
    before = shown.group(1)
    assert before == SECRET_SHOWN.search(client.get("/dashboard/key").body.decode()).group(1)

    # a form without the CSRF token changes nothing
    assert client.post("/dashboard/key/webhook-secret", {}).status == 403
    rotated = client.post("/dashboard/key/webhook-secret", {"csrf_token": client.csrf_token()})
    assert (rotated.status, rotated.headers["Location"]) == (303, "/dashboard/key#webhook-secret")
    after = SECRET_SHOWN.search(client.get("/dashboard/key").body.decode()).group(1)
    assert after != before and len(base64.b64decode(after.removeprefix("whsec_"))) == 32

    # the secret shown is the one deliveries are signed with; the old one no longer verifies
    key = new_key(client)
    hook = {"url": receiver.url("/dashboard-secret"), "events": ["completed"]}
    batch(hooks_service, key, {"urls": add_pages(site, "/hooks-dash", 1), "webhook": hook})
    [(headers, body)] = receiver.wait("/dashboard-secret", 1)
    assert Webhook(after).verify(body, headers)["type"] == "job.completed"
    with pytest.raises(WebhookVerificationError):
        Webhook(before).verify(body, headers)
    # never in an API answer
    assert "whsec_" not in call("GET", hooks_service.url("/account"), key=key).body.decode()


def test_a_delivery_waiting_for_its_retry_survives_a_kill(
    own_database: tuple[str, Accounts], tmp_path: Path, site: TargetSite, receiver: Receiver
) -> None:
    database_url, accounts = own_database
    env = {**HOOKS_ENV, "SCRAPESPY_WEBHOOK_RETRY_SECONDS": "3"}
    first = start(database_url, tmp_path / "first", **env)
    try:
        account_id, key = accounts.create(credits=10)
        hook = {"url": receiver.url("/fail-1/restart"), "events": ["completed"]}
        urls = add_pages(site, "/hooks-kill", 1)
        job_id = batch(first, key, {"urls": urls, "webhook": hook}).json["id"]
        receiver.wait("/fail-1/restart", 1)  # the first attempt failed; the next is in 3 s
        # killed once that failure is recorded (a busy machine may record it after the receiver
        # answered): an attempt killed before its outcome was written is sent again, as the first
        recorded(accounts, job_id)
    finally:
        first.stop(signal.SIGKILL)
    second = start(database_url, tmp_path / "second", **env)
    try:
        # The retry's task is due 3 s after the failure. A busy machine may have killed the first
        # instance after it had taken that task (the stalled-worker recovery gives it back, past
        # SCRAPESPY_JOB_STALLED_SECONDS, 30), or between recording the failure and queueing the
        # retry (the delivery's lease, twice the webhook timeout + 30 s, runs out first): the
        # retry comes within a minute either way.
        got = receiver.wait("/fail-1/restart", 2, timeout=90)
        [row] = settled(accounts, job_id)
        assert (row.status, row.attempts) == ("delivered", 2)
        assert got[0][0]["webhook-id"] == got[1][0]["webhook-id"] == row.message_id
        verified = Webhook(secret_of(accounts, account_id)).verify(got[1][1], got[1][0])
        assert verified["data"]["id"] == job_id
    finally:
        second.stop()
