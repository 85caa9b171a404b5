"""The "try it" form: one scrape through the very business operation of ``POST /scrape``.

The visitor pastes their key; it is used for this request only, never stored or shown again.
The answer is what the API would have answered (an error's body, and its code as the
X-Error-Code header would carry it), plus the credits the scrape was charged, read from the
usage row that billing wrote for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.errors import ApiError
from service.dashboard.usage import newest_usage_id, usage_of_scrape
from service.db import Database
from service.scrape.results import ScrapeResult
from service.scrape.scraper import Scraper

NOT_YOURS = "this API key belongs to another account; paste the key of the account you are in"


@dataclass(frozen=True, slots=True)
class TryOutcome:
    status: int
    body: ScrapeResult | dict[str, str]
    charged: int | None
    trial: bool
    # an error answer's X-Error-Code
    error_code: str | None = None


async def try_scrape(
    scraper: Scraper, database: Database, account_id: int, api_key: str, body: bytes
) -> TryOutcome:
    try:
        # The API's order of checks: the body first, then the key.
        scraper.parse(body)
        caller = await scraper.authenticate(api_key)
        if caller.account_id != account_id:
            return TryOutcome(403, {"error": NOT_YOURS}, None, False, "unauthorized")
        before = await database.run(newest_usage_id, account_id)
        result = await scraper.scrape(api_key, body)
    except ApiError as error:
        return TryOutcome(error.status, error.body(), None, False, error.code)
    row = await database.run(usage_of_scrape, account_id, before, result.url, result.elapsed_ms)
    if row is None:
        return TryOutcome(200, result, None, False)
    return TryOutcome(200, result, row["credits"], row["trial"])
