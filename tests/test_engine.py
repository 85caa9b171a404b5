"""The engine bridge at shutdown, against a real database: once the drain has answered what was
in flight, a scrape whose hold comes in later is answered and released, and enters no engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted

from service.billing import ledger
from service.core.config import Config
from service.db import Database
from service.scrape.engine import SHUTTING_DOWN, EngineBridge
from service.scrape.order import ScrapeOrder


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    db = Database(database_url, threads=1)
    db.start()
    yield db
    db.stop()


@pytest_twisted.ensureDeferred
async def test_a_hold_that_comes_in_after_the_drain_is_released_and_nothing_is_fetched(
    database, accounts, site
):
    account_id, _ = accounts.create(credits=5)
    hold_id = await database.run(ledger.hold, account_id, 1, trial=False, ttl_seconds=60)
    # Never started: a request handed to its engine would fail the bridge's assertions.
    bridge = EngineBridge(Config.from_env({}), database)
    assert await bridge.drain(0) == 0  # the shutdown found nothing in flight
    before = site.count("/article")
    order = ScrapeOrder(url=site.url("/article"), account_id=account_id, hold_id=hold_id)
    result = await bridge.submit(order)
    assert (result.success, result.status_code, result.error) == (False, 0, SHUTTING_DOWN)
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (5, 0)
    assert site.count("/article") == before
    assert bridge.in_flight == 0
