"""What one attempt of a delivery POSTs: its body and its own headers, by the webhook's flavour.

A job's webhook has a flavour (``"flavour"`` in the job's stored webhook; absent is ``native``).
The native flavour is the Standard Webhooks one (service.jobs.webhooks): the stored payload as
it is, signed with ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``. Other
flavours (Firecrawl's, service.firecrawl.webhooks) belong to the front that accepts their jobs:
the process hands their builders to the sender (:class:`service.jobs.webhooks.WebhookSender`)
in a table by name, so this part never imports a front.

A builder is called at each attempt with the delivery, the account's secret and the time of
sending; the sender adds ``content-type`` and ``user-agent`` unless the flavour sets them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from standardwebhooks.webhooks import Webhook

from service.jobs.webhook_store import Delivery

NATIVE = "native"


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One attempt's body, and the headers its flavour adds (names in lower case)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


Flavour = Callable[[Delivery, str, datetime], Outgoing]


def native(delivery: Delivery, secret: str, sent_at: datetime) -> Outgoing:
    """The stored payload, signed under the Standard Webhooks scheme."""
    return Outgoing(
        delivery.payload.encode(),
        {
            "webhook-id": delivery.message_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(secret).sign(
                delivery.message_id, sent_at, delivery.payload
            ),
        },
    )


def flavour_of(delivery: Delivery) -> str:
    return str(delivery.hook.get("flavour") or NATIVE)
