"""The demo provider: the whole purchase flow without Stripe, for trying scrapespy out.

On only with ``SCRAPESPY_PAYMENTS=demo``, never by default; the server logs a warning at start
that payments are simulated. ``start_checkout`` records a pending payment exactly as the Stripe
provider does and sends the buyer to a checkout page served by this service
(``GET /payments/demo/checkout/<session_id>``). Its confirm button credits through the very same
``purchases.confirm`` as a Stripe webhook, with the amount recorded at checkout. The session id
is 144 random bits and is the only proof needed to confirm: the money is simulated, and a stranger
confirming someone's checkout only gives that someone their demo credits.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import jinja2
from twisted.web.server import Request

from service.billing.payments import purchases
from service.billing.payments.checkout_limit import CheckoutLimit
from service.core.config import Config
from service.core.errors import NotFound
from service.core.headers import set_page_headers
from service.core.schemas import BuyRequest
from service.db import Database

log = logging.getLogger(__name__)

PREFIX = "demo_"
CHECKOUT_PATH = "/payments/demo/checkout/"
SIMULATED = (
    "SCRAPESPY_PAYMENTS=demo: payments are SIMULATED; every checkout can be confirmed without "
    "paying. Never use this in production"
)

# Styled by the dashboard's stylesheet: the page gets the dashboard's Content-Security-Policy,
# which allows no inline style.
_PAGE = jinja2.Environment(autoescape=True).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo checkout · scrapespy</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/dashboard/static/dashboard.css">
</head><body><main><section class="narrow">
<h1>Demo checkout</h1>
<p class="notice warning">Payments on this server are simulated: no card is needed and nothing is
charged.</p>
<p id="amount">{{ euros }} EUR for {{ credits }} credits</p>
{% if status == "pending" %}
<form method="post" action="{{ confirm_path }}">
<button type="submit" class="primary">Confirm payment</button>
<a href="{{ cancel_url }}">Cancel</a>
</form>
{% else %}
<p id="status">This checkout is {{ status }}.</p>
<p><a href="{{ return_url }}">Back to your credits</a></p>
{% endif %}
</section></main></body></html>
"""
)


class DemoCheckout:
    name = "demo"

    def __init__(self, config: Config, database: Database, limit: CheckoutLimit):
        self.config = config
        self.database = database
        self.limit = limit
        log.warning(SIMULATED)

    def stop(self) -> None:
        pass

    def return_url(self, session_id: str) -> str:
        return f"{self.config.public_url}/dashboard/credits/return?session_id={session_id}"

    async def start_checkout(self, account_id: int, order: BuyRequest) -> str:
        await self.limit.admit(account_id)
        session_id = PREFIX + secrets.token_urlsafe(18)
        await self.database.run(
            purchases.record_checkout, session_id, account_id, self.name, order.amount_cents()
        )
        log.info("demo checkout %s started for account %d", session_id, account_id)
        return f"{self.config.public_url}{CHECKOUT_PATH}{session_id}"

    async def _payment(self, session_id: str) -> purchases.Payment:
        payment = None
        if session_id.startswith(PREFIX):
            payment = await self.database.run(purchases.find, session_id)
        if payment is None or payment.provider != self.name:
            raise NotFound("no such demo checkout")
        return payment

    async def checkout_page(self, request: Request, session_id: str) -> bytes:
        """The page, with the dashboard's headers: no framing, no caching, no foreign script."""
        payment = await self._payment(session_id)
        set_page_headers(request)
        return _PAGE.render(
            euros=f"{payment.amount_cents / 100:.2f}",
            credits=payment.credits,
            status=payment.status,
            confirm_path=f"{CHECKOUT_PATH}{session_id}/confirm",
            cancel_url=f"{self.config.public_url}/dashboard/credits?cancelled=1",
            return_url=self.return_url(session_id),
        ).encode()

    async def confirm(self, session_id: str) -> str:
        """Confirm as the provider would, then return where to send the buyer."""
        payment = await self._payment(session_id)
        confirmation = await self.database.run(
            purchases.confirm,
            session_id,
            amount_total=payment.amount_cents,
            currency=purchases.CURRENCY,
            account_reference=str(payment.account_id),
        )
        log.info("demo checkout %s confirmed: %s", session_id, confirmation)
        return self.return_url(session_id)


def demo_provider(provider: Any) -> DemoCheckout:
    """The demo provider when it is the one configured; the demo pages do not exist otherwise."""
    if not isinstance(provider, DemoCheckout):
        raise NotFound()
    return provider
