"""Credit purchases: a provider interface, chosen by configuration.

Without a configured provider ``POST /credits/buy`` answers 503 ``payments are not configured``.
"""

from __future__ import annotations

from typing import Protocol

from service.schemas import BuyRequest

NOT_CONFIGURED = "payments are not configured"


class PaymentProvider(Protocol):
    name: str

    async def start_checkout(self, account_id: int, order: BuyRequest) -> str:
        """Create a checkout for the order and return the URL to send the buyer to."""
        ...
