"""Firecrawl's ``webhook`` field of a crawl or a batch scrape, as the native job's webhook.

A stub until Firecrawl's webhook events are translated: a job asking for one is a 400, never a
job whose caller waits for events that will not come.
"""

from __future__ import annotations

from typing import Any

from service.core.errors import BadRequest
from service.firecrawl.scrape import Version


def native_webhook(value: Any, version: Version) -> dict[str, Any]:
    """What goes under the native job options' ``webhook`` for Firecrawl's ``webhook``."""
    raise BadRequest("invalid request: 'webhook': Firecrawl's webhooks are not supported yet")
