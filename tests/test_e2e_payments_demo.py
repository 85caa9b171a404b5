"""End to end: payments off by default, payment settings refused at start, and the demo provider
running the whole purchase on the service itself."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from harness.service import call
from service.core.headers import CONTENT_SECURITY_POLICY
from tests.checkout_flow import (
    PUBLIC_URL,
    assert_credited_once,
    at_level,
    balance,
    buy,
    deliver,
    post_form,
    start_service,
    status,
)
from tests.stripe_standin import API_KEY, WEBHOOK_SECRET, event, sign


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STRIPE_SECRET_KEY": API_KEY}, "STRIPE_WEBHOOK_SECRET is not"),
        (
            {
                "SCRAPESPY_PAYMENTS": "demo",
                "STRIPE_SECRET_KEY": API_KEY,
                "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET,
            },
            "unset STRIPE_SECRET_KEY",
        ),
        ({"SCRAPESPY_PAYMENTS": "free"}, "SCRAPESPY_PAYMENTS must be"),
    ],
    ids=["no-webhook-secret", "demo-with-stripe", "unknown-provider"],
)
def test_the_service_refuses_payment_settings_that_would_lose_money(
    database_url, tmp_path_factory, env, message
):
    proc = start_service(database_url, tmp_path_factory.mktemp("refused"), **env)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="did not start"):
        proc.start()
    # well before the start's own timeout (harness START_TIMEOUT, 300 s): it exits, not hangs
    assert time.monotonic() - began < 150, "the refusing service did not exit promptly"
    assert any(message in line for line in proc.output), proc.log_text()
    assert proc.process is not None and proc.process.returncode != 0


def test_payments_are_off_by_default(service, accounts):
    _, key = accounts.create()
    assert buy(service, key, {"pack": "10"}).error_answer == (
        {"error": "payments are not configured"},
        "unavailable",
    )
    assert buy(service, key, {"pack": "10"}).status == 503
    assert call("GET", service.url("/payments/demo/checkout/demo_x")).status == 404
    payload = event("checkout.session.completed", {"id": "cs_x", "object": "checkout.session"})
    assert deliver(service, payload, sign(payload)).status == 503


def test_the_demo_provider_runs_the_whole_flow_on_the_service(
    database_url, tmp_path_factory, accounts
):
    proc = start_service(
        database_url, tmp_path_factory.mktemp("demo"), SCRAPESPY_PAYMENTS="demo"
    ).start()
    try:
        warnings = [line for line in proc.output if "payments are SIMULATED" in line]
        assert warnings and at_level(warnings[0], "warning")
        account_id, key = accounts.create()
        reply = buy(proc, key, {"amount_eur": 12.5})
        assert reply.status == 200, reply.body
        url = urlsplit(reply.json["url"])
        assert f"{url.scheme}://{url.netloc}" == PUBLIC_URL
        assert url.path.startswith("/payments/demo/checkout/demo_")
        session_id = url.path.rsplit("/", 1)[1]
        assert status(accounts, session_id, account_id) == "pending"

        page = call("GET", proc.url(url.path))
        assert page.status == 200
        assert page.headers["Content-Type"].startswith("text/html")
        # the dashboard's own headers: not framed, not cached, no script or style from elsewhere
        assert page.headers["X-Frame-Options"] == "DENY"
        assert page.headers["Cache-Control"] == "no-store"
        assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        assert "<style" not in page.body.decode()  # the policy would block it
        assert "12.50 EUR for 12500 credits" in page.body.decode()
        assert "simulated" in page.body.decode()
        assert balance(accounts, account_id) == 0

        for _ in range(2):
            confirmed = post_form(proc.url(f"{url.path}/confirm"))
            assert confirmed.status == 303
            assert confirmed.headers["Location"] == (
                f"{PUBLIC_URL}/dashboard/credits/return?session_id={session_id}"
            )
        assert_credited_once(accounts, account_id, session_id, 12_500)
        assert "This checkout is paid." in call("GET", proc.url(url.path)).body.decode()

        assert call("GET", proc.url("/payments/demo/checkout/demo_unknown")).status == 404
        assert post_form(proc.url("/payments/demo/checkout/cs_test_x/confirm")).status == 404
    finally:
        proc.stop()
