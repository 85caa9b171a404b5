"""A job's ``webhook``: ``{"url", "events"}``, checked and stored on the job (``jobs.webhook``).

:func:`take_webhook` takes it out of a native job's body. A webhook of another flavour
(service.jobs.webhook_flavours) also stores its ``flavour``, the ``version`` of the API that
made the job, its own ``headers`` (added to each POST) and ``metadata`` (echoed in each body):
the front of that API checks its own field and hands :func:`checked_webhook` the result.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from service.core.config import Config
from service.core.errors import BadRequest
from service.core.schemas import _HTTP_URL, MAX_URL_LENGTH, _Strict, validate
from service.egress.addresses import BLOCKED_MESSAGE, is_public_address, parse_host_literal

Event = Literal["started", "page", "completed", "failed"]
EVENTS: tuple[Event, ...] = ("started", "page", "completed", "failed")
MAX_HEADERS = 20
MAX_METADATA = 50
MAX_VALUE_LENGTH = 1024
# headers a webhook's own may not set: the connection's framing, and the signature
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-connection",
        "x-firecrawl-signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class WebhookSpec(_Strict):
    """A job's ``webhook``: where to POST its events, and which (all four when left out)."""

    url: str = Field(max_length=MAX_URL_LENGTH)
    events: list[Event] = Field(
        default_factory=lambda: list(EVENTS), min_length=1, max_length=len(EVENTS)
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip()
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ValueError("must be a valid http or https URL") from None
        if (
            _HTTP_URL.search(value) is None
            or parts.scheme.lower() not in ("http", "https")
            or not parts.hostname
            or any(ch.isspace() for ch in value)
        ):
            raise ValueError("must be a valid http or https URL")
        return value

    @field_validator("events")
    @classmethod
    def _distinct(cls, value: list[Event]) -> list[Event]:
        if len(set(value)) != len(value):
            raise ValueError("must not name an event twice")
        return value


class FlavouredSpec(WebhookSpec):
    """A webhook of another flavour (service.jobs.webhook_flavours): a job made by a front of
    another API (Firecrawl's) stores its webhook's own headers, metadata and API version."""

    flavour: Literal["firecrawl"] | None = None
    version: Literal[1, 2] | None = None
    headers: dict[str, str] = Field(default_factory=dict, max_length=MAX_HEADERS)
    metadata: dict[str, str] = Field(default_factory=dict, max_length=MAX_METADATA)

    @field_validator("headers")
    @classmethod
    def _sendable(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if _TOKEN.fullmatch(name) is None:
                raise ValueError(f"{name!r} is not a header name")
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"{name!r} is set by the service")
            if _CONTROL.search(text) or len(text) > MAX_VALUE_LENGTH:
                raise ValueError(
                    f"{name!r}: a value of at most {MAX_VALUE_LENGTH} characters, no line breaks"
                )
        return value

    @field_validator("metadata")
    @classmethod
    def _bounded(cls, value: dict[str, str]) -> dict[str, str]:
        if any(len(k) + len(v) > MAX_VALUE_LENGTH for k, v in value.items()):
            raise ValueError(f"each key and value together at most {MAX_VALUE_LENGTH} characters")
        return value

    @model_validator(mode="after")
    def _own_fields(self) -> FlavouredSpec:
        if self.flavour is None and (self.version or self.headers or self.metadata):
            raise ValueError("'version', 'headers' and 'metadata' need a 'flavour'")
        return self


class _WithWebhook(_Strict):
    webhook: WebhookSpec


class _WithFlavoured(_Strict):
    webhook: FlavouredSpec


def checked_webhook(value: Any, *, flavoured: bool = False) -> dict[str, Any]:
    """A job's ``webhook`` as stored on the job: ``{"url", "events"}``, and for another
    flavour (``flavoured``: a front of another API asks) its ``flavour``, ``version``,
    ``headers`` and ``metadata``; a 400 names the field. The native API's webhook has no
    other field."""
    if flavoured:
        spec: WebhookSpec = validate(_WithFlavoured, {"webhook": value}).webhook
    else:
        spec = validate(_WithWebhook, {"webhook": value}).webhook
    stored: dict[str, Any] = {
        "url": spec.url,
        "events": [event for event in EVENTS if event in spec.events],
    }
    if isinstance(spec, FlavouredSpec) and spec.flavour is not None:
        stored |= {
            "flavour": spec.flavour,
            "version": spec.version or 2,
            "headers": spec.headers,
            "metadata": spec.metadata,
        }
    return stored


def take_webhook(data: dict[str, Any], config: Config) -> dict[str, Any] | None:
    """Takes ``webhook`` out of a job's body (the rest are scrape options): checked, as stored
    on the job, or None. A URL whose host is a literal non-public address is a 400 when the
    service does not reach private targets; a name that resolves to one fails at delivery."""
    if "webhook" not in data:
        return None
    return reachable(checked_webhook(data.pop("webhook")), config)


def reachable(stored: dict[str, Any], config: Config) -> dict[str, Any]:
    """``stored``, unless its URL's host is a literal address the service may not reach."""
    host = urlsplit(stored["url"]).hostname or ""
    literal = parse_host_literal(host)
    if not config.allow_private_targets and literal is not None and not is_public_address(literal):
        raise BadRequest(f"invalid request: 'webhook.url': {BLOCKED_MESSAGE}")
    return stored
