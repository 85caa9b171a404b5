"""Issue 34's figures in ``make bench``: Firecrawl's API (``/v2``) against the native one.

    python -m bench.firecrawl       (bench/run.py calls it last; BENCH_FIRECRAWL=0 leaves it out)

- **Scrape**: ``POST /v2/scrape`` as firecrawl-py sends it (Bearer key, ``formats:
  ["markdown"]``, main content by default) against native ``POST /scrape`` asking the same
  (``formats: ["markdown"], only_main_content: true``), both with wrk at static c=32 over the
  benchmark's 20 pages, on one SQLite instance, in turns that alternate which goes first
  (``BENCH_FIRECRAWL_ROUNDS``, default 5, of ``BENCH_DURATION`` s). The figure is the median of
  the per-round ratios of requests per second (bar >= 0.95x).
- **Crawl**: a ``BENCH_FIRECRAWL_PAGES``-page crawl (default 100) of bench/crawl_site.py's site,
  started by ``POST /v2/crawl`` (``limit``, ``crawlEntireDomain``, ``scrapeOptions: {formats:
  ["markdown"]}``) and by
  native ``POST /crawl`` with the same pages and outputs, alternating; each timed from its POST
  to the job's ``finished_at`` (the native view of the same job, polled with ``limit=1`` so
  that the polls cost the same). The figure is the median of the per-round ratios of the
  times (bar <= 1.05x).

Figures: bench/results/firecrawl.json (``BENCH_FIRECRAWL_JSON`` names another file).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench.contenders import scrapespy
from bench.crawl_site import depth, write_site
from bench.job_client import FINISHED, Connection, row, verdict
from bench.run import DURATION, measured, wrk
from bench.site import serve, server_name, stop, tear_down
from harness.pages import write_pages

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(
    os.environ.get("BENCH_FIRECRAWL_JSON", ROOT / "bench" / "results" / "firecrawl.json")
)
ENABLED = os.environ.get("BENCH_FIRECRAWL", "1") != "0"
ROUNDS = int(os.environ.get("BENCH_FIRECRAWL_ROUNDS", "5"))
PAGES = int(os.environ.get("BENCH_FIRECRAWL_PAGES", "100"))
CONCURRENCY = 32
SCRAPE_BAR = 0.95
CRAWL_BAR = 1.05
POLL_SECONDS = 0.2
RUN_TIMEOUT = 300.0
NATIVE_FIELDS = {
    "BENCH_FIELDS": '"formats":["markdown"],"only_main_content":true',
    "BENCH_EXPECT": '"markdown":"',
}


def alternating(
    rounds: int, pair: list[tuple[str, Callable[[], dict[str, Any]]]], label: str
) -> dict[str, list[dict[str, Any]]]:
    """Each of ``pair`` once a round, the first swapping every round."""
    turns: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in pair}
    for turn in range(rounds):
        for name, run in pair if turn % 2 == 0 else pair[::-1]:
            figures = run()
            turns[name].append(figures)
            print(f"  firecrawl {label} {name:<9} round {turn + 1}: {figures}", flush=True)
    return turns


def scrape_figure(proc: Any, key: str, target: str) -> dict[str, Any]:
    env = {"BENCH_TARGET": target, "BENCH_KEY": key}
    native_env = {**env, **NATIVE_FIELDS}
    pid = proc.process.pid
    wrk("scrapespy.lua", proc.base, 8, native_env, 2)  # warm-up: robots.txt, connections
    wrk("firecrawl.lua", proc.base, 8, env, 2)
    turns = alternating(
        ROUNDS,
        [
            ("native", lambda: measured(pid, "scrapespy.lua", proc.base, CONCURRENCY, native_env)),
            ("v2", lambda: measured(pid, "firecrawl.lua", proc.base, CONCURRENCY, env)),
        ],
        "scrape",
    )
    each = [
        round(v["rps"] / n["rps"], 3)
        for v, n in zip(turns["v2"], turns["native"], strict=True)
        if n["rps"]
    ]
    return {
        "concurrency": CONCURRENCY,
        "duration_s": DURATION,
        "native_rps": statistics.median(t["rps"] for t in turns["native"]),
        "v2_rps": statistics.median(t["rps"] for t in turns["v2"]),
        "native_cpu_s_per_1000": statistics.median(t["cpu_s_per_1000"] for t in turns["native"]),
        "v2_cpu_s_per_1000": statistics.median(t["cpu_s_per_1000"] for t in turns["v2"]),
        "x_native": statistics.median(each) if each else None,
        "x_native_turns": each,
        "failed": sum(t["failed"] for t in turns["native"] + turns["v2"]),
        "bar": SCRAPE_BAR,
    }


async def _crawl(base: str, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    conn = Connection(base, key)
    try:
        started = time.time()
        status, answer = await conn.call("POST", path, body)
        if status not in (200, 202) or b'"id"' not in answer:
            raise RuntimeError(f"POST {path} answered {status}: {answer[:300]!r}")
        job_id = json.loads(answer)["id"]
        while True:
            status, answer = await conn.call("GET", f"/jobs/{job_id}?limit=1")
            found = json.loads(answer)
            if status != 200:
                raise RuntimeError(f"GET /jobs/{job_id} answered {status}: {answer[:300]!r}")
            if found["status"] in FINISHED:
                break
            await asyncio.sleep(POLL_SECONDS)
    finally:
        conn.close()
    end = found.get("finished_at")
    ended = datetime.fromisoformat(end).timestamp() if end else time.time()
    counts = found.get("counts", {})
    return {
        "pages": counts.get("done", 0),
        "seconds": round(ended - started, 3),
        "status": found.get("status"),
        "failed": PAGES - counts.get("done", 0),
    }


def crawl(base: str, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(_crawl(base, key, path, body), RUN_TIMEOUT))


def crawl_figure(proc: Any, key: str, start: str) -> dict[str, Any]:
    hops = depth(PAGES - 1) + 5  # cross links only shorten the way to a page
    native = {
        "url": start,
        "max_pages": PAGES,
        "max_depth": hops,
        "sitemap": "skip",
        "formats": ["markdown"],
        "only_main_content": True,
    }
    v2 = {
        "url": start,
        "limit": PAGES,
        "maxDiscoveryDepth": hops,
        "sitemap": "skip",
        "crawlEntireDomain": True,  # as the native crawl: the site, not the start page's folder
        "scrapeOptions": {"formats": ["markdown"]},
    }
    crawl(proc.base, key, "/crawl", {**native, "max_pages": 10})  # warm-up
    turns = alternating(
        ROUNDS,
        [
            ("native", lambda: crawl(proc.base, key, "/crawl", native)),
            ("v2", lambda: crawl(proc.base, key, "/v2/crawl", v2)),
        ],
        "crawl",
    )
    each = [
        round(v["seconds"] / n["seconds"], 3)
        for v, n in zip(turns["v2"], turns["native"], strict=True)
        if n["seconds"]
    ]
    return {
        "pages": PAGES,
        "native_seconds": statistics.median(t["seconds"] for t in turns["native"]),
        "v2_seconds": statistics.median(t["seconds"] for t in turns["v2"]),
        "x_native": statistics.median(each) if each else None,
        "x_native_turns": each,
        "failed": sum(t["failed"] for t in turns["native"] + turns["v2"]),
        "bar": CRAWL_BAR,
    }


def run() -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="scrapespy-bench-firecrawl-"))
    write_pages(work / "site")
    start_path = write_site(work / "crawl", PAGES)
    site, target = serve(work / "site")
    crawl_site, crawl_target = serve(work / "crawl")
    results: dict[str, Any] = {
        "machine": {"cores": os.cpu_count()},
        "site": server_name(),
        "rounds": ROUNDS,
    }
    cleanups: list[Callable[[], Any]] = [partial(stop, crawl_site)]
    try:
        (work / "sqlite").mkdir()
        proc, key = scrapespy(f"sqlite:///{work / 'firecrawl.db'}", work / "sqlite")
        cleanups.append(proc.stop)
        results["scrape"] = scrape_figure(proc, key, target)
        results["crawl"] = crawl_figure(proc, key, f"{crawl_target}{start_path}")
        proc.stop()
    finally:
        tear_down(cleanups, site, work)
    return results


def report(results: dict[str, Any]) -> list[str]:
    rows = ["\n" + row("issue 34", "figure", "bar", "verdict")]
    scrape, crawled = results["scrape"], results["crawl"]
    x = scrape["x_native"]
    rows.append(
        row(
            "POST /v2/scrape, x native POST /scrape (static c=32)",
            "-" if x is None else f"{x:.2f}x",
            f">= {scrape['bar']}x",
            verdict(None if x is None else x >= scrape["bar"], scrape["failed"]),
        )
    )
    rows.append(
        f"  {scrape['v2_rps']:.0f} requests/s on /v2, {scrape['native_rps']:.0f} native; service "
        f"CPU {scrape['v2_cpu_s_per_1000']:.1f} s and {scrape['native_cpu_s_per_1000']:.1f} s per "
        "1,000"
    )
    x = crawled["x_native"]
    rows.append(
        row(
            f"{crawled['pages']}-page crawl by /v2/crawl, x native (time)",
            "-" if x is None else f"{x:.2f}x",
            f"<= {crawled['bar']}x",
            verdict(None if x is None else x <= crawled["bar"], crawled["failed"]),
        )
    )
    rows.append(
        f"  {crawled['v2_seconds']:.2f} s by /v2/crawl, {crawled['native_seconds']:.2f} s native"
    )
    return rows


def main() -> int:
    print(f"firecrawl: /v2 against native, {ROUNDS} rounds", flush=True)
    results = run()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(report(results)))
    print(f"\nwritten: {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
