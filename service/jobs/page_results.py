"""A page's result as its job stores it: its status, and its JSON within the job result cap."""

from __future__ import annotations

from typing import Any

import orjson

from service.scrape.results import ACTION_FIELDS, TRUNCATED, ScrapeResult, format_fields

# what a result larger than config.job_result_max_bytes keeps: its status, not its page
_BULKY: dict[str, Any] = {
    "title": None,
    "meta": {},
    "headings": {},
    "links": [],
    "images": [],
    "text": None,
    "extracted": {},
}
# ... and none of the fields that the request's formats and actions added


def page_status(result: ScrapeResult) -> str:
    if result.blocked:
        return "blocked"
    return "done" if result.success else "failed"


def stored_result(result: ScrapeResult, cap: int) -> str:
    """The result as a job stores it: the JSON ``POST /scrape`` answers, when it is at most
    ``cap`` bytes; else without its page's content, saying so in its error."""
    raw = orjson.dumps(result)
    if len(raw) <= cap:
        return raw.decode()
    small: dict[str, Any] = orjson.loads(raw)
    small.update(_BULKY)
    for name in (*format_fields(), *ACTION_FIELDS, *TRUNCATED):
        small.pop(name, None)
    note = f"the result was larger than the job result cap of {cap} bytes: its page was left out"
    small["error"] = f"{small['error']}; {note}" if small.get("error") else note
    return orjson.dumps(small).decode()
