"""What a buyer and an operator can see of a credit purchase on a running service."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from typing import Any

from sqlalchemy import func, select

from harness.service import Accounts, Reply, ServiceProcess, call
from service.billing.payments import purchases
from service.db.tables import ledger_entries, payments
from tests.stripe_standin import StripeStandin

PUBLIC_URL = "https://spy.example.test"


def start_service(database_url: str, workdir: Any, **env: str) -> ServiceProcess:
    return ServiceProcess(database_url, workdir, env={"SCRAPESPY_PUBLIC_URL": PUBLIC_URL, **env})


def buy(service: ServiceProcess, key: str | None, body: Any) -> Reply:
    return call("POST", service.url("/credits/buy"), body, key=key)


def deliver(service: ServiceProcess, payload: bytes, signature: str | None) -> Reply:
    headers = {"Content-Type": "application/json; charset=utf-8"}
    if signature is not None:
        headers["Stripe-Signature"] = signature
    return call("POST", service.url("/webhooks/stripe"), raw=payload, headers=headers)


def bought(service: ServiceProcess, standin: StripeStandin, key: str, body: Any) -> dict:
    """Start a checkout; returns the session the stand-in created for it."""
    reply = buy(service, key, body)
    assert reply.status == 200, reply.body
    session = next(s for s in standin.sessions.values() if s["url"] == reply.json["url"])
    return session


def balance(accounts: Accounts, account_id: int) -> int:
    return accounts.summary(account_id)["balance"]


def status(accounts: Accounts, session_id: str, account_id: int) -> str | None:
    return accounts.database.run_sync(purchases.payment_status, session_id, account_id)


def payments_of(accounts: Accounts, account_id: int) -> int:
    return accounts.database.run_sync(
        lambda conn: conn.execute(
            select(func.count()).select_from(payments).where(payments.c.account_id == account_id)
        ).scalar_one()
    )


def purchases_of(accounts: Accounts, account_id: int) -> list[tuple[int, str]]:
    return accounts.database.run_sync(
        lambda conn: [
            (row.amount, row.reference)
            for row in conn.execute(
                select(ledger_entries.c.amount, ledger_entries.c.reference).where(
                    ledger_entries.c.account_id == account_id,
                    ledger_entries.c.kind == "purchase",
                )
            )
        ]
    )


def at_level(line: str, level: str) -> bool:
    """Whether a service log line is at ``level``, whatever the log format (text or JSON)."""
    return re.search(rf"\b{level}\b", line, re.IGNORECASE) is not None


def assert_credited_once(accounts: Accounts, account_id: int, session_id: str, credits: int):
    assert balance(accounts, account_id) == credits
    assert accounts.entries_sum(account_id) == credits
    assert purchases_of(accounts, account_id) == [(credits, session_id)]
    assert status(accounts, session_id, account_id) == "paid"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def post_form(url: str) -> Reply:
    """Submit an empty HTML form as a browser would, without following the redirect."""
    request = urllib.request.Request(url, data=b"", method="POST")
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=30) as response:
            return Reply(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers.items()), error.read())
