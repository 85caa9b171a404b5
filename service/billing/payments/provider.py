"""Credit purchases: a provider interface, chosen by configuration.

``STRIPE_SECRET_KEY`` set: Stripe Checkout (``stripe_checkout``), credited by Stripe's webhooks.
``SCRAPESPY_PAYMENTS=demo``: simulated payments (``demo``), never on by default. Neither:
``POST /credits/buy`` answers 503 ``payments are not configured``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from service.billing.payments.checkout_limit import CheckoutLimit
from service.core.config import Config, ConfigError
from service.core.schemas import BuyRequest

if TYPE_CHECKING:
    from service.db import Database

NOT_CONFIGURED = "payments are not configured"


class PaymentProvider(Protocol):
    name: str

    async def start_checkout(self, account_id: int, order: BuyRequest) -> str:
        """Create a checkout for the order and return the URL to send the buyer to; first
        counts it against the account's limit (``checkout_limit``)."""
        ...

    def stop(self) -> None:
        """Release what the provider holds (threads); called once when the service stops."""
        ...


def make_provider(config: Config, database: Database) -> PaymentProvider | None:
    """The provider the operator configured, or None; refuses configurations that lose money."""
    choice = config.payments
    if choice not in ("", "stripe", "demo"):
        raise ConfigError(f"SCRAPESPY_PAYMENTS must be 'stripe' or 'demo', not {choice!r}")
    if choice == "demo":
        if config.stripe_secret_key:
            raise ConfigError(
                "SCRAPESPY_PAYMENTS=demo simulates payments; unset STRIPE_SECRET_KEY to use it"
            )
        from service.billing.payments.demo import DemoCheckout

        return DemoCheckout(config, database, CheckoutLimit.from_config(config))
    if not config.stripe_secret_key:
        if choice == "stripe":
            raise ConfigError("SCRAPESPY_PAYMENTS=stripe needs STRIPE_SECRET_KEY")
        return None
    if not config.stripe_webhook_secret:
        # Checkouts would take money that no webhook could ever credit.
        raise ConfigError("STRIPE_SECRET_KEY is set but STRIPE_WEBHOOK_SECRET is not")
    from service.billing.payments.stripe_checkout import StripeCheckout

    return StripeCheckout(config, database, CheckoutLimit.from_config(config))
