"""The ledger's share of one scrape: key lookup + hold, then settle, as the service runs them
(Database.run_hot's transactions, on the calling thread), in one process.

python -m bench.ledger [DATABASE_URL]

Without an argument it uses a throwaway SQLite file. A PostgreSQL URL names a server: the figures
come from a throwaway database made on it and dropped afterwards.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.run import postgres_database
from harness.usage_rows import a_success
from service.billing import accounts, keys, ledger
from service.core.config import Config
from service.db import Database
from service.scrape.scraper import Scraper


def main(rounds: int = 1000) -> None:
    with tempfile.TemporaryDirectory() as folder:
        url, drop = f"sqlite:///{Path(folder) / 'ledger.db'}", None
        if len(sys.argv) > 1:
            made = postgres_database(sys.argv[1])
            if made is None:
                raise SystemExit(f"cannot create a database on {sys.argv[1]}")
            url, drop = made
        db = Database(url)
        db.upgrade()
        account_id = db.run_sync(accounts.create, f"bench-{uuid.uuid4().hex}@example.com", trials=0)
        db.run_sync(ledger.credit, account_id, 10**9, kind="grant", reference="bench")
        digest = keys.hash_key(db.run_sync(keys.regenerate, account_id))

        # the service's own first call (one round trip on PostgreSQL, migration 0003)
        scraper = Scraper(Config(), db, bridge=None, limiter=None)  # type: ignore[arg-type]

        def authorize_and_hold(conn):  # type: ignore[no-untyped-def]
            return scraper.holds.hold_in(conn, digest, "static", "none", None)[2]

        usage = a_success(account_id, url="http://127.0.0.1/article", elapsed_ms=3)
        for n in (200, rounds):  # the first pass warms SQLAlchemy's caches
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(n):
                hold_id = db._hot_transaction(authorize_and_hold)
                db._hot_transaction(ledger.settle, hold_id, cost=1, usage_row=usage)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"hold + settle per scrape: {wall / rounds * 1000:.2f} ms wall, "
            f"{cpu / rounds * 1000:.2f} ms CPU in this process ({rounds} scrapes, {db.dialect})"
        )
        db.stop()
        if drop is not None:
            drop()


if __name__ == "__main__":
    main()
