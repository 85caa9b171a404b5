"""Issue 23's figures in ``make bench``: jobs (``POST /batch``) against ``POST /scrape``.

    python -m bench.jobs          (bench/run.py calls it last; BENCH_JOBS=0 leaves it out)

- **Batch against scrapes**: the same ``BENCH_JOBS_URLS`` URLs (default 1,000, distinct by their
  query string, over the 20 pages of the benchmark's site) as one ``POST /batch``, timed from the
  POST to the poll that sees the job finished, and as ``POST /scrape`` calls at concurrency 32,
  on the same instance, in rounds that alternate which goes first (``BENCH_JOBS_ROUNDS``, default
  3), on SQLite and on PostgreSQL. The figure is the median of the per-round ratios of pages per
  second (bar >= 0.9x).
- **Two instances on one PostgreSQL**: the same batch, sent to one instance, with a second
  instance on the same database (it takes the job's pages through the queue) and without, in
  alternating rounds; the figure is the median of the per-round ratios of the time to finish
  (bar <= 0.65x). The second instance is started afresh for each of its turns, and warmed up.
  The bar asks for a machine with cores to spare; on two cores both instances share them, so
  the same is measured again on a site that answers each page ``BENCH_JOBS_LATE_SECONDS``
  (default 0.2) late: there an instance's pace is its pages in flight, not the CPU, and a
  second instance adds its own (``BENCH_JOBS_LATE_SECONDS=0`` leaves it out).
- **A 10,000-page crawl against a raw Scrapy CrawlSpider**: bench/crawl.py, on a site, instances
  and databases of its own (``BENCH_CRAWL=0`` leaves it out; ``python -m bench.crawl`` runs it
  alone); the ratio of pages per second at the same concurrency (bar >= 0.8x), and the service's
  RSS over the crawl.

The instances run with ``SCRAPESPY_JOB_PAGES_IN_FLIGHT`` = ``BENCH_JOB_PAGES_IN_FLIGHT``
(default 32): a job's pages in flight are its concurrency, and the scrapes it is measured against
run at 32. The service's default (8) keeps jobs from taking the whole engine from ``POST /scrape``
callers; it would measure a batch at a quarter of the scrapes' concurrency.

The client is a minimal HTTP/1.1 keep-alive client on asyncio streams, in this process: a batch
costs it one POST and a poll every ``POLL_SECONDS`` (``?limit=1``, so that the poll costs the
service little), the scrapes cost it 1,000 requests. A batch's time runs from its POST to the
job's ``finished_at`` (the same machine's clock), not to the poll that saw it. Every run is
bounded in time (``RUN_TIMEOUT``) and targets only 127.0.0.1. Figures: bench/results/jobs.json
(``BENCH_JOBS_JSON`` names another file).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench.contenders import postgres_database, scrapespy
from bench.job_client import FINISHED, Connection, row, verdict
from bench.site import serve, server_name, stop, tear_down
from harness.pages import write_pages
from harness.procinfo import cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("BENCH_JOBS_JSON", ROOT / "bench" / "results" / "jobs.json"))
ENABLED = os.environ.get("BENCH_JOBS", "1") != "0"
URLS = int(os.environ.get("BENCH_JOBS_URLS", "1000"))
ROUNDS = int(os.environ.get("BENCH_JOBS_ROUNDS", "3"))
IN_FLIGHT = os.environ.get("BENCH_JOB_PAGES_IN_FLIGHT", "32")
CONCURRENCY = 32
POLL_SECONDS = 0.5
RUN_TIMEOUT = 300.0
WARM_UP_URLS = 64
BATCH_BAR = 0.9
TWO_INSTANCES_BAR = 0.65
# the second two-instance figure's site answers each page this late (bench.site's DELAY)
LATE_SECONDS = float(os.environ.get("BENCH_JOBS_LATE_SECONDS", "0.2"))


async def _scrapes(base: str, key: str, urls: list[str], concurrency: int) -> dict[str, Any]:
    todo = iter(urls)
    failed = 0

    async def worker() -> None:
        nonlocal failed
        conn = Connection(base, key)
        try:
            for url in todo:
                status, body = await conn.call("POST", "/scrape", {"url": url})
                if status != 200 or b'"success":true' not in body:
                    failed += 1
        finally:
            conn.close()

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.monotonic() - started
    return {"pages": len(urls), "seconds": round(seconds, 3), "failed": failed}


async def _batch(base: str, key: str, urls: list[str]) -> dict[str, Any]:
    conn = Connection(base, key)
    try:
        started = time.time()
        status, body = await conn.call("POST", "/batch", {"urls": urls})
        if status != 202:
            raise RuntimeError(f"POST /batch answered {status}: {body[:300]!r}")
        job_id = json.loads(body)["id"]
        while True:
            status, body = await conn.call("GET", f"/jobs/{job_id}?limit=1")
            found = json.loads(body)
            if status != 200 or found["status"] in FINISHED:
                break
            await asyncio.sleep(POLL_SECONDS)
    finally:
        conn.close()
    # the job's own end, on the same clock: the figure does not depend on the polls' pace
    end = found.get("finished_at")
    seconds = (datetime.fromisoformat(end) if end else datetime.now(UTC)).timestamp() - started
    counts = found.get("counts", {})
    return {
        "pages": len(urls),
        "seconds": round(seconds, 3),
        "status": found.get("status"),
        "failed": len(urls) - counts.get("done", 0),
        "counts": counts,
    }


def scrapes(base: str, key: str, urls: list[str], concurrency: int = CONCURRENCY) -> dict:
    return asyncio.run(asyncio.wait_for(_scrapes(base, key, urls, concurrency), RUN_TIMEOUT))


def batch(base: str, key: str, urls: list[str]) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(_batch(base, key, urls), RUN_TIMEOUT))


# the figures ------------------------------------------------------------------------------------


def batch_urls(target: str, count: int, tag: str) -> list[str]:
    """``count`` distinct URLs over the site's 20 pages (nginx ignores the query string)."""
    return [f"{target}/article-{n % 20}.html?{tag}={n}" for n in range(count)]


def rate(run: dict[str, Any]) -> float:
    return float(run["pages"] / run["seconds"]) if run["seconds"] else 0.0


def with_cpu(pids: list[int], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run``'s figures, with the CPU seconds the instances (and their extraction workers)
    spent per 1,000 pages: a batch slower than its scrapes is either waiting or working more."""
    before = sum(cpu_seconds(pid) for pid in pids)
    figures = run()
    spent = sum(cpu_seconds(pid) for pid in pids) - before
    figures["cpu_s_per_1000"] = round(spent / figures["pages"] * 1000, 2)
    return figures


def batch_against_scrapes(base: str, key: str, target: str, label: str, pid: int) -> dict[str, Any]:
    """One backend's rounds: a batch and the same URLs as scrapes, the first alternating."""
    scrapes(base, key, batch_urls(target, WARM_UP_URLS, "warm"))
    batch(base, key, batch_urls(target, WARM_UP_URLS, "warmb"))
    turns: dict[str, list[dict[str, Any]]] = {"batch": [], "scrape": []}
    for turn in range(ROUNDS):
        urls = batch_urls(target, URLS, f"r{turn}")
        pair: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("batch", partial(batch, base, key, urls)),
            ("scrape", partial(scrapes, base, key, urls)),
        ]
        for name, run in pair if turn % 2 == 0 else pair[::-1]:
            figures = with_cpu([pid], run)
            figures["pages_per_s"] = round(rate(figures), 1)
            turns[name].append(figures)
            print(f"  jobs {label:<10} {name:<7} round {turn + 1}: {figures}", flush=True)
    each = [
        round(rate(b) / rate(s), 3)
        for b, s in zip(turns["batch"], turns["scrape"], strict=True)
        if rate(s)
    ]
    return {
        "urls": URLS,
        "scrape_concurrency": CONCURRENCY,
        "batch_pages_per_s": statistics.median(rate(t) for t in turns["batch"]),
        "scrape_pages_per_s": statistics.median(rate(t) for t in turns["scrape"]),
        "x_scrape": statistics.median(each) if each else None,
        "x_scrape_turns": each,
        "batch_cpu_s_per_1000": statistics.median(t["cpu_s_per_1000"] for t in turns["batch"]),
        "scrape_cpu_s_per_1000": statistics.median(t["cpu_s_per_1000"] for t in turns["scrape"]),
        "failed": sum(t["failed"] for t in turns["batch"] + turns["scrape"]),
        "turns": turns,
        "bar": BATCH_BAR,
    }


def two_instances(target: str, work: Path, name: str = "pg2") -> dict[str, Any] | None:
    """One instance against two on one PostgreSQL database, finishing the same batch."""
    pg = postgres_database()
    if pg is None:
        return None
    url, drop = pg
    env = {"SCRAPESPY_JOB_PAGES_IN_FLIGHT": IN_FLIGHT}
    (work / f"{name}-a").mkdir()
    first, key = scrapespy(url, work / f"{name}-a", extra_env=env)
    try:
        batch(first.base, key, batch_urls(target, WARM_UP_URLS, "warm"))
        turns: dict[str, list[dict[str, Any]]] = {"one": [], "two": []}
        for turn in range(ROUNDS):
            order = ["one", "two"] if turn % 2 == 0 else ["two", "one"]
            for count in order:
                second = None
                if count == "two":
                    (work / f"{name}-b{turn}").mkdir()
                    second, _ = scrapespy(
                        url, work / f"{name}-b{turn}", extra_env=env, credits=None
                    )
                    # its first pages pay for robots.txt and its connections, as the first's did
                    batch(first.base, key, batch_urls(target, WARM_UP_URLS, f"warm{turn}"))
                urls = batch_urls(target, URLS, f"i{count}{turn}")
                pids = [p.process.pid for p in (first, second) if p is not None]
                try:
                    figures = with_cpu(pids, partial(batch, first.base, key, urls))
                finally:
                    if second is not None:
                        second.stop()
                turns[count].append(figures)
                print(f"  jobs {name} instances={count:<4} round {turn + 1}: {figures}", flush=True)
    finally:
        first.stop()
        drop()
    each = [
        round(t["seconds"] / o["seconds"], 3)
        for t, o in zip(turns["two"], turns["one"], strict=True)
        if o["seconds"]
    ]
    return {
        "urls": URLS,
        "one_seconds": statistics.median(t["seconds"] for t in turns["one"]),
        "two_seconds": statistics.median(t["seconds"] for t in turns["two"]),
        "x_one": statistics.median(each) if each else None,
        "x_one_turns": each,
        "failed": sum(t["failed"] for t in turns["one"] + turns["two"]),
        "turns": turns,
        "bar": TWO_INSTANCES_BAR,
    }


def crawl_figure() -> dict[str, Any]:
    """Issue 23's crawl figure (bench/crawl.py): a 10,000-page crawl of a local site, pages per
    second against a raw Scrapy CrawlSpider at the same concurrency, and RSS over the crawl."""
    from bench import crawl

    return crawl.run()


def run() -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="scrapespy-bench-jobs-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    results: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
        },
        "site": server_name(),
        "job_pages_in_flight": int(IN_FLIGHT),
        "rounds": ROUNDS,
        "batch_x_scrape": {},
    }
    cleanups: list[Callable[[], Any]] = []
    try:
        backends = {"sqlite": (f"sqlite:///{work / 'jobs.db'}", None)}
        pg = postgres_database()
        if pg is not None:
            backends["postgresql"] = pg
        for backend, (url, drop) in backends.items():
            if drop is not None:
                cleanups.append(drop)
            (work / backend).mkdir()
            env = {"SCRAPESPY_JOB_PAGES_IN_FLIGHT": IN_FLIGHT}
            proc, key = scrapespy(url, work / backend, extra_env=env)
            cleanups.append(proc.stop)
            results["batch_x_scrape"][backend] = batch_against_scrapes(
                proc.base, key, target, backend, proc.process.pid
            )
            proc.stop()
        results["two_instances"] = two_instances(target, work)
        if LATE_SECONDS:
            late_site, late_target = serve(work / "site", LATE_SECONDS)
            cleanups.append(partial(stop, late_site))
            late = two_instances(late_target, work, "late")
            if late is not None:
                late["page_delay_seconds"] = LATE_SECONDS
            results["two_instances_late"] = late
        results["crawl"] = crawl_figure()
    finally:
        tear_down(cleanups, site, work)
    results["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return results


# the table --------------------------------------------------------------------------------------


def two_rows(name: str, two: dict[str, Any], why: str = "") -> list[str]:
    """A two-instance figure's row, and its times."""
    x = two["x_one"]
    figure = "-" if x is None else f"{x:.2f}x"
    said = verdict(None if x is None else x <= two["bar"], two["failed"])
    return [
        row(name, figure, f"<= {two['bar']}x", said),
        f"  {two['one_seconds']:.1f} s with one instance, {two['two_seconds']:.1f} s with two{why}",
    ]


def report(results: dict[str, Any]) -> list[str]:
    machine = results["machine"]
    rows = [
        "\n" + row("issue 23", "figure", "bar", "verdict"),
    ]
    for backend, figures in results["batch_x_scrape"].items():
        x = figures["x_scrape"]
        rows.append(
            row(
                f"1,000-URL batch, x POST /scrape c=32 ({backend})",
                "-" if x is None else f"{x:.2f}x",
                f">= {figures['bar']}x",
                verdict(None if x is None else x >= figures["bar"], figures["failed"]),
            )
        )
    for backend, figures in results["batch_x_scrape"].items():
        rows.append(
            f"  {backend}: {figures['batch_pages_per_s']:.0f} pages/s as a batch, "
            f"{figures['scrape_pages_per_s']:.0f} as scrapes; service CPU "
            f"{figures['batch_cpu_s_per_1000']:.1f} s and {figures['scrape_cpu_s_per_1000']:.1f} s "
            "per 1,000 pages"
        )
    two = results.get("two_instances")
    if two is None:
        rows.append(row("two instances on one PostgreSQL, x one", "skipped", "", "no PostgreSQL"))
    else:
        rows += two_rows("two instances on one PostgreSQL, x one", two)
    late = results.get("two_instances_late")
    if late is not None:
        name = f"  the same, each page {late['page_delay_seconds'] * 1000:.0f} ms late"
        rows += two_rows(name, late, " (the pace set by pages in flight, not by the cores)")
    from bench import crawl

    rows += crawl.report(results["crawl"])
    rows.append(
        f"(on {machine['cores']} cores; load average {machine['load_average_before']} before, "
        f"{machine['load_average_after']} after; job pages in flight "
        f"{results['job_pages_in_flight']})"
    )
    return rows


def main() -> int:
    print(f"jobs: {URLS}-URL batches, {ROUNDS} rounds, pages in flight {IN_FLIGHT}", flush=True)
    results = run()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(report(results)))
    print(f"\nwritten: {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
