"""What one instance of the deployment recipe (deploy/) needs: the memory and the cores of its
whole process tree (the service, its extraction workers and its Chromium), idle, under static
load and under js load, on PostgreSQL; bench/results/sizing.json. The requests and limits of
deploy/k8s/ are read from these figures (docs/operations.md, "Running on several machines").

    .venv/bin/python -m bench.sizing          # about a minute; BENCH_SIZING_SECONDS per load

One instance as the recipe runs it (``SCRAPESPY_EXTRACT_WORKERS=2``, ``SCRAPESPY_DB_THREADS=2``,
``SCRAPESPY_MAX_PAGES=4``), driven by wrk on 127.0.0.1 at static c=32 and js c=4, each load
for ``BENCH_SIZING_SECONDS`` (default 15). Cores are CPU seconds of the tree over wall seconds;
memory is the sum of the tree's PSS (and RSS), sampled every 0.5 s, its largest sample. On a
machine shared with other work the cores an instance gets are what is left to it: the CPU per
scrape is the figure to read, and a saturated instance's cores come from `make bench`'s
``workers`` run (bench/results/latest.json).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.contenders import postgres_database, scrapespy
from bench.run import RESULTS, wrk
from bench.site import serve, server_name, tear_down
from harness.pages import write_pages
from harness.procinfo import count_named, cpu_seconds, tree

SECONDS = float(os.environ.get("BENCH_SIZING_SECONDS", "15"))
# what deploy/k8s/api.yaml and deploy/compose.yaml set on an instance
RECIPE_ENV = {
    "SCRAPESPY_EXTRACT_WORKERS": "2",
    "SCRAPESPY_DB_THREADS": "2",
    "SCRAPESPY_MAX_PAGES": "4",
}


def tree_memory_mb(pid: int, field: str) -> float:
    """``Rss`` or ``Pss`` of ``pid`` and every descendant, in MiB: PSS shares each page among
    the processes that map it (Chromium's many processes share most of theirs), so its sum is
    about what the container's memory cgroup is charged; the RSS sum counts shared pages again
    in each process."""
    total = 0
    for one in tree(pid):
        try:
            lines = Path(f"/proc/{one}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith(f"{field}:"))
    return total / 1024


def tree_memory(pid: int) -> dict[str, float]:
    return {f: round(tree_memory_mb(pid, f), 1) for f in ("Rss", "Pss")}


class Sampler:
    """The largest tree RSS and PSS seen while it runs, every half second, on a thread."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = tree_memory(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            now = tree_memory(self.pid)
            self.peak = {f: max(self.peak[f], now[f]) for f in now}

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def load(pid: int, base: str, concurrency: int, env: dict[str, str]) -> dict[str, Any]:
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    with Sampler(pid) as sampler:
        out = wrk("scrapespy.lua", base, concurrency, env, SECONDS)
    wall = time.monotonic() - t0
    cpu = cpu_seconds(pid) - cpu0
    return {
        "concurrency": concurrency,
        "requests": out["requests"],
        "failed": out["failed"] + out["socket_errors"],
        "rps": round(out["requests"] / (out["duration_us"] / 1e6), 1),
        "p50_ms": round(out["p50_us"] / 1000, 1),
        "cores": round(cpu / wall, 2),
        "cpu_ms_per_scrape": round(cpu / max(out["requests"], 1) * 1000, 2),
        "peak_tree_rss_mb": sampler.peak["Rss"],
        "peak_tree_pss_mb": sampler.peak["Pss"],
        "processes": len(tree(pid)),
        "browser_processes": count_named(pid, "chrom"),
    }


def main() -> int:
    pg = postgres_database()
    if pg is None:
        print("bench.sizing needs PostgreSQL on 127.0.0.1:5432 (SCRAPESPY_TEST_POSTGRES_URL)")
        return 1
    database_url, drop = pg
    work = Path(tempfile.mkdtemp(prefix="scrapespy-sizing-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    cleanups: list[Any] = [drop]
    results: dict[str, Any] = {
        "seconds_per_load": SECONDS,
        "machine": {"cores": os.cpu_count()},
        "site": server_name(),
        "env": RECIPE_ENV,
    }
    try:
        (work / "instance").mkdir()
        proc, key = scrapespy(database_url, work / "instance", extra_env=RECIPE_ENV)
        cleanups.append(proc.stop)
        pid = proc.process.pid
        env = {"BENCH_TARGET": target, "BENCH_KEY": key}
        jenv = {**env, "BENCH_ENGINE": "js", "BENCH_PAGE": "/js.html"}
        time.sleep(2)
        results["idle"] = tree_memory(pid)
        wrk("scrapespy.lua", proc.base, 8, env, 2)  # warm-up: robots.txt, connections
        results["static"] = load(pid, proc.base, 32, env)
        print(f"  static c=32 {results['static']}", flush=True)
        wrk("scrapespy.lua", proc.base, 1, jenv, 3)  # the browser's launch
        results["js"] = load(pid, proc.base, 4, jenv)
        print(f"  js c=4      {results['js']}", flush=True)
        time.sleep(2)
        results["after"] = tree_memory(pid)
        proc.stop()
    finally:
        tear_down(cleanups, site, work)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sizing.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
