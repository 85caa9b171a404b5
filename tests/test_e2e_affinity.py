"""The reactor and database threads share one core; everything the service starts gets every core.

Read from /proc of the running service, as an operator would with ``taskset -p``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from service.affinity import choose_core
from service.config import Config, ConfigError
from tests.services import ServiceProcess

CORES = sorted(os.sched_getaffinity(0))
needs_two_cores = pytest.mark.skipif(len(CORES) < 2, reason="one core: nothing to choose")


def mask(tid: int) -> set[int]:
    return set(os.sched_getaffinity(tid))


def masks(tids: list[int]) -> list[set[int]]:
    """The masks of those of ``tids`` still running: a browser's helper thread may end between
    the listing and the reading."""
    found = []
    for tid in tids:
        try:
            found.append(mask(tid))
        except ProcessLookupError:
            continue
    return found


def threads_of(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def everything_started_by(pid: int) -> list[int]:
    """Every thread of every process below ``pid``."""
    tids = []
    for child in descendants(pid):
        try:
            tids.extend(threads_of(child))
        except OSError:  # a process that ended meanwhile
            continue
    return tids


def test_auto_gives_each_worker_its_own_core_from_the_last():
    assert choose_core("off") is None
    if len(CORES) < 2:
        assert choose_core("auto") is None
        return
    assert choose_core("auto", 0) == CORES[-1]
    assert choose_core("auto", 1) == CORES[-2]
    assert choose_core("auto", len(CORES)) == CORES[-1]
    assert choose_core(str(CORES[0])) == CORES[0]
    with pytest.raises(ValueError):
        choose_core("4096")


def test_the_setting_is_checked_when_read():
    assert Config.from_env({}).cpu_affinity == "auto"
    assert Config.from_env({"SCRAPESPY_CPU_AFFINITY": " OFF "}).cpu_affinity == "off"
    assert Config.from_env({"SCRAPESPY_CPU_AFFINITY": "1"}).cpu_affinity == "1"
    with pytest.raises(ConfigError, match="SCRAPESPY_CPU_AFFINITY"):
        Config.from_env({"SCRAPESPY_CPU_AFFINITY": "fast"})


@needs_two_cores
@pytest.mark.browser
def test_the_reactor_and_database_threads_share_a_core_and_children_get_every_core(
    service, site, accounts
):
    _, key = accounts.create(credits=100)
    # a js scrape starts Playwright's driver and the browser
    reply = service.scrape(key, {"url": site.url("/article"), "engine": "js"})
    assert reply.status == 200 and reply.json["success"] is True
    assert service.scrape(key, {"url": site.url("/article")}).json["success"] is True

    pid = service.process.pid
    core = CORES[-1]
    assert mask(pid) == {core}  # the reactor thread
    pinned = [m for m in masks(threads_of(pid)) if m == {core}]
    assert len(pinned) >= 2  # and the database thread
    started = everything_started_by(pid)
    assert len(started) > 10  # extraction workers, the driver, the browser and its helpers
    assert all(m == set(CORES) for m in masks(started))


@needs_two_cores
def test_off_leaves_every_thread_to_the_scheduler(database_url, site, accounts, tmp_path):
    proc = ServiceProcess(database_url, tmp_path, env={"SCRAPESPY_CPU_AFFINITY": "off"}).start()
    try:
        _, key = accounts.create(credits=10)
        assert proc.scrape(key, {"url": site.url("/article")}).json["success"] is True
        assert proc.process is not None
        assert all(m == set(CORES) for m in masks(threads_of(proc.process.pid)))
    finally:
        proc.stop()


@needs_two_cores
def test_two_workers_take_two_cores(database_url, site, accounts, tmp_path):
    proc = ServiceProcess(database_url, tmp_path, args=("--workers", "2")).start()
    try:
        assert proc.process is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum("scrapespy listening on" in line for line in proc.output) >= 2:
                break
            time.sleep(0.1)
        workers = [p for p in descendants(proc.process.pid) if _is_worker(p)]
        assert len(workers) == 2
        assert sorted(min(mask(w)) for w in workers) == sorted(CORES[-2:])
        assert all(len(mask(w)) == 1 for w in workers)
        assert mask(proc.process.pid) == set(CORES)  # the supervisor itself is not pinned
    finally:
        assert proc.stop(signal.SIGTERM, timeout=60) == 0


def _is_worker(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"--inherit-fd" in argv
