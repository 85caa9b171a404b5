"""``POST /webhooks/stripe``: Stripe's confirmations, verified before anything else is read.

The ``Stripe-Signature`` header is checked on the raw body with ``STRIPE_WEBHOOK_SECRET`` by the
library's own ``WebhookSignature`` (HMAC-SHA256 over ``"{t}.{body}"``, 300 s tolerance); a bad,
missing or stale signature is a 400 and nothing is read further. Stripe delivers at least once,
sometimes several times at once and out of order: the credit itself is idempotent per session
(``purchases.confirm``), so answering 200 to a replay is always safe.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import stripe

from service.billing.payments import purchases
from service.core.errors import BadRequest
from service.db import Database

log = logging.getLogger(__name__)

TOLERANCE_SECONDS = 300
BAD_SIGNATURE = "invalid Stripe-Signature: the webhook could not be verified"


def verify(payload: bytes, signature: str | None, secret: str) -> dict[str, Any]:
    """The event, once its signature is proven; BadRequest otherwise."""
    try:
        stripe.WebhookSignature.verify_header(
            payload, signature, secret, tolerance=TOLERANCE_SECONDS
        )
    except (stripe.SignatureVerificationError, UnicodeDecodeError) as exc:
        log.warning("Stripe webhook refused: %s", exc)
        raise BadRequest(BAD_SIGNATURE) from None
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise BadRequest("the webhook body is not JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise BadRequest("the webhook body is not a Stripe event")
    return event


def _session_of(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data")
    session = data.get("object") if isinstance(data, dict) else None
    if (
        not isinstance(session, dict)
        or session.get("object") != "checkout.session"
        or not isinstance(session.get("id"), str)
    ):
        raise BadRequest(f"{event['type']} event without a checkout session")
    return session


class StripeWebhooks:
    def __init__(self, secret: str, database: Database):
        self.secret = secret
        self.database = database

    async def receive(self, payload: bytes, signature: str | None) -> str:
        """Handle one delivery; returns what was done, for the answer and the log."""
        event = verify(payload, signature, self.secret)
        event_type: str = event["type"]
        match event_type:
            case "checkout.session.completed":
                session = _session_of(event)
                match session.get("payment_status"):
                    case "paid":
                        outcome = await self._confirm(session)
                    case "unpaid":
                        # A delayed method (SEPA, bank transfer): async_payment_* follows.
                        outcome = "awaiting payment"
                    case other:
                        log.warning(
                            "checkout %s completed with payment_status %r: nothing credited",
                            session["id"],
                            other,
                        )
                        outcome = "not paid"
            case "checkout.session.async_payment_succeeded":
                outcome = await self._confirm(_session_of(event))
            case "checkout.session.async_payment_failed" | "checkout.session.expired":
                session = _session_of(event)
                failed = await self.database.run(purchases.mark_failed, session["id"])
                outcome = "marked failed" if failed else "unchanged"
            case _:
                outcome = "ignored"
        log.info("Stripe event %s (%s): %s", event.get("id"), event_type, outcome)
        return outcome

    async def _confirm(self, session: dict[str, Any]) -> str:
        amount_total = session.get("amount_total")
        reference = session.get("client_reference_id")
        confirmation = await self.database.run(
            purchases.confirm,
            session["id"],
            amount_total=amount_total if isinstance(amount_total, int) else None,
            currency=session.get("currency") if isinstance(session.get("currency"), str) else None,
            account_reference=reference if isinstance(reference, str) else None,
        )
        return str(confirmation)
