"""The database's own threads: blocking calls go in through one queue, answers come back on the
reactor thread.

Twisted's ThreadPool cost 170 us for the round trip of a call that does nothing (its team and
worker machinery, its log context, a lock-and-condition queue); a ``SimpleQueue`` and the
reactor's ``callFromThread`` cost 70-90 us on the same machine. A scrape makes two such calls
(the hold, the settlement), which were a third of the database's share of a scrape at
concurrency 1.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

T = TypeVar("T")

log = logging.getLogger(__name__)

# how long stop() waits for the calls already submitted
STOP_TIMEOUT_SECONDS = 30.0

_Call = tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DatabaseThreads:
    """``size`` threads taking calls in order from one queue.

    Calls submitted before :meth:`start` wait for it; :meth:`stop` lets every call already
    submitted finish, then ends the threads; a call submitted after it is refused.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._calls: SimpleQueue[_Call | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._stopped = False

    def start(self) -> None:
        self._stopped = False
        for index in range(self.size):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Let the calls already submitted finish, for at most ``timeout`` seconds in all; a
        thread still in a call then is left to the end of the process (the threads are
        daemons), and named in the log."""
        self._stopped = True
        for _ in self._threads:
            self._calls.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        busy = [thread.name for thread in self._threads if thread.is_alive()]
        if busy:
            log.warning("%s: still in a call after %.1f s, left running", ", ".join(busy), timeout)
        self._threads = []

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """A Deferred firing, on the reactor thread, with ``fn(*args, **kwargs)``."""
        if self._stopped:
            raise RuntimeError(f"{self.name} threads are stopped")
        done: Deferred[T] = Deferred()
        self._calls.put((done, fn, args, kwargs))
        return done

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            self._run(*call)
            del call  # nothing of a finished call is held while waiting for the next

    @staticmethod
    def _run(
        done: Deferred[Any], fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        from twisted.internet import reactor

        try:
            result = fn(*args, **kwargs)
        except BaseException:
            reactor.callFromThread(done.errback, Failure())  # type: ignore[attr-defined]
        else:
            reactor.callFromThread(done.callback, result)  # type: ignore[attr-defined]
