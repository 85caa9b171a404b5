"""The Stripe provider: a hosted Checkout Session per purchase, made with the official library.

On when ``STRIPE_SECRET_KEY`` is set; ``SCRAPESPY_STRIPE_API_BASE`` points the library at
stripe-mock or a local stand-in. The library is blocking, so every call runs on a small thread
pool of this provider's own, never on the reactor thread nor on the database's pool.
Credits arrive later, through the webhook (``service.billing.payments.webhooks``).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import stripe
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from service.billing.payments import purchases
from service.billing.payments.checkout_limit import CheckoutLimit
from service.core.config import Config
from service.core.errors import BadGateway, ServiceUnavailable
from service.core.schemas import BuyRequest
from service.db import Database

log = logging.getLogger(__name__)

UNREACHABLE = "the payment provider could not be reached; nothing was charged, retry later"
PROVIDER_FAILED = "the payment provider failed to start the checkout; nothing was charged"
MISCONFIGURED = "payments are misconfigured on this server; nothing was charged"

# Connect, read: a checkout is created while the buyer waits.
TIMEOUT = (5.0, 30.0)
# The library sends an idempotency key with every POST, so a retry cannot create two sessions.
NETWORK_RETRIES = 1


def session_params(config: Config, account_id: int, order: BuyRequest) -> dict[str, Any]:
    cents = order.amount_cents()
    credits = purchases.credits_for(cents)
    return {
        "mode": "payment",
        "line_items": [
            {
                "price_data": {
                    "currency": purchases.CURRENCY,
                    "unit_amount": cents,
                    "product_data": {"name": f"{credits} scrapespy credits"},
                },
                "quantity": 1,
            }
        ],
        "success_url": (
            f"{config.public_url}/dashboard/credits/return?session_id={{CHECKOUT_SESSION_ID}}"
        ),
        "cancel_url": f"{config.public_url}/dashboard/credits?cancelled=1",
        "client_reference_id": str(account_id),
        "metadata": {"account_id": str(account_id), "credits": str(credits)},
    }


class StripeCheckout:
    name = "stripe"

    def __init__(
        self, config: Config, database: Database, limit: CheckoutLimit, *, threads: int = 4
    ):
        self.config = config
        self.database = database
        self.limit = limit
        base_addresses: Any = {"api": config.stripe_api_base} if config.stripe_api_base else None
        self.client = stripe.StripeClient(
            config.stripe_secret_key,
            base_addresses=base_addresses,
            max_network_retries=NETWORK_RETRIES,
            http_client=stripe.RequestsClient(timeout=TIMEOUT),
        )
        self.pool = ThreadPool(minthreads=0, maxthreads=threads, name="scrapespy-stripe")
        self.pool.start()

    def stop(self) -> None:
        self.pool.stop()

    def _create_session(self, params: dict[str, Any]) -> Any:
        return self.client.v1.checkout.sessions.create(
            params,  # type: ignore[arg-type]
            {"idempotency_key": f"scrapespy-{uuid.uuid4()}"},
        )

    async def start_checkout(self, account_id: int, order: BuyRequest) -> str:
        from twisted.internet import reactor

        await self.limit.admit(account_id)
        params = session_params(self.config, account_id, order)
        created = deferToThreadPool(reactor, self.pool, self._create_session, params)
        try:
            session = await created
        except (stripe.AuthenticationError, stripe.PermissionError) as exc:
            log.error("Stripe refused the secret key (STRIPE_SECRET_KEY): %s", exc.user_message)
            raise ServiceUnavailable(MISCONFIGURED) from None
        except stripe.APIConnectionError as exc:
            log.error("Stripe could not be reached: %s", exc.user_message)
            raise BadGateway(UNREACHABLE) from None
        except stripe.StripeError as exc:
            log.error(
                "Stripe failed to create a checkout session (HTTP %s): %s",
                exc.http_status,
                exc.user_message,
            )
            raise BadGateway(PROVIDER_FAILED) from None
        session_id, url = getattr(session, "id", None), getattr(session, "url", None)
        if not isinstance(session_id, str) or not isinstance(url, str) or not session_id or not url:
            log.error("Stripe answered a checkout session without an id or url")
            raise BadGateway(PROVIDER_FAILED)
        await self.database.run(
            purchases.record_checkout, session_id, account_id, self.name, order.amount_cents()
        )
        log.info(
            "checkout %s started for account %d: %d cents",
            session_id,
            account_id,
            order.amount_cents(),
        )
        return url
