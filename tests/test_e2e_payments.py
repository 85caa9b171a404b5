"""End to end: buying credits through the real service, the real ``stripe`` library and a local
stand-in of Stripe's API, and Stripe's webhooks signed with Stripe's scheme."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.service import ServiceProcess, call
from service.billing.payments.checkout_limit import CHECKOUTS_PER_MINUTE
from tests.checkout_flow import (
    PUBLIC_URL,
    assert_credited_once,
    at_level,
    balance,
    bought,
    buy,
    deliver,
    payments_of,
    purchases_of,
    start_service,
    status,
)
from tests.stripe_standin import API_KEY, WEBHOOK_SECRET, StripeStandin, event, sign

BAD_SIGNATURE = (
    {"error": "invalid Stripe-Signature: the webhook could not be verified"},
    "invalid_request",
)


@pytest.fixture(scope="module")
def standin() -> Iterator[StripeStandin]:
    server = StripeStandin().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(database_url, standin, tmp_path_factory) -> Iterator[ServiceProcess]:
    proc = start_service(
        database_url,
        tmp_path_factory.mktemp("shop"),
        STRIPE_SECRET_KEY=API_KEY,
        STRIPE_WEBHOOK_SECRET=WEBHOOK_SECRET,
        SCRAPESPY_STRIPE_API_BASE=standin.url,
    ).start()
    yield proc
    proc.stop()


# creating the checkout -------------------------------------------------------------------------


def test_a_pack_opens_a_stripe_checkout_in_euros_for_the_account(shop, standin, accounts):
    account_id, key = accounts.create()
    before = len(standin.calls)
    reply = buy(shop, key, {"pack": "10"})
    assert reply.status == 200, reply.body
    assert list(reply.json) == ["url"]
    assert len(standin.calls) == before + 1
    sent = standin.calls[-1]
    assert (sent.method, sent.path) == ("POST", "/v1/checkout/sessions")
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["Idempotency-Key"]
    assert sent.form == {
        "mode": "payment",
        "line_items[0][price_data][currency]": "eur",
        "line_items[0][price_data][unit_amount]": "1000",
        "line_items[0][price_data][product_data][name]": "10000 scrapespy credits",
        "line_items[0][quantity]": "1",
        "success_url": f"{PUBLIC_URL}/dashboard/credits/return?session_id={{CHECKOUT_SESSION_ID}}",
        "cancel_url": f"{PUBLIC_URL}/dashboard/credits?cancelled=1",
        "client_reference_id": str(account_id),
        "metadata[account_id]": str(account_id),
        "metadata[credits]": "10000",
    }
    session = standin.sessions[reply.json["url"].rsplit("/", 1)[1]]
    assert reply.json["url"] == session["url"]
    assert status(accounts, session["id"], account_id) == "pending"
    assert balance(accounts, account_id) == 0


def test_checkouts_are_limited_per_account_and_a_refused_one_reaches_no_provider(
    shop, standin, accounts
):
    account_id, key = accounts.create()
    other_id, other_key = accounts.create()
    before = len(standin.calls)
    for n in range(CHECKOUTS_PER_MINUTE):
        assert buy(shop, key, {"pack": "10"}).status == 200, n
    refused = buy(shop, key, {"pack": "10"})
    assert refused.status == 429
    # ten at once, then one every six seconds
    assert 1 <= int(refused.headers["Retry-After"]) <= 60 // CHECKOUTS_PER_MINUTE
    assert refused.json["error"].startswith("too many checkout sessions")
    assert len(standin.calls) == before + CHECKOUTS_PER_MINUTE
    assert payments_of(accounts, account_id) == CHECKOUTS_PER_MINUTE
    # the limit is the account's own
    assert buy(shop, other_key, {"pack": "10"}).status == 200
    assert payments_of(accounts, other_id) == 1


def test_a_custom_amount_is_sent_in_cents(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"amount_eur": 7.5})
    sent = standin.calls[-1].form
    assert sent["line_items[0][price_data][unit_amount]"] == "750"
    assert sent["metadata[credits]"] == "7500"
    assert session["amount_total"] == 750
    assert status(accounts, session["id"], account_id) == "pending"


@pytest.mark.parametrize(
    "body",
    [
        {"pack": "10", "amount_eur": 10},
        {},
        {"pack": "20"},
        {"amount_eur": 4.99},
        {"amount_eur": 7.555},
        {"amount_eur": "10"},
        {"pack": "10", "coupon": "free"},
    ],
)
def test_invalid_orders_are_400_and_reach_no_provider(shop, standin, accounts, body):
    account_id, key = accounts.create()
    before = len(standin.calls)
    reply = buy(shop, key, body)
    assert reply.status == 400, reply.body
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert list(reply.json) == ["error"] and reply.json["error"]
    assert len(standin.calls) == before
    assert payments_of(accounts, account_id) == 0


def test_a_missing_or_invalid_key_is_401_and_reaches_no_provider(shop, standin):
    before = len(standin.calls)
    for key in (None, "spy_not_a_real_key_at_all_000000000000"):
        reply = buy(shop, key, {"pack": "10"})
        assert reply.status == 401
        assert reply.error_answer == (
            {"error": "API key (X-API-Key header) is missing or invalid"},
            "unauthorized",
        )
    assert len(standin.calls) == before


@pytest.mark.parametrize(
    ("failure", "status_code", "message"),
    [
        (401, 503, "payments are misconfigured on this server; nothing was charged"),
        (500, 502, "the payment provider failed to start the checkout; nothing was charged"),
    ],
)
def test_a_provider_error_is_a_clear_5xx_and_records_nothing(
    shop, standin, accounts, failure, status_code, message
):
    account_id, key = accounts.create()
    standin.fail_with = failure
    try:
        reply = buy(shop, key, {"pack": "50"})
    finally:
        standin.fail_with = None
    assert reply.status == status_code
    code = {502: "payment_provider_error", 503: "unavailable"}[status_code]
    assert reply.error_answer == ({"error": message}, code)
    assert payments_of(accounts, account_id) == 0
    assert "Traceback" not in shop.log_text()


def test_stripe_unreachable_is_502_and_records_nothing(database_url, tmp_path_factory, accounts):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    proc = start_service(
        database_url,
        tmp_path_factory.mktemp("down"),
        STRIPE_SECRET_KEY=API_KEY,
        STRIPE_WEBHOOK_SECRET=WEBHOOK_SECRET,
        SCRAPESPY_STRIPE_API_BASE=f"http://127.0.0.1:{closed}",
    ).start()
    try:
        account_id, key = accounts.create()
        reply = buy(proc, key, {"pack": "10"})
        assert reply.status == 502
        assert reply.error_answer == (
            {
                "error": "the payment provider could not be reached; nothing was charged, "
                "retry later"
            },
            "payment_provider_error",
        )
        assert payments_of(accounts, account_id) == 0
    finally:
        proc.stop()


# the webhook -----------------------------------------------------------------------------------


def test_a_paid_checkout_credits_once_however_often_stripe_says_so(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"amount_eur": 7.5})
    completed = event(
        "checkout.session.completed", session, payment_status="paid", status="complete"
    )
    reply = deliver(shop, completed, sign(completed))
    assert reply.status == 200, reply.body
    assert_credited_once(accounts, account_id, session["id"], 7500)

    assert deliver(shop, completed, sign(completed)).status == 200
    succeeded = event("checkout.session.async_payment_succeeded", session, payment_status="paid")
    assert deliver(shop, succeeded, sign(succeeded)).status == 200
    assert_credited_once(accounts, account_id, session["id"], 7500)


def test_bad_signatures_are_400_and_credit_nothing(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"pack": "10"})
    completed = event("checkout.session.completed", session, payment_status="paid")
    other = event("checkout.session.completed", session, payment_status="paid", amount_total=1)
    now = int(time.time())
    refused = {
        "forged": sign(completed, secret="whsec_attacker"),
        "missing": None,
        "stale": sign(completed, timestamp=now - 301),
        "for another body": sign(other),
        "garbled": "t=soon,v1=nothing",
        "other scheme": sign(completed).replace("v1=", "v0="),
    }
    for name, signature in refused.items():
        reply = deliver(shop, completed, signature)
        assert reply.status == 400, name
        assert reply.error_answer == BAD_SIGNATURE, name
    assert balance(accounts, account_id) == 0
    assert status(accounts, session["id"], account_id) == "pending"

    # Within the tolerance, the genuine delivery is accepted.
    assert deliver(shop, completed, sign(completed, timestamp=now - 250)).status == 200
    assert_credited_once(accounts, account_id, session["id"], 10_000)


def test_an_unpaid_completion_waits_for_the_async_payment(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"pack": "50"})
    completed = event("checkout.session.completed", session, payment_status="unpaid")
    assert deliver(shop, completed, sign(completed)).status == 200
    assert balance(accounts, account_id) == 0
    assert status(accounts, session["id"], account_id) == "pending"

    succeeded = event("checkout.session.async_payment_succeeded", session, payment_status="paid")
    assert deliver(shop, succeeded, sign(succeeded)).status == 200
    assert deliver(shop, succeeded, sign(succeeded)).status == 200
    assert_credited_once(accounts, account_id, session["id"], 50_000)


def test_a_failed_async_payment_is_marked_failed_and_credits_nothing(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"pack": "100"})
    completed = event("checkout.session.completed", session, payment_status="unpaid")
    failed = event("checkout.session.async_payment_failed", session, payment_status="unpaid")
    assert deliver(shop, completed, sign(completed)).status == 200
    assert deliver(shop, failed, sign(failed)).status == 200
    assert status(accounts, session["id"], account_id) == "failed"
    assert balance(accounts, account_id) == 0
    assert purchases_of(accounts, account_id) == []

    abandoned = bought(shop, standin, key, {"pack": "10"})
    expired = event("checkout.session.expired", abandoned, status="expired")
    assert deliver(shop, expired, sign(expired)).status == 200
    assert status(accounts, abandoned["id"], account_id) == "failed"
    assert balance(accounts, account_id) == 0


def test_an_amount_that_differs_from_ours_credits_nothing_and_is_logged(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"amount_eur": 20})
    tampered = event("checkout.session.completed", session, payment_status="paid", amount_total=200)
    assert deliver(shop, tampered, sign(tampered)).status == 200
    assert balance(accounts, account_id) == 0
    assert status(accounts, session["id"], account_id) == "mismatch"
    logged = [line for line in shop.output if "PAYMENT MISMATCH" in line]
    assert len(logged) == 1 and at_level(logged[0], "error") and session["id"] in logged[0]


def test_events_about_other_things_are_acknowledged_and_ignored(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"pack": "10"})
    unknown = event(
        "checkout.session.completed", session, id="cs_test_not_ours", payment_status="paid"
    )
    refund = event("charge.refunded", {"id": "ch_1", "object": "charge"})
    for payload in (unknown, refund):
        reply = deliver(shop, payload, sign(payload))
        assert reply.status == 200, reply.body
    assert balance(accounts, account_id) == 0
    assert status(accounts, session["id"], account_id) == "pending"


def test_concurrent_duplicate_deliveries_credit_exactly_once(shop, standin, accounts):
    account_id, key = accounts.create()
    session = bought(shop, standin, key, {"pack": "10"})
    completed = event("checkout.session.completed", session, payment_status="paid")
    succeeded = event("checkout.session.async_payment_succeeded", session, payment_status="paid")
    deliveries = [completed, succeeded] * 6
    start = threading.Barrier(len(deliveries))

    def send(payload: bytes) -> int:
        signature = sign(payload)
        start.wait(timeout=10)
        return deliver(shop, payload, signature).status

    with ThreadPoolExecutor(len(deliveries)) as pool:
        statuses = list(pool.map(send, deliveries))
    assert statuses == [200] * len(deliveries)
    assert_credited_once(accounts, account_id, session["id"], 10_000)


def test_openapi_documents_the_webhook(shop):
    document = call("GET", shop.url("/openapi.json")).json
    assert "post" in document["paths"]["/webhooks/stripe"]
