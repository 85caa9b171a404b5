"""Test helpers for the dashboard: a cookie-keeping HTTP client, the real Chromium on a thread
of its own, and the service started behind its public address.

Playwright's sync API refuses to run on a thread whose asyncio loop is running, and the test
process runs the asyncio reactor: every browser call goes through :class:`BrowserThread`, one
thread that owns Playwright, the browser and every page made from it.
"""

from __future__ import annotations

import http.cookiejar
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import func, select

from harness.service import Accounts, Reply, ServiceProcess
from service.billing import accounts as accounts_module
from service.billing import keys, ledger
from service.billing.passwords import hash_password
from service.db.tables import payments
from tests.relay import Relay

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
FORM_TOKEN = re.compile(r'name="form_token" value="([^"]+)"')
NEW_KEY = re.compile(r'id="new-key" class="key">([^<]+)<')
PASSWORD = "correct horse battery"
# an error answer as a client reads it (harness.service.Reply.error_answer): body, X-Error-Code
UNAUTHORIZED = ({"error": "API key (X-API-Key header) is missing or invalid"}, "unauthorized")
# every signed-in page, under /dashboard
PAGES = ["", "/key", "/credits", "/usage", "/ledger", "/jobs", "/try"]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class WebClient:
    """A browser without a browser: keeps cookies, does not follow redirects, and like a browser
    says where its forms come from (``Origin``: the page's origin, ``base`` unless told)."""

    def __init__(self, base: str, origin: str | None = None):
        self.base = base
        self.origin: str | None = origin or base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect
        )

    def request(
        self,
        method: str,
        path: str,
        fields: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        data = urllib.parse.urlencode(fields).encode() if fields is not None else None
        sent = dict(headers or {})
        if method == "POST" and self.origin is not None:
            sent.setdefault("Origin", self.origin)
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=sent)
        if data is not None:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        try:
            with self.opener.open(request, timeout=60) as response:
                return Reply(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers.items()), error.read())

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, fields: dict[str, str]) -> Reply:
        return self.request("POST", path, fields)

    def csrf_token(self) -> str:
        found = CSRF.search(self.get("/dashboard").body.decode())
        assert found, "no CSRF token on the overview: not signed in?"
        return found.group(1)

    def form_token(self, path: str) -> str:
        found = FORM_TOKEN.search(self.get(path).body.decode())
        assert found, f"no form token on {path}"
        return found.group(1)

    def sign_up(self, email: str, password: str) -> Reply:
        token = self.form_token("/dashboard/signup")
        return self.post(
            "/dashboard/signup",
            {
                "form_token": token,
                "email": email,
                "password": password,
                "password_confirm": password,
            },
        )

    def log_in(self, email: str, password: str) -> Reply:
        token = self.form_token("/dashboard/login")
        return self.post(
            "/dashboard/login", {"form_token": token, "email": email, "password": password}
        )

    def has_session(self) -> bool:
        return any(cookie.name.endswith("scrapespy_session") for cookie in self.cookies)


def text_of(reply: Reply) -> str:
    """The visible text of an HTML reply, tags dropped and whitespace folded."""
    without_tags = re.sub(r"<[^>]+>", " ", reply.body.decode())
    return re.sub(r"[ \t\r\n]+", " ", without_tags).strip()


class BrowserThread:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="playwright")
        self._playwright: Any = None
        self.browser: Any = None

    def start(self) -> BrowserThread:
        def launch() -> None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self.browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )

        self._pool.submit(launch).result(timeout=60)
        return self

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._pool.submit(fn, *args, **kwargs).result(timeout=180)

    def stop(self) -> None:
        def close() -> None:
            if self.browser is not None:
                self.browser.close()
            if self._playwright is not None:
                self._playwright.stop()

        try:
            self._pool.submit(close).result(timeout=30)
        finally:
            self._pool.shutdown(wait=False)


@dataclass
class PublicService:
    """The service behind a relay whose address is its SCRAPESPY_PUBLIC_URL.

    The demo checkout sends the buyer to the public address; the service listens on a port of
    its own choosing, so the relay is the public address, known before the service starts.
    """

    process: ServiceProcess
    relay: Relay

    @property
    def public(self) -> str:
        return f"http://127.0.0.1:{self.relay.port}"

    def url(self, path: str) -> str:
        return self.public + path

    @classmethod
    def start(cls, database_url: str, workdir: Path, **env: str) -> PublicService:
        relay = Relay("127.0.0.1", 0)
        process = ServiceProcess(
            database_url,
            workdir,
            env={"SCRAPESPY_PUBLIC_URL": f"http://127.0.0.1:{relay.port}", **env},
        ).start()
        port = int(process.base.rsplit(":", 1)[1])
        relay.target = ("127.0.0.1", port)
        return cls(process, relay.start())

    def stop(self) -> None:
        self.relay.cut()
        self.process.stop()


# accounts made for a test ----------------------------------------------------------------------


def member(
    base: str, accounts: Accounts, label: str, credits: int = 0
) -> tuple[WebClient, int, str]:
    """An account with a password (as ``scrapespy accounts create --password-stdin`` makes),
    logged in through the form; sign-ups per address are scarce, log-ins are not."""
    email = new_email(label)
    account_id = accounts.database.run_sync(
        accounts_module.create, email, trials=10, password_hash=hash_password(PASSWORD)
    )
    if credits:
        accounts.database.run_sync(
            ledger.credit, account_id, credits, kind="grant", reference="test"
        )
    client = WebClient(base)
    assert client.log_in(email, PASSWORD).status == 303
    return client, account_id, email


def new_key(client: WebClient) -> str:
    """Press Create (or Regenerate) key and follow the redirect to the page that shows it."""
    press_create_key(client)
    return shown_key(client.get("/dashboard/key/new"))


def press_create_key(client: WebClient) -> None:
    """Create (or Regenerate) key: a redirect to the page that shows the new key."""
    made = client.post("/dashboard/key", {"csrf_token": client.csrf_token()})
    assert made.status == 303 and made.headers["Location"] == "/dashboard/key/new"


def shown_key(page: Reply) -> str:
    """The key on the page the redirect leads to."""
    found = NEW_KEY.search(page.body.decode())
    assert found, page.body.decode()
    return found.group(1)


def key_prefix(accounts: Accounts, account_id: int) -> str | None:
    return accounts.database.run_sync(keys.shown_prefix, account_id)


def payments_of(accounts: Accounts, account_id: int) -> int:
    return accounts.database.run_sync(
        lambda conn: conn.execute(
            select(func.count()).select_from(payments).where(payments.c.account_id == account_id)
        ).scalar_one()
    )


def new_email(label: str) -> str:
    return f"{label}-{time.monotonic_ns()}@example.com"


def grant(accounts: Accounts, email: str, credits: int) -> int:
    account_id = accounts.database.run_sync(accounts_module.find_id, email)
    accounts.database.run_sync(ledger.credit, account_id, credits, kind="grant", reference="test")
    return account_id
