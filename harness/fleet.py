"""Several instances on one machine, as machines: one killed as a machine dies, and which one is
fetching a page from the target site right now (tests/test_e2e_fleet.py)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from harness.procinfo import tree
from harness.service import ServiceProcess
from harness.site import TargetSite


def kill_machine(instance: ServiceProcess) -> None:
    """SIGKILL to the instance and every process it started (its Chromium, its extraction
    workers), all stopped first so that none starts another meanwhile: a machine that dies."""
    assert instance.process is not None
    found = tree(instance.process.pid)
    for pid in found:
        _signal(pid, signal.SIGSTOP)
    for pid in set(found) | set(tree(instance.process.pid)):
        _signal(pid, signal.SIGKILL)
    instance.process.wait(30)


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def connection_owner(port: int, instances: list[ServiceProcess]) -> ServiceProcess | None:
    """The instance whose processes hold the TCP connection from local ``port`` (a fetch seen
    by the target site: its client's port), read from /proc (Linux)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] != "0":
                inodes.add(f"socket:[{fields[9]}]")
    for instance in instances:
        if instance.process is None or instance.process.poll() is not None:
            continue
        for pid in tree(instance.process.pid):
            try:
                descriptors = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for descriptor in descriptors:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{descriptor}") in inodes:
                        return instance
                except OSError:
                    continue
    return None


class Gate:
    """Pages of a site held until :meth:`open` (``longest`` seconds at most), and the client's
    port of each fetch waiting at it, by path."""

    def __init__(self, longest: float) -> None:
        self.longest = longest
        self.opened = threading.Event()
        self.lock = threading.Lock()
        self.waiting: dict[str, int] = {}

    def hold(self, site: TargetSite, path: str, body: bytes) -> None:
        def serve(handler: Any) -> tuple[int, dict[str, str], bytes]:
            with self.lock:
                self.waiting[path] = handler.client_address[1]
            self.opened.wait(self.longest)
            with self.lock:
                self.waiting.pop(path, None)
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body

        site.routes[path] = serve

    def held(self) -> dict[str, int]:
        with self.lock:
            return dict(self.waiting)

    def open(self) -> None:
        self.opened.set()
