"""Reading the dashboard's HTML forms into the requests of the business layer.

Form values are text; the API's schemas are strict about types. The conversions happen here,
once, so that the "try it" form and the buy form end up in the very validation the API uses.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from service.core.errors import BadRequest
from service.core.schemas import MAX_AMOUNT_EUR, MIN_AMOUNT_EUR, BuyRequest, validate
from service.core.vocabulary import AUTO, ENGINES, FORMATS, OUTPUTS, TIERS

MAX_FIELD = 16 * 1024


# What the "try it" form offers, as (value, label): the engines and tiers in its selects, the
# outputs as checkboxes named format_<name>.
_ENGINE_LABELS = {
    "static": "static (HTTP fetch)",
    "js": "js (headless browser)",
    AUTO: "auto (js only for a JavaScript app)",
}
ENGINE_CHOICES = tuple((engine, _ENGINE_LABELS[engine]) for engine in (*ENGINES, AUTO))
TIER_CHOICES = tuple((tier, tier) for tier in (*TIERS, AUTO))
# the formats a checkbox asks for (json needs its schema: an API request)
CHECKBOX_FORMATS = tuple(name for name in FORMATS if OUTPUTS[name].checkbox)
FORMAT_CHOICES = tuple((name, OUTPUTS[name].label) for name in CHECKBOX_FORMATS)


class FormError(ValueError):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def form_fields(args: dict[bytes, list[bytes]]) -> dict[str, str]:
    """The first value of each field, decoded; a field sent twice keeps its first value."""
    fields = {}
    for raw_name, values in args.items():
        name = raw_name.decode("utf-8", "replace")
        if values:
            fields[name] = values[0][:MAX_FIELD].decode("utf-8", "replace")
    return fields


def int_arg(args: dict[bytes, list[bytes]], name: bytes, default: int, minimum: int = 0) -> int:
    """A whole number from the query string, bounded; the default when absent or malformed."""
    values = args.get(name)
    if not values:
        return default
    try:
        return max(minimum, min(int(values[0][:12]), 1_000_000))
    except ValueError:
        return default


def page_number(args: dict[bytes, list[bytes]]) -> int:
    return int_arg(args, b"page", 1, minimum=1)


def parse_selectors(text: str) -> dict[str, str] | None:
    """One ``name = CSS selector`` a line (the first ``=`` splits), or a JSON object."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("{"):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise FormError("Selectors: the JSON object is not valid JSON.") from None
        if not isinstance(parsed, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
        ):
            raise FormError("Selectors: the JSON must map names to CSS selectors (strings).")
        return parsed
    selectors = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, equals, selector = line.partition("=")
        if not equals or not name.strip() or not selector.strip():
            raise FormError(f"Selectors, line {number}: write it as name = CSS selector.")
        selectors[name.strip()] = selector.strip()
    return selectors


def scrape_body(fields: dict[str, str]) -> bytes:
    """The JSON body of ``POST /scrape`` that the "try it" form describes."""
    body: dict[str, Any] = {
        "url": fields.get("url", "").strip(),
        "engine": fields.get("engine", "static"),
        "proxy_type": fields.get("proxy_type", "none"),
        # An unticked checkbox sends nothing.
        "respect_robots": fields.get("respect_robots") == "on",
    }
    timeout = fields.get("timeout", "").strip()
    if timeout:
        try:
            body["timeout"] = float(timeout)
        except ValueError:
            raise FormError("Timeout: enter a number of seconds.") from None
    selectors = parse_selectors(fields.get("selectors", ""))
    if selectors is not None:
        body["selectors"] = selectors
    formats = [name for name in CHECKBOX_FORMATS if fields.get(f"format_{name}") == "on"]
    if formats:
        body["formats"] = formats
    for flag in ("only_main_content", "screenshot_full_page"):
        if fields.get(flag) == "on":
            body[flag] = True
    if fields.get("device") == "mobile":
        body["device"] = "mobile"
    wait_for = fields.get("wait_for", "").strip()
    if wait_for:
        ms = wait_for.isascii() and wait_for.isdigit() and len(wait_for) <= 9
        body["wait_for"] = {"ms": int(wait_for)} if ms else {"selector": wait_for}
    actions = parse_actions(fields.get("actions", ""))
    if actions is not None:
        body["actions"] = actions
    return orjson.dumps(body)


def parse_actions(text: str) -> list[Any] | None:
    """A JSON list of steps; the API checks the steps themselves, with its own messages."""
    text = text.strip()
    if not text:
        return None
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise FormError(f"Actions: the JSON is not valid ({exc}).") from None
    if not isinstance(parsed, list):
        raise FormError(
            'Actions: write a JSON list of steps, such as [{"type": "click", "selector": "#more"}].'
        )
    return parsed


def shown_try_form(fields: dict[str, str]) -> dict[str, str]:
    """What the "try it" form shows again after a try: everything but the key."""
    return {
        "url": fields.get("url", ""),
        "engine": fields.get("engine", "static"),
        "proxy_type": fields.get("proxy_type", "none"),
        "selectors": fields.get("selectors", ""),
        "timeout": fields.get("timeout", "20"),
        "respect_robots": "on" if fields.get("respect_robots") == "on" else "",
        "device": "mobile" if fields.get("device") == "mobile" else "desktop",
        "wait_for": fields.get("wait_for", ""),
        "actions": fields.get("actions", ""),
        **{
            name: "on" if fields.get(name) == "on" else ""
            for name in (
                *(f"format_{format}" for format in CHECKBOX_FORMATS),
                "only_main_content",
                "screenshot_full_page",
            )
        },
    }


def buy_order(fields: dict[str, str]) -> BuyRequest:
    """A pack button sends ``pack``; the custom form sends ``amount_eur`` (euros, cents allowed)."""
    pack = fields.get("pack", "").strip()
    if pack:
        return validate(BuyRequest, {"pack": pack})
    raw = fields.get("amount_eur", "").strip().replace(",", ".")
    if not raw:
        raise BadRequest("Choose a pack or enter an amount in euros.")
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        raise BadRequest("Enter the amount in euros, for example 25 or 12.50.") from None
    if not amount.is_finite() or amount < MIN_AMOUNT_EUR:
        raise BadRequest(f"The smallest amount is {MIN_AMOUNT_EUR} EUR.")
    if amount > MAX_AMOUNT_EUR:
        raise BadRequest(f"The largest amount is {MAX_AMOUNT_EUR} EUR.")
    if amount != amount.quantize(Decimal("0.01")):
        raise BadRequest("Enter the amount in euros with at most two decimals.")
    return validate(BuyRequest, {"amount_eur": float(amount)})
