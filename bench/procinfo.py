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
    total = 0
    for one in tree(pid):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def rss_mb(pid: int, peak: bool = False) -> float:
    key = "VmHWM:" if peak else "VmRSS:"
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0


def count_named(pid: int, name: str) -> int:
    n = 0
    for one in tree(pid):
        try:
            if name in Path(f"/proc/{one}/comm").read_text():
                n += 1
        except OSError:
            continue
    return n
