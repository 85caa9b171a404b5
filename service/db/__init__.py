"""Database access: one engine, blocking calls kept off the reactor thread.

Every call that touches the database goes through :meth:`Database.run`, which runs a function
inside one transaction on a thread pool of our own and returns a Deferred. The CLI, which has
no reactor, uses :meth:`Database.run_sync`. The service's scrape hot path on PostgreSQL goes
through :meth:`Database.call` instead: one statement on an asynchronous connection driven by
the reactor (service.db.reactor_pg), which never blocks it.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from twisted.internet.defer import Deferred

from service.core.errors import ServiceUnavailable
from service.db.hot import HotPath, RawConnection
from service.db.reactor_pg import DATABASE_DOWN, ReactorPostgres
from service.db.threads import DatabaseThreads

log = logging.getLogger(__name__)

T = TypeVar("T")

MIGRATIONS = Path(__file__).with_name("migrations")
# Held for the whole migration so that two instances starting at once migrate one after the other.
ADVISORY_LOCK_ID = 0x5C2A9E59


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def make_engine(url: str, pool_size: int = 8) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            pool_size=pool_size,
            max_overflow=0,
            connect_args={"check_same_thread": False, "timeout": 10},
        )
        event.listen(engine, "connect", _sqlite_pragmas)

        # SQLite's default deferred transactions upgrade to a write lock mid-transaction and then
        # fail with "database is locked"; BEGIN IMMEDIATE takes the write lock up front instead.
        @event.listens_for(engine, "begin")
        def _begin_immediate(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        @event.listens_for(engine, "connect")
        def _no_pysqlite_begin(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None

        return engine
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=2,
        pool_pre_ping=True,
        pool_recycle=1800,
    )


def migration(file_name: str) -> ModuleType:
    """An earlier migration's module (its SQL, for a later one's downgrade): its name starts
    with a digit, so it is loaded by path."""
    path = MIGRATIONS / "versions" / file_name
    spec = importlib.util.spec_from_file_location(f"migration_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration; safe when several instances start at once."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": ADVISORY_LOCK_ID})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def is_outage(exc: BaseException) -> bool:
    """True for errors that mean the database cannot be reached, not that a query is wrong."""
    if isinstance(exc, OperationalError):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def reactor_connections(threads: int) -> int:
    """The reactor's PostgreSQL connections for ``threads`` database threads.

    Each statement commits, and a commit waits for the server's disk: with two connections (2
    cores) the service served 230 scrapes a second at c=32, with four 262, with eight 240.
    """
    return min(16, 2 * threads)


class Database:
    """``threads``: the database threads; ``reactor_calls``: on PostgreSQL, serve :meth:`call`
    on as many asynchronous connections driven by the reactor (the service does; the CLI and
    the tests' helpers, which have no running reactor, do not)."""

    def __init__(self, url: str, threads: int = 8, *, reactor_calls: bool = False):
        self.url = url
        if make_url(url).get_backend_name() == "sqlite":
            # SQLite has one writer: more threads only queue on its lock, and its busy handler
            # sleeps in steps of up to 100 ms, which showed as 1-3 s p99 latencies under load.
            threads = 1
        # Each thread keeps two connections (below); the rest serve migrations and the CLI.
        self.engine = make_engine(url, pool_size=2 * threads + 2)
        self._sqlite = make_url(url).get_backend_name() == "sqlite"
        self.pool = DatabaseThreads(threads, name="scrapespy-db")
        self._started = False
        self._local = threading.local()
        self._held: list[Any] = []  # kept Connections and raw connections
        self._held_lock = threading.Lock()
        self.ping_after_idle = 5.0  # seconds; see _raw_connection
        self._reactor_calls = reactor_calls and not self._sqlite
        self._calls: ReactorPostgres | None = None
        self._hot = HotPath(self.engine.dialect)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def start(self) -> None:
        if not self._started:
            self.pool.start()
            self._started = True
            if self._reactor_calls:
                args, kwargs = self.engine.dialect.create_connect_args(self.engine.url)
                self._calls = ReactorPostgres(
                    tuple(args), dict(kwargs), reactor_connections(self.pool.size), self.pool.submit
                )

    @property
    def reactor_calls(self) -> bool:
        """Whether :meth:`call` serves the hot path (PostgreSQL, in the service)."""
        return self._calls is not None

    def call(self, statement: str, params: dict[str, Any]) -> Deferred[tuple[Any, ...] | None]:
        """The first row of the hot-path ``statement`` (a name in service.db.hot), run as one
        transaction on the reactor's own connections; only when :attr:`reactor_calls`."""
        assert self._calls is not None
        return self._calls.call(self._hot.sql[statement], params)

    def stop(self) -> None:
        if self._calls is not None:
            self._calls.close()
            self._calls = None
        if self._started:
            self.pool.stop()
            self._started = False
        with self._held_lock:
            held, self._held = self._held, []
        for conn in held:
            try:
                conn.close()
            except Exception:  # a connection the database already dropped
                pass
        self._local = threading.local()
        self.engine.dispose()

    def upgrade(self) -> None:
        upgrade(self.engine)

    def run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(connection, *args, **kwargs)`` in one transaction, on the calling thread."""
        return self._transaction(False, fn, *args, **kwargs)

    def _transaction(self, keep: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` in one transaction; ``keep``: on the calling thread's kept connection.

        The database's own threads keep their connection between calls: checking one out of
        the pool per transaction (with its liveness ping and reset) cost as much as the hot
        path's SQL. A kept connection the server dropped in the meantime is replaced, and the
        transaction, which was rolled back with it, runs once more on the new one.
        """
        for attempt in (1, 2):
            conn: Connection | None = None
            reused = committing = False
            try:
                conn, reused = self._connection() if keep else (self.engine.connect(), False)
                with conn.begin() as transaction:
                    result = fn(conn, *args, **kwargs)
                    committing = True
                    transaction.commit()
                return result
            except Exception as exc:
                # a commit that failed may still have happened: never run that one again
                if self._retry_after(exc, attempt, reused, committing, conn, self._drop):
                    continue
                raise
            finally:
                if conn is not None and not keep:
                    conn.close()
        raise AssertionError("unreachable")  # pragma: no cover

    def _classify(self, exc: Exception) -> tuple[bool, bool]:
        """(the database cannot be reached, the connection was lost) for an error of a call.

        The hot path (service.db.hot) runs on the driver's cursor, so its errors arrive as the
        driver's own exceptions rather than SQLAlchemy's wrappers.
        """
        if isinstance(exc, DBAPIError):
            return is_outage(exc), bool(exc.connection_invalidated)
        dbapi = self.engine.dialect.loaded_dbapi
        if isinstance(exc, (dbapi.OperationalError, dbapi.InterfaceError)):
            return True, bool(self.engine.dialect.is_disconnect(exc, None, None))
        return False, False

    def _connection(self) -> tuple[Connection, bool]:
        """The calling pool thread's kept connection, and whether it served a call before."""
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.invalidated:
            return conn, True
        if conn is not None:
            self._drop(conn)
        conn = self.engine.connect()
        self._local.conn = conn
        with self._held_lock:
            self._held.append(conn)
        return conn, False

    def _drop(self, conn: Connection) -> None:
        self._forget("conn", conn, conn.invalidated)

    def _drop_raw(self, raw: Any) -> None:
        self._forget("raw", raw, not raw.is_valid)

    def _forget(self, slot: str, kept: Any, invalidated: bool) -> None:
        """Let go of a kept connection (``slot``: which of the thread's two) that failed."""
        if getattr(self._local, slot, None) is kept:
            setattr(self._local, slot, None)
        with self._held_lock:
            if kept in self._held:
                self._held.remove(kept)
        try:
            if not invalidated:
                kept.invalidate()
            kept.close()
        except Exception:  # it is being thrown away because it failed
            pass

    def run_in_pool(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run a blocking ``fn(*args, **kwargs)`` (no connection handed) on the database pool."""
        return self.pool.submit(fn, *args, **kwargs)

    def run_hot(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """``run`` for the scrape hot path: ``fn`` gets a :class:`RawConnection` and may use only
        the driver's cursor (service.db.hot), in a transaction begun and committed on the
        driver itself: SQLAlchemy's begin and commit cost more than SQLite's."""
        return self.pool.submit(self._hot_transaction, fn, *args, **kwargs)

    def _hot_transaction(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        for attempt in (1, 2):
            raw: Any = None
            conn: RawConnection | None = None
            reused = committing = False
            try:
                raw, reused = self._raw_connection()
                if self._sqlite:
                    # SQLite's deferred transactions upgrade to a write lock mid-way and fail;
                    # take it up front, as the engine's begin hook does for Core transactions.
                    raw.execute("BEGIN IMMEDIATE")
                conn = RawConnection(raw, self.engine.dialect)
                try:
                    result = fn(conn, *args, **kwargs)
                except BaseException:
                    raw.rollback()
                    raise
                committing = True
                raw.commit()
                return result
            except Exception as exc:
                # in autocommit, a change may have been made before the connection went
                settled = committing or (not self._sqlite and conn is not None and conn.wrote)
                if self._retry_after(exc, attempt, reused, settled, raw, self._drop_raw):
                    continue
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _retry_after(
        self,
        exc: Exception,
        attempt: int,
        reused: bool,
        settled: bool,
        connection: Any,
        drop: Callable[[Any], None],
    ) -> bool:
        """After ``exc``: True to run the call once more on a new connection; raises
        ServiceUnavailable for an outage; False for any other error, which is the caller's.

        Only a kept connection that the server dropped, on the first attempt, of a call that
        cannot have changed anything yet (``settled`` false) is worth a second attempt.
        """
        outage, dropped = self._classify(exc)
        if not outage:
            return False
        if connection is not None:
            drop(connection)
        if attempt == 1 and reused and dropped and not settled:
            return True
        log.error("database unavailable: %s", exc.__class__.__name__)
        raise ServiceUnavailable(DATABASE_DOWN) from exc

    def _raw_connection(self) -> tuple[Any, bool]:
        """The calling pool thread's kept DB-API connection (the pool's proxy of it).

        A server's connection that sat idle for ``ping_after_idle`` seconds is pinged first: the
        server may have dropped it meanwhile (a restart, a proxy's idle timeout), and a change
        sent on a dropped autocommit connection cannot safely be sent again.
        """
        raw = getattr(self._local, "raw", None)
        now = time.monotonic()
        if raw is not None and raw.is_valid:
            idle = now - getattr(self._local, "raw_used", now)
            self._local.raw_used = now
            if self._sqlite or idle < self.ping_after_idle or self._alive(raw):
                return raw, True
        if raw is not None:
            self._drop_raw(raw)
        raw = self.engine.raw_connection()
        self._local.raw_used = now
        if not self._sqlite:
            # each statement its own transaction: the hot path is one function call per change
            driver = raw.dbapi_connection
            assert driver is not None
            driver.autocommit = True
        self._local.raw = raw
        with self._held_lock:
            self._held.append(raw)
        return raw, False

    def _alive(self, raw: Any) -> bool:
        try:
            cur = raw.cursor()
            cur.execute("SELECT 1")
            cur.fetchone()
            cur.close()
            return True
        except Exception:
            return False

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run ``fn(connection, ...)`` in one transaction on the database thread pool."""
        return self.pool.submit(self._transaction, True, fn, *args, **kwargs)
