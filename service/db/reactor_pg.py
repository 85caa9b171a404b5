"""PostgreSQL's scrape hot path on the reactor thread, over psycopg2's asynchronous connections.

A scrape makes two calls on PostgreSQL, one statement each (migrations 0002 and 0003): the key
lookup with the hold, then the settlement. Through the database threads each call woke a
thread and came back through ``callFromThread``, and the threads' hand-offs of the GIL slowed
the reactor thread itself: at concurrency 32, one database thread served more scrapes a second
than two, and two more than four. Here a call is a query written to the server's socket and
read back when the reactor finds the socket readable; nothing blocks and no thread is involved.

Connections are opened on a database thread (libpq resolves the host name and connects there,
blocking) and then handed to the reactor. psycopg2's asynchronous connections are in autocommit
mode, as the threads' hot connections were: each statement is its own transaction.

An idle connection stays watched for reading: a server that closes it (a restart, an operator's
``pg_terminate_backend``) makes it readable, and it is dropped then rather than when a change is
next sent on it. A call whose connection is lost after its statement was sent is never sent
again (it may have been carried out): the caller gets :class:`ServiceUnavailable`, as for a
database that cannot be reached.
"""

from __future__ import annotations

import logging
import select
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReadDescriptor, IWriteDescriptor
from twisted.python.failure import Failure
from zope.interface import implementer

from service.core.errors import ServiceUnavailable

log = logging.getLogger(__name__)

DATABASE_DOWN = "the database is unavailable, retry later"
CONNECT_TIMEOUT = 10.0  # seconds for each wait of an opening connection


def open_async(connect_args: tuple[Any, ...], connect_kwargs: dict[str, Any]) -> Any:
    """A ready asynchronous psycopg2 connection; blocking, so for a database thread."""
    import psycopg2
    import psycopg2.extensions as ext

    conn = psycopg2.connect(*connect_args, async_=1, **connect_kwargs)
    try:
        while True:
            state = conn.poll()
            if state == ext.POLL_OK:
                return conn
            fd: list[int] = [conn.fileno()]
            wait: tuple[list[int], list[int], list[int]] = (
                (fd, [], []) if state == ext.POLL_READ else ([], fd, [])
            )
            if not any(select.select(*wait, CONNECT_TIMEOUT)):
                raise psycopg2.OperationalError("timed out connecting to the database")
    except BaseException:
        conn.close()
        raise


class _Call:
    __slots__ = ("done", "params", "sent", "sql")

    def __init__(self, sql: str, params: dict[str, Any]) -> None:
        self.sql = sql
        self.params = params
        self.done: Deferred[tuple[Any, ...] | None] = Deferred()
        self.sent = False


@implementer(IReadDescriptor, IWriteDescriptor)
class _Link:
    """One asynchronous connection, registered with the reactor for as long as it is open."""

    def __init__(self, owner: ReactorPostgres, conn: Any) -> None:
        import psycopg2.extensions as ext

        self._ext = ext
        self.owner = owner
        self.conn = conn
        self.fd = conn.fileno()
        self.cursor: Any = None
        self.call: _Call | None = None
        self.writing = False
        owner.reactor.addReader(self)

    # IReadDescriptor / IWriteDescriptor
    def fileno(self) -> int:
        return self.fd

    def logPrefix(self) -> str:  # noqa: N802 - Twisted's name
        return "postgresql"

    def doRead(self) -> None:  # noqa: N802 - Twisted's name
        if self.call is None:
            self._idle_read()
        else:
            self._poll()

    def doWrite(self) -> None:  # noqa: N802 - Twisted's name
        self._poll()

    def connectionLost(self, reason: Failure) -> None:  # noqa: N802 - Twisted's name
        self._lost(reason)

    # the link's own work
    def send(self, call: _Call) -> None:
        self.call = call
        if self.conn.closed:
            self._lost(None)
            return
        try:
            self.cursor = self.conn.cursor()
            call.sent = True  # from here on the statement may reach the server
            self.cursor.execute(call.sql, call.params)
        except Exception:
            self._lost(Failure())
            return
        self._poll()

    def _poll(self) -> None:
        ext = self._ext
        try:
            state = self.conn.poll()
        except Exception:
            self._failed(Failure())
            return
        if state == ext.POLL_OK:
            self._want_write(False)
            call, self.call = self.call, None
            failure: Failure | None = None
            try:
                row = self.cursor.fetchone() if self.cursor.description else None
            except Exception:
                row, failure = None, Failure()
            self.cursor.close()
            self.cursor = None
            self.owner._released(self)
            if call is not None:
                if failure is not None:
                    call.done.errback(failure)
                else:
                    call.done.callback(row)
        elif state == ext.POLL_WRITE:
            self._want_write(True)
        else:  # POLL_READ: the reactor calls doRead when the answer arrives
            self._want_write(False)

    def _failed(self, failure: Failure) -> None:
        """The statement failed: a database error is the caller's; a lost connection is not."""
        if self.conn.closed:
            self._lost(failure)
            return
        call, self.call = self.call, None
        if self.cursor is not None:
            self.cursor.close()
            self.cursor = None
        self._want_write(False)
        self.owner._released(self)
        if call is not None:
            call.done.errback(failure)

    def _idle_read(self) -> None:
        try:
            self.conn.poll()  # a notice, or the server going away
        except Exception:
            self._lost(Failure())
            return
        if self.conn.closed:
            self._lost(None)

    def _want_write(self, want: bool) -> None:
        if want != self.writing:
            self.writing = want
            if want:
                self.owner.reactor.addWriter(self)
            else:
                self.owner.reactor.removeWriter(self)

    def _lost(self, failure: Failure | None) -> None:
        self.close()
        call, self.call = self.call, None
        self.owner._gone(self, call, failure)

    def close(self) -> None:
        self.owner.reactor.removeReader(self)
        if self.writing:
            self.writing = False
            self.owner.reactor.removeWriter(self)
        try:
            self.conn.close()
        except Exception:  # it is being closed because it failed
            pass


class ReactorPostgres:
    """Up to ``size`` asynchronous connections; calls wait in order for a free one.

    ``opener`` runs a blocking function on a database thread and returns a Deferred of its
    result (``DatabaseThreads.submit``).
    """

    def __init__(
        self,
        connect_args: tuple[Any, ...],
        connect_kwargs: dict[str, Any],
        size: int,
        opener: Callable[..., Deferred[Any]],
        reactor: Any = None,
    ) -> None:
        if reactor is None:
            from twisted.internet import reactor
        self.reactor = reactor
        self._connect = (connect_args, connect_kwargs)
        self.size = size
        self._opener = opener
        self._idle: list[_Link] = []
        self._links: set[_Link] = set()
        self._opening = 0
        self._waiting: deque[_Call] = deque()
        self._closed = False

    def call(self, sql: str, params: dict[str, Any]) -> Deferred[tuple[Any, ...] | None]:
        """The first row (or None) of ``sql`` run with ``params``, as one transaction."""
        if self._closed:
            raise RuntimeError("the database is stopped")
        call = _Call(sql, params)
        self._waiting.append(call)
        self._dispatch()
        return call.done

    def close(self) -> None:
        self._closed = True
        for link in list(self._links):
            link.close()
        self._links.clear()
        self._idle.clear()
        waiting, self._waiting = self._waiting, deque()
        for call in waiting:
            call.done.errback(Failure(ServiceUnavailable(DATABASE_DOWN)))

    @property
    def open_connections(self) -> int:
        return len(self._links)

    def _dispatch(self) -> None:
        while self._waiting and self._idle:
            self._idle.pop().send(self._waiting.popleft())
        shortfall = len(self._waiting) - self._opening
        while shortfall > 0 and len(self._links) + self._opening < self.size:
            self._open()
            shortfall -= 1

    def _open(self) -> None:
        self._opening += 1
        args, kwargs = self._connect
        d = self._opener(open_async, args, kwargs)
        d.addCallbacks(self._opened, self._open_failed)

    def _opened(self, conn: Any) -> None:
        self._opening -= 1
        if self._closed:
            conn.close()
            return
        link = _Link(self, conn)
        self._links.add(link)
        self._idle.append(link)
        self._dispatch()

    def _open_failed(self, failure: Failure) -> None:
        self._opening -= 1
        if self._closed:
            return
        log.error("database unavailable: %s", failure.type.__name__)
        if self._waiting:  # the call that asked for this connection gets the outage
            self._waiting.popleft().done.errback(Failure(ServiceUnavailable(DATABASE_DOWN)))
        self._dispatch()

    def _released(self, link: _Link) -> None:
        self._idle.append(link)
        self._dispatch()

    def _gone(self, link: _Link, call: _Call | None, failure: Failure | None) -> None:
        self._links.discard(link)
        if link in self._idle:
            self._idle.remove(link)
        if call is not None:
            if call.sent:
                # the statement may have been carried out: it is not sent again
                reason = failure.type.__name__ if failure is not None else "connection closed"
                log.error("database unavailable: %s", reason)
                call.done.errback(Failure(ServiceUnavailable(DATABASE_DOWN)))
            else:
                self._waiting.appendleft(call)
        if not self._closed:
            self._dispatch()
