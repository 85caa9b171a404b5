"""The database's threads stop in bounded time, naming a thread still in a call."""

from __future__ import annotations

import logging
import threading

from service.db.threads import DatabaseThreads


def test_stop_waits_for_the_calls_submitted_then_ends_the_threads():
    threads = DatabaseThreads(2, "db-test")
    threads.start()
    done = []
    threads.submit(done.append, "first")
    threads.stop(timeout=30)
    assert done == ["first"]
    assert threads._threads == []


def test_a_call_that_does_not_return_does_not_hold_the_stop(caplog):
    threads = DatabaseThreads(1, "db-stuck")
    threads.start()
    release = threading.Event()
    threads.submit(release.wait, 60)
    with caplog.at_level(logging.WARNING, logger="service.db.threads"):
        threads.stop(timeout=0.2)
    release.set()
    assert "db-stuck-0: still in a call after 0.2 s, left running" in caplog.text
