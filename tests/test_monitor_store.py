"""The monitors' rows (service.jobs.monitor_store) on the database of the run: a due run is
claimed once and moves the monitor past the clock; a run the account's jobs in flight leave no
room for fails alone, and the other monitors' runs go on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from sqlalchemy import select

from harness.service import Accounts
from service.billing import keys
from service.core.config import Config
from service.db.tables import monitor_checks, monitors
from service.jobs import monitor_runs, monitor_store
from service.jobs.monitor_spec import parse
from tests.conftest import a_database_of_its_own

T = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def accounts(database_url: str, tmp_path: Path) -> Iterator[Accounts]:
    made = a_database_of_its_own(database_url, tmp_path)
    _, found = next(made)
    yield found
    next(made, None)


def a_monitor(accounts: Accounts, path: str) -> tuple[int, str]:
    account_id, key = accounts.create(credits=10)
    caller = accounts.database.run_sync(keys.authenticate, key)
    request = parse({"url": f"http://127.0.0.1:9/{path}", "schedule": 600}, Config())
    made = accounts.database.run_sync(
        monitor_store.create,
        public_id=path.ljust(32, "0"),
        account_id=account_id,
        key_id=caller.key_id,
        key_hash=caller.key_hash,
        request=request,
        next_run_at=T,
        limit=10,
    )
    return account_id, made["id"]


def rows(accounts: Accounts) -> tuple[list[Any], list[Any]]:
    def read(conn: Any) -> tuple[list[Any], list[Any]]:
        found = conn.execute(select(monitors).order_by(monitors.c.id)).all()
        checks = conn.execute(select(monitor_checks).order_by(monitor_checks.c.id)).all()
        return list(found), list(checks)

    return accounts.database.run_sync(read)


def test_a_due_run_is_claimed_once_and_a_refused_one_fails_alone(accounts: Accounts) -> None:
    a_monitor(accounts, "one")
    a_monitor(accounts, "two")
    claim = monitor_runs.claim_due
    # no room for any job: both runs fail, each once, and both monitors move on
    assert accounts.database.run_sync(claim, T, 10, 0, 2) == []
    assert accounts.database.run_sync(claim, T, 10, 0, 2) == []  # not due any more
    found, checks = rows(accounts)
    assert [m.next_run_at.replace(tzinfo=UTC) for m in found] == [T + timedelta(minutes=10)] * 2
    assert [(c.status, c.job_seq) for c in checks] == [("failed", None), ("failed", None)]
    later = T + timedelta(minutes=10)
    made = accounts.database.run_sync(claim, later, 10, 5, 2)
    assert [kind for _, kind in made] == ["url", "url"]
    assert accounts.database.run_sync(claim, later, 10, 5, 2) == []
    _, checks = rows(accounts)
    assert [c.status for c in checks] == ["failed", "failed", "running", "running"]
    # the next time comes while both runs are still going: neither starts a second run
    after = later + timedelta(minutes=10)
    assert accounts.database.run_sync(claim, after, 10, 5, 2) == []
    accounts.database.run_sync(
        lambda conn: conn.execute(
            monitor_checks.update()
            .where(monitor_checks.c.id == checks[2].id)
            .values(status="completed", finished_at=after)
        )
    )
    # the one whose run finished runs once, late; the other still waits
    assert len(accounts.database.run_sync(claim, after + timedelta(minutes=3), 10, 5, 2)) == 1
    found, checks = rows(accounts)
    assert [c.status for c in checks][-1] == "running" and len(checks) == 5
    assert found[0].next_run_at.replace(tzinfo=UTC) == after + timedelta(minutes=10)


class _Claims:
    """A database whose claims of due runs find ``sizes`` runs, one size a claim."""

    dialect = "sqlite"

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.claims = 0

    async def run(self, function: Any, *args: Any) -> list[tuple[int, str]]:
        assert function is monitor_runs.claim_due
        self.claims += 1
        found = self.sizes.pop(0) if self.sizes else 0
        return [(self.claims * 1000 + n, "url") for n in range(found)]


class _Queue:
    def __init__(self) -> None:
        self.queued: list[int] = []

    async def enqueue_many(self, seqs: list[int]) -> None:
        self.queued += seqs


@pytest_twisted.ensureDeferred
async def test_a_tick_claims_every_due_run_in_batches_until_none_is_left() -> None:
    # a thousand monitors due at once start in one tick, not DUE_PER_TICK a tick
    from types import SimpleNamespace

    from service.jobs.monitors import CLAIMS_PER_TICK, DUE_PER_TICK, Monitors

    full = DUE_PER_TICK
    database = _Claims([full] * 20 + [full // 2])
    queue = _Queue()
    monitors_ = Monitors(SimpleNamespace(config=Config(), database=database, queue=queue))  # type: ignore[arg-type]
    assert await monitors_.run_due() == 20 * full + full // 2
    assert database.claims == 21 and len(queue.queued) == 20 * full + full // 2
    # bounded: a tick never claims more than CLAIMS_PER_TICK batches
    endless = _Claims([full] * (CLAIMS_PER_TICK + 5))
    monitors_ = Monitors(SimpleNamespace(config=Config(), database=endless, queue=_Queue()))  # type: ignore[arg-type]
    assert await monitors_.run_due() == CLAIMS_PER_TICK * full
    assert endless.claims == CLAIMS_PER_TICK


def test_retention_deletes_old_checks_but_the_latest_and_the_latest_change(
    accounts: Accounts,
) -> None:
    account_id, public_id = a_monitor(accounts, "kept")
    old = T - timedelta(days=40)

    def checks_of(conn: Any) -> None:
        monitor_id = conn.execute(
            select(monitors.c.id).where(monitors.c.public_id == public_id)
        ).scalar_one()
        for n, (status, changed, at) in enumerate(
            [
                ("completed", False, old),  # deleted
                ("completed", True, old),  # the latest change: kept
                ("running", False, None),  # in flight: kept
                ("failed", False, old),  # deleted
                ("completed", False, old + timedelta(minutes=5)),  # the latest: kept
            ]
        ):
            conn.execute(
                monitor_checks.insert().values(
                    monitor_id=monitor_id,
                    status=status,
                    scheduled_for=old + timedelta(seconds=n),
                    started_at=old + timedelta(seconds=n),
                    finished_at=at,
                    changed=changed,
                    credits_charged=0,
                )
            )

    accounts.database.run_sync(checks_of)
    assert accounts.database.run_sync(monitor_store.purge_checks, T - timedelta(days=30)) == 2
    _, checks = rows(accounts)
    assert [(c.status, c.changed) for c in checks] == [
        ("completed", True),
        ("running", False),
        ("completed", False),
    ]
    answer = accounts.database.run_sync(monitor_store.view, account_id, public_id)
    assert answer["last_change"]["changed"] is True
    assert answer["last_check"]["status"] == "completed"
