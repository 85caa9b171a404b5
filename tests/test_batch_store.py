"""The rows of jobs against a real database: a page taken over after its attempt died is billed
at most once, a dead attempt cannot store its result over the new one's, and retention deletes
only finished jobs. Also the size cap of a stored result."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import orjson
import pytest
import pytest_twisted
from sqlalchemy import select, text, update

from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.core.config import Config
from service.db import Database
from service.db.hot import _SQL as hot_sql
from service.db.tables import holds, jobs
from service.jobs import batch_hot, batch_store, crawl_store, job_reads, page_claims
from service.jobs.batches import Batches
from service.jobs.crawl_rules import CrawlRules, Rules
from service.jobs.instances import instance_name, is_dead
from service.scrape.order import ScrapeOrder
from service.scrape.results import ScrapeResult
from tests.conftest import a_database_of_its_own

_n = iter(range(1, 10**9))


@pytest.fixture(scope="module")
def store_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of these tests' own: the session's service, started by an earlier module,
    must not run the jobs' tasks these tests queue and count."""
    made = a_database_of_its_own(database_url, tmp_path_factory.mktemp("store-db"))
    url, _ = next(made)
    yield url
    next(made, None)


@pytest.fixture(scope="module")
def db(store_url: str) -> Iterator[Database]:
    database = Database(store_url, threads=2)
    database.upgrade()
    yield database
    database.stop()


def new_caller(db: Database, credits: int) -> tuple[int, keys.Caller]:
    """A new account with ``credits`` and the caller of its key."""
    account_id = db.run_sync(accounts.create, f"store{next(_n)}-{id(db)}@example.com", trials=2)
    if credits:
        db.run_sync(ledger.credit, account_id, credits, kind="grant", reference="test")
    caller = db.run_sync(keys.authenticate, db.run_sync(keys.regenerate, account_id))
    assert caller is not None
    return account_id, caller


def new_job(db: Database, urls: int = 3, credits: int = 10) -> tuple[int, int, int]:
    """(account, its key's id, the job's seq)."""
    account_id, caller = new_caller(db, credits)
    seq = db.run_sync(
        batch_store.create_job,
        public_id=f"job{next(_n)}",
        account_id=account_id,
        key_id=caller.key_id,
        key_hash=caller.key_hash,
        options={},
        urls=[f"http://127.0.0.1/{n}" for n in range(urls)],
        limit=5,
    )
    return account_id, caller.key_id, seq


def held_page(db: Database, account_id: int, key_id: int, seq: int) -> tuple[int, Any]:
    """A page claimed by an attempt that made its hold: (the hold, the claim)."""
    page_id = db.run_sync(page_claims.page_ids, seq)[0]
    claim = db.run_sync(page_claims.claim_page, page_id, "dead")

    def hold(conn: Any) -> int:
        hold_id = ledger.hold(conn, account_id, 1, trial=False, ttl_seconds=300, key_id=key_id)
        assert page_claims.set_hold(conn, page_id, claim.attempt, hold_id)
        return hold_id

    return db.run_sync(hold), claim


def balance_and_held(db: Database, account_id: int) -> tuple[int, int]:
    summary = db.run_sync(accounts.summary, account_id)
    return summary["balance"], summary["held"]


def test_a_page_billed_before_its_attempt_died_is_not_billed_again(db: Database) -> None:
    account_id, key_id, seq = new_job(db)
    hold_id, dead = held_page(db, account_id, key_id, seq)
    # the dead attempt's settlement went through; its result was never stored
    db.run_sync(ledger.settle, hold_id, cost=1, usage_row=a_success(account_id))
    taken = db.run_sync(page_claims.claim_page, dead.page_id, "alive")
    assert (taken.attempt, taken.paid_hold) == (2, hold_id)  # billed: scrape without a hold
    assert balance_and_held(db, account_id) == (9, 0)
    # the dead attempt cannot store its result over the new one's
    assert not db.run_sync(batch_store.finish_page, dead.page_id, dead.attempt, "done", "{}")
    assert db.run_sync(batch_store.finish_page, dead.page_id, taken.attempt, "done", "{}")
    summary = db.run_sync(batch_store.cancel, account_id, db.run_sync(_public_id, seq))
    assert summary["credits_charged"] == 1
    assert summary["counts"]["done"] == 1


def test_a_page_whose_attempt_died_holding_is_released_and_scraped_afresh(db: Database) -> None:
    account_id, key_id, seq = new_job(db)
    hold_id, dead = held_page(db, account_id, key_id, seq)
    assert balance_and_held(db, account_id) == (10, 1)
    taken = db.run_sync(page_claims.claim_page, dead.page_id, "alive")
    assert (taken.attempt, taken.paid_hold) == (2, None)
    assert balance_and_held(db, account_id) == (10, 0)
    status = db.run_sync(
        lambda conn: conn.execute(select(holds.c.status).where(holds.c.id == hold_id)).scalar_one()
    )
    assert status == "released"
    # should the dead attempt settle after all, it charges nothing
    late = db.run_sync(ledger.settle, hold_id, cost=1, usage_row=a_success(account_id))
    assert (late.charged, late.settled_here) == (0, False)
    assert balance_and_held(db, account_id) == (10, 0)


def test_a_stopped_jobs_pages_are_skipped_and_not_claimed(db: Database) -> None:
    account_id, _, seq = new_job(db)
    pages = db.run_sync(page_claims.page_ids, seq)
    assert db.run_sync(batch_store.stop_job, seq, "insufficient_credits", "short")
    assert db.run_sync(page_claims.page_ids, seq) == []
    assert [db.run_sync(page_claims.claim_page, page, "late") for page in pages] == [None] * 3
    summary = db.run_sync(batch_store.cancel, account_id, db.run_sync(_public_id, seq))
    assert summary["status"] == "insufficient_credits"  # a cancel changes a finished job not
    assert summary["counts"]["skipped"] == 3


def test_retention_deletes_finished_jobs_only(db: Database) -> None:
    account_id, _, finished = new_job(db)
    _, _, running = new_job(db)
    db.run_sync(batch_store.stop_job, finished, "cancelled", None)
    old = ledger.now() - timedelta(days=8)
    db.run_sync(
        lambda conn: conn.execute(
            update(jobs).where(jobs.c.seq.in_((finished, running))).values(created_at=old)
        )
    )
    deleted = db.run_sync(batch_store.purge, ledger.now() - timedelta(days=7), ledger.now())
    assert deleted == 1
    left = db.run_sync(
        lambda conn: set(
            conn.execute(select(jobs.c.seq).where(jobs.c.seq.in_((finished, running)))).scalars()
        )
    )
    assert left == {running}


def _public_id(conn: Any, seq: int) -> str:
    return str(conn.execute(select(jobs.c.public_id).where(jobs.c.seq == seq)).scalar_one())


def a_result(url: str) -> ScrapeResult:
    """A static success, as ``POST /scrape`` answers it, billed 1 credit."""
    return ScrapeResult(
        url=url,
        final_url=url,
        status_code=200,
        success=True,
        engine="static",
        elapsed_ms=5,
        error=None,
        blocked=False,
        proxy_used=False,
        title="Big",
        meta={},
        headings={},
        links=[],
        images=[],
        text="x" * 5000,
        extracted={},
        error_code=None,
        tier_used="none",
        credits_charged=1,
        cached=False,
        timings={
            "queue": 0.1,
            "connect": 0.2,
            "first_byte": 1.0,
            "download": 0.5,
            "render": None,
            "extraction": 0.7,
        },
    )


def test_a_result_past_the_cap_keeps_its_status_and_loses_its_page() -> None:
    batches = Batches(Config(job_result_max_bytes=1024), None, None, None)  # type: ignore[arg-type]
    result = a_result("http://127.0.0.1/big")
    stored = orjson.loads(batches.stored(result))
    assert list(stored) == list(orjson.loads(orjson.dumps(result)))  # the same fields
    assert (stored["success"], stored["status_code"], stored["text"]) == (True, 200, None)
    assert "larger than the job result cap of 1024 bytes" in stored["error"]
    small = ScrapeResult(**{**orjson.loads(orjson.dumps(result)), "text": "short"})
    assert orjson.loads(batches.stored(small)) == orjson.loads(orjson.dumps(small))


@pytest.mark.postgres  # a PostgreSQL function, sent on the reactor
@pytest_twisted.ensureDeferred
async def test_a_batch_page_settles_with_its_result_in_one_call(store_url: str) -> None:
    """A hot job's page on PostgreSQL (migration 0017): the billing pipeline leaves what to
    settle on the job, and its settlement and its result go in one call, which charges what
    the result says. A page whose hold was settled before (the watchdog, the sweeper) is
    charged nothing, and its result is stored saying so."""
    db = Database(store_url, threads=2, reactor_calls=True)
    db.upgrade()
    db.start()
    try:
        account_id, key_id, seq = new_job(db, urls=2)
        batches = Batches(Config(), db, None, None)  # type: ignore[arg-type]
        public_id = db.run_sync(_public_id, seq)
        for index, settled_before in ((0, False), (1, True)):
            hold_id, claim = held_page(db, account_id, key_id, seq)  # the next
            if settled_before:
                db.run_sync(ledger.release, hold_id)
            result = a_result(f"http://127.0.0.1/{index}")
            job = ScrapeOrder(result.url, account_id=account_id, hold_id=hold_id)
            job.to_settle = (1, False, a_success(account_id))
            stored = batches.stored(result)
            finish = batch_store.Finish(claim.page_id, claim.attempt, "done", stored)
            await batches._finish_hot(finish, seq, job, result)
        # what GET /jobs/{id} answers
        seen = orjson.loads(orjson.dumps(db.run_sync(job_reads.view, account_id, public_id, -1, 9)))
        assert balance_and_held(db, account_id) == (9, 0)
    finally:
        db.stop()
    assert (seen["status"], seen["credits_charged"], seen["counts"]["done"]) == ("completed", 1, 2)
    assert [page["credits"] for page in seen["results"]] == [1, 0]
    told = [page["result"] for page in seen["results"]]
    assert [page["credits_charged"] for page in told] == [1, 0]
    assert told[1] == {**told[0], "url": told[1]["url"], "final_url": told[1]["url"]} | {
        "credits_charged": 0
    }


@pytest.mark.postgres  # a PostgreSQL function
def test_a_batch_pages_settlement_with_its_result_commits_durably(db: Database) -> None:
    """scrapespy_finish_page commits without waiting for its WAL flush; with the settlement in
    the same transaction (migration 0017) the commit waits, as every settlement's does."""
    account_id, key_id, seq = new_job(db, urls=1)
    hold_id, claim = held_page(db, account_id, key_id, seq)
    finish = batch_store.Finish(claim.page_id, claim.attempt, "done", "{}")
    params = {
        **ledger.settle_params(hold_id, 1, False, a_success(account_id)),
        **batch_hot.finish_call_params(finish, seq),
    }
    with db.engine.connect() as conn, conn.begin():
        row = conn.execute(text(hot_sql["pg_settle_finish_page"]), params).one()
        commit = conn.execute(text("SELECT current_setting('synchronous_commit')")).scalar_one()
    assert (tuple(row), commit) == ((1, True, True), "on")


def test_a_running_page_is_taken_over_on_sqlite_only_when_its_process_is_gone() -> None:
    this = instance_name()
    host, pid, _ = this.rsplit(":", 2)
    ended = subprocess.Popen(["true"])  # noqa: S607
    ended.wait()
    assert not is_dead(f"{host}:{os.getppid()}:abcd1234", this)  # a live process of this host
    assert is_dead(f"{host}:{ended.pid}:abcd1234", this)  # an ended one
    assert is_dead(f"{host}:{pid}:abcd1234", this)  # this pid in an earlier run of the service
    assert is_dead(f"another-host:{os.getppid()}:abcd1234", this)  # before a container restart
    assert is_dead(this, this)  # its own, which its loop is not running: an attempt that raised
    assert is_dead(None, this)


def test_a_jobs_last_two_pages_finishing_at_once_complete_it(db: Database) -> None:
    """The result of one is stored while the other's transaction is still open: whichever
    commits last sees both, and the job is completed. On PostgreSQL the second page finishes
    by the hot path's function (scrapespy_finish_page, as a batch's pages do) against the first
    by SQLAlchemy (as a crawl's pages do), each waiting for the job's row; on SQLite the second
    waits for the first's write lock."""
    _, _, seq = new_job(db, urls=2)
    first, second = db.run_sync(page_claims.page_ids, seq)
    claims = [db.run_sync(page_claims.claim_page, page, "here") for page in (first, second)]
    postgres = db.engine.dialect.name == "postgresql"
    done: list[Any] = []

    def finish_second() -> None:
        with db.engine.connect() as conn, conn.begin():
            if postgres:
                row = conn.execute(
                    text(
                        "SELECT out_stored, out_completed FROM scrapespy_finish_page("
                        ":page, :attempt, 'done', '{}', now(), :job)"
                    ),
                    {"page": second, "attempt": claims[1].attempt, "job": seq},
                ).one()
                done.append(tuple(row))
            else:
                finish = batch_store.Finish(second, claims[1].attempt, "done", "{}")
                done.append(batch_store.finish_pages(conn, [finish]))

    with db.engine.connect() as conn:
        with conn.begin():
            finish = batch_store.Finish(first, claims[0].attempt, "done", "{}", job_seq=seq)
            assert batch_store.finish_pages(conn, [finish]) == [True]
            other = threading.Thread(target=finish_second)
            other.start()
            other.join(1.0)
            assert other.is_alive()  # waiting for the first page's transaction
        other.join(20)
    assert not other.is_alive()
    assert done == [(True, True)] if postgres else done == [[True]]
    status = db.run_sync(
        lambda conn: conn.execute(select(jobs.c.status).where(jobs.c.seq == seq)).scalar_one()
    )
    assert status == "completed"


def new_crawl(db: Database, max_pages: int, slots: int) -> tuple[int, dict[str, Any]]:
    """A crawl of http://127.0.0.1/ (its seq and its crawl options), seeded with its start."""
    account_id, caller = new_caller(db, 0)
    crawl = {
        "rules": Rules.of("http://127.0.0.1/", CrawlRules()).stored(),
        "max_pages": max_pages,
        "max_depth": 5,
        "sitemap": "skip",
    }
    seq = db.run_sync(
        crawl_store.create_crawl,
        public_id=f"crawl{next(_n)}",
        account_id=account_id,
        key_id=caller.key_id,
        key_hash=caller.key_hash,
        options={"crawl": crawl},
        seeds=["http://127.0.0.1/"],
        limit=5,
        slots=slots,
    )
    return seq, crawl


@pytest.mark.postgres  # a PostgreSQL function
def test_a_crawls_pages_finishing_in_one_call_add_links_within_max_pages(db: Database) -> None:
    """scrapespy_finish_crawl_page (migration 0015): two pages finishing at once, each with
    links enough to fill the crawl, add no more than its max_pages between them (the second
    waits for the first's lock on the crawl's row); the new pages are queued four to a task,
    the tasks' locks taking the crawl's slots in turn; and the last page completes it."""
    seq, crawl = new_crawl(db, max_pages=12, slots=2)
    seed = db.run_sync(page_claims.page_ids, seq)[0]
    claim = db.run_sync(page_claims.claim_page, seed, "here")
    links = [f"http://127.0.0.1/a/{n}" for n in range(7)] + ["http://example.org/x"]
    finish = batch_store.Finish(seed, claim.attempt, "done", "{}")
    params = crawl_store.finish_crawl_params(finish, seq, crawl, links, 2)
    call = text(hot_sql["pg_finish_crawl_page"])  # the statement the service sends
    assert tuple(db.run_sync(lambda conn: conn.execute(call, params).one())) == (True, False, 7)
    pages = db.run_sync(page_claims.page_ids, seq)
    first, second = (db.run_sync(page_claims.claim_page, page, "here") for page in pages[1:3])
    added: list[Any] = []

    def finish_second() -> None:
        more = [f"http://127.0.0.1/b/{n}" for n in range(10)]
        done = batch_store.Finish(second.page_id, second.attempt, "done", "{}")
        with db.engine.connect() as conn, conn.begin():
            args = crawl_store.finish_crawl_params(done, seq, crawl, more, 2)
            added.append(tuple(conn.execute(call, args).one()))

    with db.engine.connect() as conn:
        with conn.begin():
            more = [f"http://127.0.0.1/c/{n}" for n in range(3)] + links  # 7 known already
            done = batch_store.Finish(first.page_id, first.attempt, "done", "{}")
            args = crawl_store.finish_crawl_params(done, seq, crawl, more, 2)
            assert tuple(conn.execute(call, args).one()) == (True, False, 3)
            other = threading.Thread(target=finish_second)
            other.start()
            other.join(1.0)
            assert other.is_alive()  # waiting for the crawl's row
        other.join(20)
    assert added == [(True, False, 1)]  # 1 + 7 + 3 + 1 = 12 pages
    tasks = db.run_sync(
        lambda conn: conn.execute(
            text(
                "SELECT lock, args FROM procrastinate_jobs"
                " WHERE args->>'job_seq' = :job ORDER BY id"
            ),
            {"job": str(seq)},
        ).all()
    )
    sizes = [(lock, len(args.get("page_ids", [args.get("page_id")]))) for lock, args in tasks]
    # the seed; its seven links (positions 1-4 in slot 0, 5-7 in slot 1); then 3
    # (positions 8-10: slot 0) and 1 (position 11: slot 0)
    assert sizes == [
        (f"crawl:{seq}:0", 1),
        (f"crawl:{seq}:0", 4),
        (f"crawl:{seq}:1", 3),
        (f"crawl:{seq}:0", 3),
        (f"crawl:{seq}:0", 1),
    ]
    total = db.run_sync(
        lambda conn: conn.execute(select(jobs.c.total).where(jobs.c.seq == seq)).scalar_one()
    )
    assert total == 12
