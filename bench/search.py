"""Issue 46's figure in ``make bench``: a search that scrapes its results, against one scrape.

    python -m bench.search     (BENCH_SEARCH_ROUNDS, default 15; BENCH_SEARCH_JSON names the file)

A search of ``RESULTS`` (5) web results, each scraped static to markdown (``POST /search`` with
``scrape: {"formats": ["markdown"]}``), on a SearXNG stand-in (harness/search_backends.py) that
takes ``BACKEND_DELAY`` seconds to answer, as an engine does, with the service's answer cache
off so that every search asks it. The results are the benchmark's article pages (about 33 KB,
harness/pages.py) served ``PAGE_DELAY`` seconds late, as a remote site answers: on pages that
answer in a millisecond from the same two cores, five scrapes at once would measure the cores'
CPU, not whether the scrapes overlap, which is what the figure is about.

Each round times, in turn: each of the five pages scraped alone by ``POST /scrape`` (the slowest
is kept), the five sent at once by five callers (a control: what the service's concurrency gives
without search), the backend asked directly (its own time), and the whole search. The figure is the
median of the searches over the median of (slowest scrape + backend) of the same rounds; the
bar is 1.2x. Done one after the other, the five scrapes would take five times a scrape.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.contenders import scrapespy
from bench.job_client import row, verdict
from bench.site import serve, tear_down
from harness.pages import write_pages
from harness.search_backends import Hit, SearchStandIn

ROOT = Path(__file__).resolve().parent.parent
RESULTS_FILE = Path(os.environ.get("BENCH_SEARCH_JSON", ROOT / "bench" / "results" / "search.json"))
ROUNDS = int(os.environ.get("BENCH_SEARCH_ROUNDS", "15"))
RESULTS = 5
PAGE_DELAY = float(os.environ.get("BENCH_SEARCH_PAGE_DELAY", "0.2"))
BACKEND_DELAY = float(os.environ.get("BENCH_SEARCH_BACKEND_DELAY", "0.1"))
BAR = 1.2


def timed_post(base: str, path: str, key: str, body: dict[str, Any]) -> tuple[float, Any]:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-API-Key": key}
    request = urllib.request.Request(base + path, data=data, headers=headers, method="POST")
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.loads(reply.read())
    return time.perf_counter() - started, answer


def backend_time(backend: SearchStandIn, query: str) -> float:
    url = f"{backend.base}/search?format=json&categories=general&pageno=1&q={query}"
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as reply:
        reply.read()
    return time.perf_counter() - started


def one_round(
    proc: Any, key: str, backend: SearchStandIn, urls: list[str], n: int
) -> dict[str, Any]:
    singles = []
    failed = 0
    for url in urls:
        seconds, answer = timed_post(
            proc.base, "/scrape", key, {"url": url, "formats": ["markdown"]}
        )
        singles.append(seconds)
        failed += not answer.get("success")
    # the control: the same five scrapes sent at once by five callers, as the search sends them
    with ThreadPoolExecutor(len(urls)) as pool:
        started = time.perf_counter()
        list(
            pool.map(
                lambda url: timed_post(
                    proc.base, "/scrape", key, {"url": url, "formats": ["markdown"]}
                ),
                urls,
            )
        )
        together = time.perf_counter() - started
    query = f"harbour-tides-{n}"
    own = backend_time(backend, query)
    body = {"query": query, "limit": RESULTS, "scrape": {"formats": ["markdown"]}}
    searched, answer = timed_post(proc.base, "/search", key, body)
    pages = [item.get("page") or {} for item in answer.get("web", [])]
    failed += RESULTS - sum(1 for page in pages if page.get("success"))
    return {
        "slowest_scrape_s": round(max(singles), 4),
        "backend_s": round(own, 4),
        "five_scrapes_at_once_s": round(together, 4),
        "search_s": round(searched, 4),
        "credits_charged": answer.get("credits_charged"),
        "failed": failed,
    }


def run() -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="scrapespy-bench-search-"))
    names = write_pages(work / "site")
    site, target = serve(work / "site", PAGE_DELAY)
    # an engine has more results than asked: twenty, of which the search keeps the first five
    hits = [Hit(f"{target}/{name}", f"Article {i}") for i, name in enumerate(names)]
    urls = [hit.url for hit in hits[:RESULTS]]
    backend = SearchStandIn("searxng", {"web": hits})
    backend.delay, backend.always_late = BACKEND_DELAY, True
    backend.start()
    cleanups: list[Any] = [backend.stop]
    try:
        (work / "sqlite").mkdir()
        env = {**backend.env(), "SCRAPESPY_SEARCH_CACHE_SECONDS": "0"}
        proc, key = scrapespy(f"sqlite:///{work / 'search.db'}", work / "sqlite", extra_env=env)
        cleanups.append(proc.stop)
        one_round(proc, key, backend, urls, -1)  # warm-up: robots.txt, connections
        rounds = []
        for n in range(ROUNDS):
            figures = one_round(proc, key, backend, urls, n)
            print(f"  search round {n + 1}: {figures}", flush=True)
            rounds.append(figures)
    finally:
        tear_down(cleanups, site, work)
    search_p50 = statistics.median(r["search_s"] for r in rounds)
    reference_p50 = statistics.median(r["slowest_scrape_s"] + r["backend_s"] for r in rounds)
    return {
        "machine": {"cores": os.cpu_count()},
        "rounds": ROUNDS,
        "results": RESULTS,
        "page_delay_s": PAGE_DELAY,
        "backend_delay_s": BACKEND_DELAY,
        "search_p50_s": round(search_p50, 4),
        "slowest_scrape_plus_backend_p50_s": round(reference_p50, 4),
        "slowest_scrape_p50_s": round(statistics.median(r["slowest_scrape_s"] for r in rounds), 4),
        "backend_p50_s": round(statistics.median(r["backend_s"] for r in rounds), 4),
        "five_scrapes_at_once_plus_backend_p50_s": round(
            statistics.median(r["five_scrapes_at_once_s"] + r["backend_s"] for r in rounds), 4
        ),
        "x_reference": round(search_p50 / reference_p50, 3),
        "bar": BAR,
        "failed": sum(r["failed"] for r in rounds),
        "turns": rounds,
    }


def report(results: dict[str, Any]) -> list[str]:
    x = results["x_reference"]
    return [
        "\n" + row("issue 46", "figure", "bar", "verdict"),
        row(
            f"search + {results['results']} scrapes p50, x (slowest scrape + backend)",
            f"{x:.2f}x",
            f"<= {results['bar']}x",
            verdict(x <= results["bar"], results["failed"]),
        ),
        f"  search {results['search_p50_s'] * 1000:.0f} ms; slowest single scrape "
        f"{results['slowest_scrape_p50_s'] * 1000:.0f} ms + backend "
        f"{results['backend_p50_s'] * 1000:.0f} ms (pages {results['page_delay_s'] * 1000:.0f} ms "
        "late); the five sent at once by five callers, plus the backend: "
        f"{results['five_scrapes_at_once_plus_backend_p50_s'] * 1000:.0f} ms",
    ]


def main() -> int:
    print(f"search: {RESULTS} results scraped in one search, {ROUNDS} rounds", flush=True)
    results = run()
    RESULTS_FILE.parent.mkdir(exist_ok=True)
    RESULTS_FILE.write_text(json.dumps(results, indent=2) + "\n")
    print("\n".join(report(results)))
    print(f"\nwritten: {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
