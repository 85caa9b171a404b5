"""Soak of the ``js`` engine: hundreds of js scrapes of a local page through the real service.

    .venv/bin/python -m bench.js_soak [--requests 300] [--concurrency 4] [--json PATH]

Starts ``scrapespy serve`` (SQLite in a temporary folder, private targets allowed for the local
page), warms the browser up, then sends the scrapes and reports, before and after: the browser
processes (main ones and all of Chromium's), the service's RSS, the browser tree's PSS and the
sockets the service listens on (its port plus the egress guard's routes: a route left open
is a context left open); and the latency p50 / p95 / max. Bounded: each scrape has a 20 s
timeout and the run stops after ``BENCH_SOAK_SECONDS`` (default 300). Exit status 1 when a scrape
failed or something was left behind (a browser process, a route).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.procinfo import rss_mb, tree
from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite

JS_PRICE = 5
SOAK_SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "300"))
WARM_UP = 5
TREND_EVERY = 50


def _command(pid: int) -> list[bytes]:
    """argv, split on spaces too: Chromium's helpers rewrite theirs into one string."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return []


def chromium(pid: int) -> tuple[list[int], list[int]]:
    """(main browser processes, all Chromium processes) below ``pid``."""
    commands = {p: _command(p) for p in tree(pid)[1:]}
    every = [
        p
        for p, argv in commands.items()
        if argv and argv[0].endswith((b"/chromium", b"/chromium-headless-shell"))
    ]
    main = [p for p in every if not any(a.startswith(b"--type=") for a in commands[p])]
    return main, every


def pss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total / 1024


def listening_sockets(pid: int) -> int:
    """TCP sockets in LISTEN state held by the process itself."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                count += 1
    return count


def snapshot(pid: int) -> dict[str, Any]:
    main, every = chromium(pid)
    return {
        "browser_processes": len(main),
        "chromium_processes": len(every),
        "service_rss_mb": round(rss_mb(pid), 1),
        "browser_pss_mb": round(pss_mb(every), 1),
        "listening_sockets": listening_sockets(pid),
    }


def run(requests: int, concurrency: int) -> dict[str, Any]:
    site = TargetSite().start()
    workdir = Path(tempfile.mkdtemp(prefix="scrapespy-js-soak-"))
    database_url = f"sqlite:///{workdir / 'soak.db'}"
    made = Accounts(database_url)
    _, key = made.create(credits=(requests + WARM_UP) * JS_PRICE)
    made.close()
    service = ServiceProcess(
        database_url,
        workdir,
        env={"SCRAPESPY_MAX_PAGES": str(concurrency), "SCRAPESPY_LOG_LEVEL": "INFO"},
    ).start()
    assert service.process is not None
    pid = service.process.pid
    body = {"url": site.url("/js-only"), "engine": "js", "timeout": 20}
    try:
        for _ in range(WARM_UP):
            service.scrape(key, body)
        before = snapshot(pid)
        stop_at = time.monotonic() + SOAK_SECONDS

        def one(_: int) -> tuple[float, bool | None]:
            if time.monotonic() > stop_at:
                return 0.0, None  # past the run's time bound: not sent
            started = time.perf_counter()
            reply = service.scrape(key, body, timeout=30)
            ok = reply.status == 200 and reply.json.get("title") == "Rendered by JS"
            return (time.perf_counter() - started) * 1000, ok

        started = time.monotonic()
        outcomes: list[tuple[float, bool | None]] = []
        trend = [(before["service_rss_mb"], before["browser_pss_mb"])]
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for first in range(0, requests, TREND_EVERY):
                chunk = range(first, min(first + TREND_EVERY, requests))
                outcomes.extend(pool.map(one, chunk))
                trend.append((round(rss_mb(pid), 1), round(pss_mb(chromium(pid)[1]), 1)))
        wall = time.monotonic() - started
        time.sleep(1.0)  # let closed contexts' processes exit before counting
        after = snapshot(pid)
    finally:
        service.stop()
        site.stop()
    latencies = sorted(ms for ms, ok in outcomes if ok)
    failed = sum(1 for _, ok in outcomes if ok is False)
    skipped = sum(1 for _, ok in outcomes if ok is None)
    quantiles = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [0.0] * 19
    return {
        "requests": requests,
        "concurrency": concurrency,
        "succeeded": len(latencies),
        "failed": failed,
        "not_sent": skipped,
        "wall_s": round(wall, 1),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(quantiles[18], 1),
        "max_ms": round(latencies[-1], 1) if latencies else None,
        "service_rss_mb_every_50": [service for service, _ in trend],
        "browser_pss_mb_every_50": [browser for _, browser in trend],
        "before": before,
        "after": after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.js_soak", description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    report = run(args.requests, args.concurrency)
    before, after = report["before"], report["after"]
    print(
        f"js soak: {report['succeeded']}/{report['requests']} ok ({report['failed']} failed, "
        f"{report['not_sent']} not sent in time), concurrency "
        f"{report['concurrency']}, {report['wall_s']} s; latency p50 {report['p50_ms']} ms, "
        f"p95 {report['p95_ms']} ms, max {report['max_ms']} ms"
    )
    for name in before:
        print(f"  {name:20} before {before[name]:>8}   after {after[name]:>8}")
    print(f"  service RSS (MB) every {TREND_EVERY}: {report['service_rss_mb_every_50']}")
    print(f"  browser PSS (MB) every {TREND_EVERY}: {report['browser_pss_mb_every_50']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))
    leaked = (
        after["browser_processes"] != 1 or after["listening_sockets"] > before["listening_sockets"]
    )
    return 1 if report["failed"] or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
