"""The PostgreSQL hot path on the reactor (service.db.reactor_pg), against the real server.

Runs in the PostgreSQL pass of ``make test``; the service's own end-to-end tests (scrapes,
two instances, the outage through a relay) exercise it as well.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg2
import pytest
import pytest_twisted
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from twisted.internet import defer

from harness.service import Accounts
from harness.usage_rows import a_success
from service.billing import keys, ledger
from service.core.errors import ServiceUnavailable
from service.db import Database
from service.db.hot import HotPath
from tests.relay import Relay

pytestmark = pytest.mark.postgres


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url, threads=2, reactor_calls=True)
    database.upgrade()
    database.start()
    yield database
    database.stop()


def terminate(database_url: str, pid: int) -> None:
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    admin.dispose()


async def backend_pid(db: Database) -> int:
    calls = db._calls
    assert calls is not None
    row = await calls.call("SELECT pg_backend_pid()", {})
    assert row is not None
    return int(row[0])


@pytest_twisted.ensureDeferred
async def test_calls_beyond_the_connections_wait_their_turn_and_all_answer(db: Database):
    calls = db._calls
    assert calls is not None and calls.size == 4  # twice the database threads
    rows = await defer.gatherResults(
        [calls.call("SELECT %(n)s::int, pg_sleep(0.01)", {"n": n}) for n in range(20)]
    )
    assert [row[0] for row in rows] == list(range(20))
    assert calls.open_connections == 4


@pytest_twisted.ensureDeferred
async def test_the_hot_path_holds_and_settles_on_the_reactor(db: Database):
    made = Accounts(db.url)
    account_id, key = made.create(credits=10)
    params = ledger.authorize_and_hold_params(
        keys.hash_key(key), residential=False, amount=3, trial_amount=1, ttl_seconds=60
    )
    hold = ledger.authorized_hold(await db.call("pg_authorize_hold", params))
    assert hold is not None and hold.account_id == account_id and hold.hold_id is not None
    assert made.summary(account_id)["held"] == 3

    settled = ledger.settlement(
        await db.call("pg_settle", ledger.settle_params(hold.hold_id, 2, False, None))
    )
    assert settled.charged == 2 and settled.settled_here
    again = ledger.settlement(
        await db.call("pg_settle", ledger.settle_params(hold.hold_id, 2, False, None))
    )
    assert again.charged == 0 and not again.settled_here  # at most once
    assert made.summary(account_id)["balance"] == 8
    assert made.summary(account_id)["held"] == 0
    assert made.entries_sum(account_id) == 8
    made.close()


def test_the_hold_commits_without_waiting_for_the_disk_and_the_settlement_waits(
    database_url: str,
):
    made = Accounts(database_url)
    _, key = made.create(credits=10)
    engine = create_engine(database_url)
    hot = HotPath(engine.dialect)  # the service's own two statements
    conn = engine.raw_connection()
    try:
        cur = conn.cursor()  # one transaction per block, as the service's statements run
        params = ledger.authorize_and_hold_params(
            keys.hash_key(key), residential=False, amount=3, trial_amount=1, ttl_seconds=60
        )
        cur.execute(hot.sql["pg_authorize_hold"], params)
        hold = ledger.authorized_hold(cur.fetchone())
        assert hold is not None and hold.hold_id is not None
        cur.execute("SELECT current_setting('synchronous_commit')")
        assert cur.fetchone() == ("off",)  # what the hold's commit reads
        conn.commit()

        cur.execute("SELECT current_setting('synchronous_commit')")
        assert cur.fetchone() == ("on",)  # only for the hold's own transaction
        cur.execute(hot.sql["pg_settle"], ledger.settle_params(hold.hold_id, 2, False, None))
        assert ledger.settlement(cur.fetchone()).charged == 2
        cur.execute("SELECT current_setting('synchronous_commit')")
        assert cur.fetchone() == ("on",)  # the charge is flushed before it is answered
        conn.commit()
    finally:
        conn.close()
        engine.dispose()
        made.close()


@pytest_twisted.ensureDeferred
async def test_a_settlement_claims_only_a_hold_of_its_own_account(db: Database):
    # after a database crash a lost hold's id can be handed out again, to someone else's hold
    made = Accounts(db.url)
    mine, _ = made.create(credits=10)
    theirs, their_key = made.create(credits=10)
    params = ledger.authorize_and_hold_params(
        keys.hash_key(their_key), residential=False, amount=3, trial_amount=1, ttl_seconds=60
    )
    their_hold = ledger.authorized_hold(await db.call("pg_authorize_hold", params))
    assert their_hold is not None and their_hold.hold_id is not None

    stray = ledger.settlement(
        await db.call(
            "pg_settle", ledger.settle_params(their_hold.hold_id, 3, False, a_success(mine))
        )
    )
    assert stray.charged == 0 and not stray.settled_here
    assert made.summary(theirs)["held"] == 3 and made.summary(theirs)["balance"] == 10
    assert made.summary(mine)["balance"] == 10

    own = ledger.settlement(
        await db.call(
            "pg_settle", ledger.settle_params(their_hold.hold_id, 3, False, a_success(theirs))
        )
    )
    assert own.charged == 3 and own.settled_here
    assert made.summary(theirs)["held"] == 0 and made.entries_sum(theirs) == 7
    made.close()


@pytest_twisted.ensureDeferred
async def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error(
    db: Database, database_url: str
):
    pid = await backend_pid(db)
    terminate(database_url, pid)
    # the idle connection is watched: the server's goodbye drops it before it is used again
    for _ in range(100):
        if db._calls is not None and db._calls.open_connections == 0:
            break
        await deferLater(0.02)
    assert await backend_pid(db) != pid


@pytest_twisted.ensureDeferred
async def test_a_statement_that_fails_is_the_callers_error_and_the_connection_goes_on(
    db: Database,
):
    calls = db._calls
    assert calls is not None
    pid = await backend_pid(db)
    with pytest.raises(psycopg2.errors.DivisionByZero):
        await calls.call("SELECT 1 / 0", {})
    assert await backend_pid(db) == pid


@pytest_twisted.ensureDeferred
async def test_a_connection_lost_mid_statement_is_an_outage_and_is_not_sent_again(
    db: Database, database_url: str
):
    calls = db._calls
    assert calls is not None
    pid = await backend_pid(db)
    running = calls.call("SELECT pg_sleep(5)", {})
    await deferLater(0.3)
    terminate(database_url, pid)
    with pytest.raises(ServiceUnavailable):
        await running
    assert await backend_pid(db) != pid


@pytest_twisted.ensureDeferred
async def test_a_database_that_cannot_be_reached_is_an_outage(database_url: str):
    url = make_url(database_url)
    relay = Relay(url.host or "127.0.0.1", url.port or 5432).start()
    via_relay = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    database = Database(via_relay, threads=1, reactor_calls=True)
    database.start()
    try:
        assert await backend_pid(database) > 0
        relay.cut()
        with pytest.raises(ServiceUnavailable):
            await backend_pid(database)
        relay.restore()
        assert await backend_pid(database) > 0
    finally:
        database.stop()
        relay.cut()


def deferLater(seconds: float) -> defer.Deferred[None]:  # noqa: N802 - Twisted's name
    from twisted.internet import reactor, task

    return task.deferLater(reactor, seconds, lambda: None)
