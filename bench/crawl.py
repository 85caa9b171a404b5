"""Issue 23's crawl figure: a ``BENCH_CRAWL_PAGES``-page crawl (default 10,000) of a local site by
``POST /crawl`` against a raw Scrapy ``CrawlSpider`` at the same concurrency.

    python -m bench.crawl         (only this part; bench.jobs runs it too, BENCH_CRAWL=0 skips it)

- The site (bench/crawl_site.py) is written to a temporary folder and served by nginx through
  bench.site, as bench/jobs.py's is: article pages of about 11 KB, a tree from ``/index.html``
  (every page within 5 hops at 10,000 pages) with cross links, repeated links and external links
  that neither crawler follows, and a robots.txt that allows them.
- The baseline (bench/crawlspider.py) runs in its own process with this venv's python:
  ``Rule(LinkExtractor(allow_domains=[host]), callback=..., follow=True)``, the service's own
  extraction inline in the callback, ``CONCURRENT_REQUESTS`` = ``..._PER_DOMAIN`` = C, no delay,
  robots.txt obeyed, closed at ``BENCH_CRAWL_PAGES`` items; timed from its first request to its
  last item.
- The service: a fresh instance with ``SCRAPESPY_CRAWL_PAGES_PER_SITE`` = C and
  ``SCRAPESPY_JOB_PAGES_IN_FLIGHT`` = max(C, 8), sent ``POST /crawl`` from the index with
  ``max_pages`` = the site's size, a ``max_depth`` that reaches every page, and
  ``"sitemap": "skip"``; timed from the POST to the job's ``finished_at``, and counted only when
  the job completed with every page done. A thread samples the RSS of the service's process tree
  (its extraction workers included) every second; the figures are the RSS when a quarter of the
  pages had finished and when the last had, and the growth between them (flat: <= 10%).
- C is ``BENCH_CRAWL_CONCURRENCY``, default 16. The service's default per-site concurrency is 2,
  at which both crawlers wait on latency and the ratio says little; 16 is what a caller crawling
  its own site would raise it to.
- On SQLite and on PostgreSQL (a throwaway database), the baseline running next to each, first
  on SQLite and second on PostgreSQL, so that the machine's drift does not favour one side. The
  figure is service pages per second over CrawlSpider pages per second (bar >= 0.8x).

Every run is bounded (``BENCH_CRAWL_TIMEOUT`` seconds, default 1800) and targets only 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from bench.contenders import postgres_database, scrapespy
from bench.crawl_site import depth, write_site
from bench.job_client import FINISHED, Connection, row, verdict
from bench.site import serve, server_name, tear_down
from harness.procinfo import cpu_seconds, rss_mb

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("BENCH_JOBS_JSON", ROOT / "bench" / "results" / "jobs.json"))
ENABLED = os.environ.get("BENCH_CRAWL", "1") != "0"
PAGES = int(os.environ.get("BENCH_CRAWL_PAGES", "10000"))
CONCURRENCY = int(os.environ.get("BENCH_CRAWL_CONCURRENCY", "16"))
TIMEOUT = float(os.environ.get("BENCH_CRAWL_TIMEOUT", "1800"))
POLL_SECONDS = 1.0
CRAWL_BAR = 0.8
FLAT_PERCENT = 10.0


class RssSampler(threading.Thread):
    """The RSS of ``pid`` and its python descendants, once a second, with the wall clock."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.samples.append((time.time(), rss_mb(self.pid, children="python")))
            self.stopping.wait(1.0)

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)

    def at(self, when: float) -> float | None:
        """The first sample taken at or after ``when`` (else the last one)."""
        for taken, mb in self.samples:
            if taken >= when:
                return mb
        return self.samples[-1][1] if self.samples else None


def crawlspider(start: str, pages: int, concurrency: int) -> dict[str, Any]:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.crawlspider", start, str(pages), str(concurrency)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT:g} s", "pages": 0, "seconds": 0}
    lines = done.stdout.strip().splitlines()
    if not lines:
        return {"error": done.stderr[-500:], "pages": 0, "seconds": 0}
    return dict(json.loads(lines[-1]))


async def _service_crawl(base: str, key: str, start: str, pages: int) -> dict[str, Any]:

    conn = Connection(base, key)
    progress: list[tuple[float, int]] = []
    body = {
        "url": start,
        "max_pages": pages,
        "max_depth": depth(pages - 1) + 5,  # cross links only shorten the way to a page
        "sitemap": "skip",
    }
    try:
        started = time.time()
        status, answer = await conn.call("POST", "/crawl", body)
        if status != 202:
            raise RuntimeError(f"POST /crawl answered {status}: {answer[:300]!r}")
        job_id = json.loads(answer)["id"]
        deadline = time.monotonic() + TIMEOUT
        while True:
            status, answer = await conn.call("GET", f"/jobs/{job_id}?limit=1")
            found = json.loads(answer)
            counts = found.get("counts", {})
            finished = sum(counts.get(name, 0) for name in ("done", "failed", "blocked"))
            progress.append((time.time(), finished))
            if status != 200 or found["status"] in FINISHED:
                break
            if time.monotonic() > deadline:
                await conn.call("DELETE", f"/jobs/{job_id}")
                found["status"] = f"timed out after {TIMEOUT:g} s (cancelled)"
                break
            await asyncio.sleep(POLL_SECONDS)
    finally:
        conn.close()
    end = found.get("finished_at")
    ended = datetime.fromisoformat(end).timestamp() if end else time.time()
    return {
        "pages": counts.get("done", 0),
        "seconds": round(ended - started, 3),
        "status": found.get("status"),
        "counts": counts,
        "started": started,
        "ended": ended,
        "progress": progress,
    }


def service_crawl(database_url: str, work: Path, start: str, pages: int, c: int) -> dict[str, Any]:
    """One fresh instance's crawl of the site, with its RSS over the crawl."""
    env = {
        "SCRAPESPY_CRAWL_PAGES_PER_SITE": str(c),
        "SCRAPESPY_JOB_PAGES_IN_FLIGHT": str(max(c, 8)),
    }
    proc, key = scrapespy(database_url, work, extra_env=env)
    pid = proc.process.pid
    sampler = RssSampler(pid)
    try:
        cpu_before = cpu_seconds(pid)
        sampler.start()
        run = asyncio.run(
            asyncio.wait_for(_service_crawl(proc.base, key, start, pages), TIMEOUT + 60)
        )
        cpu = cpu_seconds(pid) - cpu_before
    finally:
        sampler.stop()
        proc.stop()
    progress = run.pop("progress")
    started, ended = run.pop("started"), run.pop("ended")
    quarter = next((t for t, n in progress if n >= pages / 4), ended)
    rss_25, rss_100 = sampler.at(quarter), sampler.at(ended)
    growth = None
    if rss_25 and rss_100:
        growth = round((rss_100 - rss_25) / rss_25 * 100, 1)
    during = [mb for t, mb in sampler.samples if started <= t <= ended + 1]
    # pages per second in each quarter of the pages (from the polls): a crawl whose cost per
    # page grows with its size slows down as it goes
    marks = [started]
    marks += [next((t for t, n in progress if n >= pages * q / 4), ended) for q in (1, 2, 3)]
    marks.append(ended)
    quarters = [round(pages / 4 / (b - a), 1) if b > a else None for a, b in pairwise(marks)]
    run.update(
        {
            "pages_per_s": round(run["pages"] / run["seconds"], 1) if run["seconds"] else None,
            "cpu_s_per_1000": round(cpu / max(run["pages"], 1) * 1000, 2),
            "quarters_pages_per_s": quarters,
            "rss_mb_at_25": None if rss_25 is None else round(rss_25, 1),
            "rss_mb_at_100": None if rss_100 is None else round(rss_100, 1),
            "rss_mb_peak": round(max(during), 1) if during else None,
            "rss_growth_percent": growth,
            "rss_flat": None if growth is None else growth <= FLAT_PERCENT,
            "completed": run["status"] == "completed" and run["pages"] == pages,
        }
    )
    return run


def backend_figure(
    label: str, database_url: str, work: Path, start: str, spider_first: bool
) -> dict[str, Any]:
    turns: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("crawlspider", lambda: crawlspider(start, PAGES, CONCURRENCY)),
        ("service", lambda: service_crawl(database_url, work, start, PAGES, CONCURRENCY)),
    ]
    figures: dict[str, Any] = {}
    for name, run in turns if spider_first else turns[::-1]:
        figures[name] = run()
        print(f"  crawl {label:<10} {name:<11}: {figures[name]}", flush=True)
    spider, service = figures["crawlspider"], figures["service"]
    measured = (
        service["completed"]
        and spider.get("pages") == PAGES
        and bool(spider.get("seconds"))
        and bool(service["seconds"])
    )
    figures["x_crawlspider"] = (
        round((service["pages"] / service["seconds"]) / (spider["pages"] / spider["seconds"]), 3)
        if measured
        else None
    )
    return figures


def run() -> dict[str, Any]:
    """The crawl figure: the ``crawl`` entry of bench/jobs.py's results."""
    if not ENABLED:
        return {"measured": False, "why": "BENCH_CRAWL=0", "bar": CRAWL_BAR}
    work = Path(tempfile.mkdtemp(prefix="scrapespy-bench-crawl-"))
    index = write_site(work / "site", PAGES)
    site, base = serve(work / "site")
    start = f"{base}{index}"
    results: dict[str, Any] = {
        "measured": True,
        "pages": PAGES,
        "concurrency": CONCURRENCY,
        "bar": CRAWL_BAR,
        "flat_percent": FLAT_PERCENT,
        "site": server_name(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "backends": {},
    }
    cleanups: list[Callable[[], Any]] = []
    try:
        backends: dict[str, str] = {"sqlite": f"sqlite:///{work / 'crawl.db'}"}
        pg = postgres_database()
        if pg is not None:
            backends["postgresql"] = pg[0]
            cleanups.append(pg[1])
        for turn, (backend, url) in enumerate(backends.items()):
            (work / backend).mkdir()
            results["backends"][backend] = backend_figure(
                backend, url, work / backend, start, spider_first=turn % 2 == 0
            )
    finally:
        tear_down(cleanups, site, work)
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return results


def report(crawl: dict[str, Any]) -> list[str]:
    """The crawl's rows in bench/jobs.py's table."""

    title = f"{crawl.get('pages', 10_000):,}-page crawl, x CrawlSpider"
    if not crawl["measured"]:
        return [row(title, "-", f">= {crawl['bar']}x", f"NOT MEASURED: {crawl['why']}")]
    rows = []
    for backend, figures in crawl["backends"].items():
        x, service, spider = figures["x_crawlspider"], figures["service"], figures["crawlspider"]
        failed = 0 if x is not None else max(crawl["pages"] - service["pages"], 1)
        rows.append(
            row(
                f"{title} c={crawl['concurrency']} ({backend})",
                "-" if x is None else f"{x:.2f}x",
                f">= {crawl['bar']}x",
                verdict(None if x is None else x >= crawl["bar"], failed),
            )
        )
        growth = service["rss_growth_percent"]
        flat = "-" if growth is None else ("flat" if service["rss_flat"] else "NOT flat")
        rows.append(
            f"  {backend}: {service.get('pages_per_s')} pages/s by POST /crawl "
            f"({service['status']}, {service['pages']} done), {spider.get('pages_per_s')} by the "
            "CrawlSpider; the service's by quarter of the pages: "
            f"{service['quarters_pages_per_s']}"
        )
        rows.append(
            f"  {backend}: service RSS {service['rss_mb_at_25']} MB at 25% of the crawl, "
            f"{service['rss_mb_at_100']} MB at 100%: {growth}%, {flat} (flat: <= "
            f"{crawl['flat_percent']:g}%); CPU {service['cpu_s_per_1000']} s per 1,000 pages, "
            f"the CrawlSpider's {spider.get('cpu_s_per_1000')} s"
        )
    rows.append(
        f"  (the crawl's run: {crawl['when']}, {crawl['site']} site, load average "
        f"{crawl['load_average_before']} before, {crawl.get('load_average_after')} after)"
    )
    return rows


def main() -> int:
    print(f"crawl: {PAGES} pages at c={CONCURRENCY}", flush=True)
    crawl = run()
    # the crawl's entry of the jobs results, the rest of the file (an earlier run's) kept
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["crawl"] = crawl
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(report(crawl)))
    print(f"\nwritten: {RESULTS} (its 'crawl' entry)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
