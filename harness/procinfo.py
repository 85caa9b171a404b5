"""CPU seconds and RSS of a process tree, read from /proc (Linux)."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo.extend(_children(current))
    return pids


def cpu_seconds(pid: int) -> float:
    """The CPU seconds of ``pid``'s process tree: each live process's own, and those of the
    processes that ended and were waited for within the tree (a browser's renderer, one per
    page, ends with its page: without them a js contender's figure missed half its CPU)."""
    total = 0
    for one in tree(pid):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def rss_mb(pid: int, peak: bool = False, children: str | None = None) -> float:
    """RSS of the process in MB (with ``peak``, its high-water mark), plus that of each
    descendant whose command name contains ``children`` (``"python"``: the service's
    extraction workers, not its browser)."""
    key = "VmHWM:" if peak else "VmRSS:"
    total = 0
    for one in tree(pid) if children else [pid]:
        try:
            if one != pid and children not in Path(f"/proc/{one}/comm").read_text():
                continue
            lines = Path(f"/proc/{one}/status").read_text().splitlines()
        except (OSError, TypeError):
            continue
        for line in lines:
            if line.startswith(key):
                total += int(line.split()[1])
    return total / 1024


def count_named(pid: int, name: str) -> int:
    n = 0
    for one in tree(pid):
        try:
            if name in Path(f"/proc/{one}/comm").read_text():
                n += 1
        except OSError:
            continue
    return n
