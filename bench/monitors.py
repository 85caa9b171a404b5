"""Monitors' figures: what change tracking adds to a monitor's run, and a thousand monitors due in
the same minute on one instance; bench/results/monitors.json.

    .venv/bin/python -m bench.monitors      # a few minutes; PostgreSQL on 127.0.0.1

One instance on a PostgreSQL database of its own (``SCRAPESPY_MONITOR_TICK_SECONDS`` left at its
default), the schedules on a test clock (``SCRAPESPY_MONITOR_TEST_CLOCK_FILE``) that this
process moves, the benchmark's static pages served by nginx (or Twisted):

- **change tracking's cost**: ten monitors (a page each) with ``formats: ["markdown",
  "change_tracking"]`` and ten of the same pages with ``["markdown"]``, static, half an hour
  apart on the clock; each move of the clock makes one group's ten runs due at once and waits
  until their checks are finished, the groups in turns (``BENCH_MONITORS_ROUNDS``, default 7,
  after the first runs that make the first snapshots). The figure is the median over rounds
  of the CPU seconds the instance's whole tree spent per round with change tracking over
  without (wall time is given too);
- **a thousand due at once**: 1,000 monitors (each of one page, hourly) made and run once, then
  the clock moved past their next time, so all are due in the same minute. Meanwhile wrk drives
  static ``POST /scrape`` at c=32 for ``BENCH_MONITORS_SECONDS`` (default 60) against the same
  instance. The figures: the seconds from the clock's move to the last run started (its check
  made) and finished, and that c=32 throughput over the ceiling's (a plain persistent Scrapy
  crawler, bench/ceiling.py, on the same pages at c=32 for as long, just before), and over the
  same instance's c=32 throughput just before, with no monitor due.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select

from bench.contenders import ceiling, postgres_database, scrapespy
from bench.run import RESULTS, wrk
from bench.site import serve, server_name, tear_down
from harness.monitor_clock import Clock
from harness.pages import write_pages
from harness.procinfo import cpu_seconds
from harness.service import ServiceProcess, call
from service.db.tables import monitor_checks

ROUNDS = int(os.environ.get("BENCH_MONITORS_ROUNDS", "7"))
SECONDS = float(os.environ.get("BENCH_MONITORS_SECONDS", "60"))
MANY = int(os.environ.get("BENCH_MONITORS_MANY", "1000"))
HOUR = 3600
WAIT = 600.0  # the longest any group of runs may take before the benchmark gives up


class Checks:
    """The instance's checks, read from its database."""

    def __init__(self, database_url: str):
        self.engine = create_engine(database_url)

    def counts(self, monitor_ids: list[int]) -> tuple[int, int]:
        """Checks made and finished, of these monitors."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(
                    func.count(),
                    func.count(monitor_checks.c.finished_at),
                ).where(monitor_checks.c.monitor_id.in_(monitor_ids))
            ).one()
        return int(row[0]), int(row[1])

    def internal_ids(self, public_ids: list[str]) -> list[int]:
        from service.db.tables import monitors

        with self.engine.connect() as conn:
            return [
                int(r[0])
                for r in conn.execute(
                    select(monitors.c.id).where(monitors.c.public_id.in_(public_ids))
                )
            ]

    def until(self, monitor_ids: list[int], made: int, finished: int) -> float:
        """Seconds until these monitors have ``made`` checks, ``finished`` of them finished."""
        started = time.monotonic()
        while True:
            have, done = self.counts(monitor_ids)
            if have >= made and done >= finished:
                return time.monotonic() - started
            if time.monotonic() - started > WAIT:
                raise RuntimeError(f"{have}/{made} checks made, {done}/{finished} finished")
            time.sleep(0.2)


def make_monitors(
    proc: ServiceProcess, key: str, target: str, count: int, formats: list[str]
) -> list[str]:
    made = []
    for n in range(count):
        body = {"url": f"{target}/article-{n % 20}.html?m={n}", "schedule": HOUR}
        body["formats"] = formats
        answer = call("POST", proc.url("/monitors"), body, key=key, timeout=60)
        assert answer.status == 201, answer.body[:300]
        made.append(answer.json["id"])
    return made


def change_tracking_cost(
    proc: ServiceProcess, key: str, target: str, clock: Clock, checks: Checks
) -> dict[str, Any]:
    """The two groups half an hour apart on the clock, so that each move of half an hour makes
    one group's ten runs due, the groups in turns."""
    ids: dict[str, list[int]] = {}
    for name, formats in (("with", ["markdown", "change_tracking"]), ("without", ["markdown"])):
        if ids:
            clock.advance(HOUR // 2)
        ids[name] = checks.internal_ids(make_monitors(proc, key, target, 10, formats))
        checks.until(ids[name], 10, 10)  # the first runs, due at their making: first snapshots
    runs: dict[str, list[dict[str, float]]] = {"with": [], "without": []}
    for _ in range(ROUNDS):
        for name in ("with", "without"):
            made, _ = checks.counts(ids[name])
            cpu0, t0 = cpu_seconds(proc.process.pid), time.monotonic()
            clock.advance(HOUR // 2)
            checks.until(ids[name], made + 10, made + 10)
            runs[name].append(
                {"cpu_s": cpu_seconds(proc.process.pid) - cpu0, "wall_s": time.monotonic() - t0}
            )
    ratios = [w["cpu_s"] / o["cpu_s"] for w, o in zip(runs["with"], runs["without"], strict=True)]
    return {
        "pages_per_run": 10,
        "rounds": ROUNDS,
        "cpu_s_with": [round(r["cpu_s"], 3) for r in runs["with"]],
        "cpu_s_without": [round(r["cpu_s"], 3) for r in runs["without"]],
        "wall_s_with": round(statistics.median(r["wall_s"] for r in runs["with"]), 2),
        "wall_s_without": round(statistics.median(r["wall_s"] for r in runs["without"]), 2),
        "cpu_ratio": round(statistics.median(ratios), 3),
    }


def many_due(
    proc: ServiceProcess, key: str, target: str, clock: Clock, checks: Checks, work: Path
) -> dict[str, Any]:
    public = make_monitors(proc, key, target, MANY, ["markdown"])
    ids = checks.internal_ids(public)
    checks.until(ids, MANY, MANY)  # their first runs
    env = {"BENCH_TARGET": target, "BENCH_KEY": key}
    urls = work / "urls.txt"
    urls.write_text("\n".join(f"{target}/article-{i}.html" for i in range(20)))
    plain = ceiling(urls, 32, SECONDS)
    wrk("scrapespy.lua", proc.base, 32, env, 3)
    before = wrk("scrapespy.lua", proc.base, 32, env, SECONDS)
    during: dict[str, Any] = {}

    def load() -> None:
        during.update(wrk("scrapespy.lua", proc.base, 32, env, SECONDS))

    loader = threading.Thread(target=load)
    loader.start()
    time.sleep(1)  # wrk's connections are up
    clock.advance(HOUR)
    started = checks.until(ids, 2 * MANY, 0)
    finished = started + checks.until(ids, 2 * MANY, 2 * MANY)
    loader.join(SECONDS + 180)

    def rps(out: dict[str, Any]) -> float:
        return round(out["requests"] / (out["duration_us"] / 1e6), 1)

    return {
        "monitors": MANY,
        "wrk_seconds": SECONDS,
        "all_started_s": round(started, 1),
        "all_finished_s": round(finished, 1),
        "ceiling_c32_rps": round(plain["rps"], 1),
        "static_c32_rps_before": rps(before),
        "static_c32_rps_while_due": rps(during),
        "failed_while_due": during["failed"] + during["socket_errors"],
        "ratio": round(rps(during) / rps(before), 3),
        "x_ceiling_while_due": round(rps(during) / plain["rps"], 3),
    }


def main() -> int:
    made = postgres_database()
    if made is None:
        print("bench.monitors needs PostgreSQL on 127.0.0.1:5432")
        return 1
    database_url, drop = made
    work = Path(tempfile.mkdtemp(prefix="scrapespy-monitors-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    cleanups: list[Any] = [drop]
    clock = Clock(work / "clock")
    results: dict[str, Any] = {
        "machine": {"cores": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]},
        "site": server_name(),
    }
    try:
        (work / "instance").mkdir()
        proc, key = scrapespy(
            database_url,
            work / "instance",
            extra_env={
                "SCRAPESPY_MONITOR_TEST_CLOCK_FILE": str(clock.path),
                "SCRAPESPY_MAX_MONITORS_PER_ACCOUNT": str(MANY + 20),
                "SCRAPESPY_EXTRACT_WORKERS": "2",
            },
        )
        cleanups.append(proc.stop)
        checks = Checks(database_url)
        results["change_tracking"] = change_tracking_cost(proc, key, target, clock, checks)
        print(f"  change tracking: {results['change_tracking']}", flush=True)
        results["many_due"] = many_due(proc, key, target, clock, checks, work)
        print(f"  {MANY} due at once: {results['many_due']}", flush=True)
        checks.engine.dispose()
    finally:
        tear_down(cleanups, site, work)
    cost, due = results["change_tracking"], results["many_due"]
    print(
        f"\na 10-page monitor run with change tracking: {cost['cpu_ratio']}x the CPU of the "
        f"same run without (bar: at most 1.15x)\n{MANY} monitors due at once: all started in "
        f"{due['all_started_s']} s, finished in {due['all_finished_s']} s (bar: started within "
        f"60 s); static c=32 meanwhile {due['x_ceiling_while_due']}x the ceiling (bar: at least "
        f"0.9x), {due['ratio']}x its own figure before"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "monitors.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
