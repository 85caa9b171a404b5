"""The reactor thread and the database threads on one core (``SCRAPESPY_CPU_AFFINITY``).

A scrape hands the database two calls, each a hop to a database thread and back. On the VM
this was built on, waking a thread that sleeps on another core cost more than the call itself:
in alternating turns, a scrape at concurrency 1 took 16% less time with the database calls run
in place, and as little with both threads kept on one core, where a hop is a switch on that
core. Throughput at concurrency 32 rose by 14% as well: the other cores are left to the
extraction workers, the browser, the database server and the target.

``auto`` (the default) gives worker ``i`` of ``--workers`` the ``i``-th core from the last of
those the process may use; a number chooses a core; ``off`` leaves the scheduler alone, as does
a machine with one core. Only the reactor thread and the database threads are kept on the core.
A process started by the service gets every core back: a child inherits the mask of the thread
that starts it, so the service starts its extraction workers and the browser inside
:func:`unpinned`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


class _Pinned:
    core: int | None = None
    every: set[int] = set()
    open: int = 0  # unpinned() sections in progress


_pinned = _Pinned()


def choose_core(setting: str, worker_index: int = 0) -> int | None:
    """The core for this process's reactor and database threads; None to leave them free."""
    if setting == "off" or not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    if setting == "auto":
        return cores[-1 - worker_index % len(cores)]
    core = int(setting)
    if core not in cores:
        raise ValueError(f"core {core} is not one this process may use ({cores})")
    return core


def pin(core: int, threads: Iterable[int]) -> None:
    """Keep the calling thread (the reactor's) and ``threads`` (native ids) on ``core``."""
    _pinned.every = set(os.sched_getaffinity(0))
    _pinned.core = core
    for tid in (threading.get_native_id(), *threads):
        os.sched_setaffinity(tid, {core})
    log.info("reactor and database threads on core %d", core, extra={"event": "cpu_affinity"})


def pinned_core() -> int | None:
    return _pinned.core


@contextmanager
def unpinned() -> Iterator[None]:
    """On the reactor thread: processes started in here may run on every core.

    Sections may overlap (an extraction worker respawned while the browser launches): the
    thread goes back to its core when the last one ends.
    """
    if _pinned.core is None:
        yield
        return
    tid = threading.get_native_id()
    if _pinned.open == 0:
        os.sched_setaffinity(tid, _pinned.every)
    _pinned.open += 1
    try:
        yield
    finally:
        _pinned.open -= 1
        if _pinned.open == 0 and _pinned.core is not None:
            os.sched_setaffinity(tid, {_pinned.core})
