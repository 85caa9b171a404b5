"""Issue 37's js contenders: scrapespy's ``js`` engine against plain Playwright and against
scrapy-playwright in a bare Scrapy crawler, on the same pages and the same Chromium binary.

    python -m bench.js_contenders [--json PATH]

The pages are the 20 ``js-article-N.html`` of harness/pages.py (about 33 KB, each appending a
paragraph to its ``<article>`` on ``load``), served by bench/site.py (nginx when installed, else
Twisted). Each contender runs in a process of its own with one persistent browser and isolates
every page in a browser context of its own:

- ``scrapespy``: ``scrapespy serve`` (harness.service.ServiceProcess, SQLite, a funded key,
  private targets allowed, ``SCRAPESPY_MAX_PAGES=4``) sent ``POST /scrape`` with ``{"engine":
  "js", "formats": ["markdown"], "only_main_content": true}`` by a light client in this process:
  one thread a connection, each on a keep-alive ``http.client`` connection, one request at a
  time (wrk is not needed; at some 15 pages a second the client's CPU is small, and it is not
  counted in the service's).
- ``playwright``: plain Playwright (python, async): a persistent browser, for each page
  ``new_context()``, ``new_page()``, ``goto(wait_until="load")``, ``content()``,
  ``context.close()``; c workers in one asyncio loop.
- ``scrapy_playwright``: a bare persistent Scrapy crawler (asyncio reactor, scrapy-playwright's
  download handler, no robots.txt, no retries) kept at c requests in flight, each request in a
  context named for it alone (``playwright_context``, ``playwright_include_page``) that its
  callback closes (``await page.context.close()``), as scrapy-playwright's README says.

Both browsers the bench launches itself get scrapespy's launch options
(service.browser.launch.chromium_launch_options: its headless mode and switches). The binary is
``BENCH_JS_CHROMIUM``, by default the service's own default (settings.default_chromium_path():
Debian's chromium-headless-shell when installed, else /usr/bin/chromium), so that scrapespy is
measured as it runs and every contender shares its binary.

Every page a contender reads is checked for the ``inserted on load`` paragraph (the element
``<p id="loaded">`` in the HTML a browser contender reads, since the page's script holds the
text itself; the text in scrapespy's markdown, which holds no script); one without it is a
failed check, marked on its row, reported under the table and in the JSON, and the exit
status is then 1 (as it is when a page failed outright). A page is timed from its request to
its context closed (scrapespy: to its answer read).

Method (bench/README.md, "How it measures"): each contender is warmed up once (a 5 s turn at
c=4); then at c=1 and at c=4, ``BENCH_JS_REPS`` rounds (default 3) of one turn of
``BENCH_JS_DURATION`` seconds (default 10) a contender, each round starting with the next
contender. A figure is the median of a contender's turns; a ratio is the median of the
per-round ratios to plain Playwright's turn of the same round. CPU is the contender's process
tree (its browser, Playwright's driver, the service's extraction workers) from /proc, in CPU
seconds per 100 pages. Every turn, wait and process is bounded in time; 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.pages import ON_LOAD_ELEMENT, ON_LOAD_TEXT, write_pages
from harness.procinfo import cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
REPS = int(os.environ.get("BENCH_JS_REPS", "3"))
DURATION = max(float(os.environ.get("BENCH_JS_DURATION", "10")), 1.0)
CONCURRENCY = (1, 4)
WARM_UP_SECONDS = 5.0
PAGE_TIMEOUT = 20.0  # one page, any contender
TURN_SLACK = 60.0  # a turn's answer may come this long after its duration, else the run fails
PAGES = 20
BODY_FIELDS = {"engine": "js", "formats": ["markdown"], "only_main_content": True}
CONTENDERS = ("scrapespy", "playwright", "scrapy_playwright")
AGAINST = "playwright"


def chromium_path() -> str:
    from service.core.settings import default_chromium_path

    return os.environ.get("BENCH_JS_CHROMIUM") or default_chromium_path()


def launch_options(path: str) -> dict[str, Any]:
    from service.browser.launch import chromium_launch_options

    return chromium_launch_options(path, as_root=os.geteuid() == 0)


def summary(
    latencies: list[float], elapsed: float, checked: int, failed: int, errors: int
) -> dict[str, Any]:
    """A turn's figures: pages read (and checked), pages per second, p50, failed checks."""
    done = len(latencies)
    return {
        "pages": done,
        "elapsed_s": round(elapsed, 3),
        "pages_per_s": done / elapsed if elapsed > 0 else 0.0,
        "p50_ms": statistics.median(latencies) * 1000 if latencies else None,
        "checked": checked,
        "failed_checks": failed,
        "errors": errors,
    }


# ---- plain Playwright, in its own process --------------------------------------------------


async def playwright_worker(urls: list[str], path: str) -> None:
    import asyncio

    from playwright.async_api import async_playwright

    loop = asyncio.get_running_loop()
    async with async_playwright() as p:
        browser = await p.chromium.launch(**launch_options(path))

        async def one(url: str) -> str:
            context = await browser.new_context()
            try:
                page = await context.new_page()
                await page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT * 1000)
                return await page.content()
            finally:
                await context.close()

        async def turn(c: int, duration: float) -> dict[str, Any]:
            deadline = time.monotonic() + duration
            latencies: list[float] = []
            counts = {"failed": 0, "errors": 0}

            async def worker(first: int) -> None:
                n = first
                while time.monotonic() < deadline:
                    url = urls[n % len(urls)]
                    n += c
                    sent = time.perf_counter()
                    try:
                        html = await asyncio.wait_for(one(url), PAGE_TIMEOUT + 5)
                    except Exception:
                        counts["errors"] += 1
                        await asyncio.sleep(0.2)  # a browser gone: no busy loop till the end
                        continue
                    latencies.append(time.perf_counter() - sent)
                    counts["failed"] += ON_LOAD_ELEMENT not in html

            started = time.monotonic()
            await asyncio.gather(*(worker(i) for i in range(c)))
            elapsed = time.monotonic() - started
            return summary(latencies, elapsed, len(latencies), counts["failed"], counts["errors"])

        print("ready", flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            order = json.loads(line)
            print(json.dumps(await turn(order["c"], order["duration"])), flush=True)
        await browser.close()


# ---- scrapy-playwright in a bare Scrapy crawler, in its own process ------------------------


def scrapy_worker(urls: list[str], path: str) -> None:
    from service.core.reactor import ASYNCIO_REACTOR, install, running

    install()
    reactor = running()
    import asyncio

    from scrapy import Request, Spider, signals
    from scrapy.crawler import CrawlerRunner
    from scrapy.exceptions import DontCloseSpider
    from twisted.internet import defer

    class Feed(Spider):
        name = "js_contender"

        async def start(self) -> Any:
            return
            yield

    def keep_open() -> None:
        raise DontCloseSpider

    handler = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
    runner = CrawlerRunner(
        {
            "TWISTED_REACTOR": ASYNCIO_REACTOR,
            "DOWNLOAD_HANDLERS": {"http": handler, "https": handler},
            "PLAYWRIGHT_BROWSER_TYPE": "chromium",
            "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(path),
            "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": PAGE_TIMEOUT * 1000,
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "DOWNLOAD_TIMEOUT": PAGE_TIMEOUT,
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
            "RETRY_ENABLED": False,
            "ROBOTSTXT_OBEY": False,
        }
    )
    crawler = runner.create_crawler(Feed)
    opened: defer.Deferred[None] = defer.Deferred()
    crawler.signals.connect(keep_open, signal=signals.spider_idle)

    def spider_opened(spider: Any) -> None:
        opened.callback(None)

    # signals hold their receivers weakly: these two live as long as this function's frame
    crawler.signals.connect(spider_opened, signal=signals.spider_opened)
    finished = runner.crawl(crawler)
    serial = iter(range(10**9))

    class Turn:
        def __init__(self, c: int, duration: float) -> None:
            self.c = c
            self.deadline = time.monotonic() + duration
            self.latencies: list[float] = []
            self.failed = self.errors = self.in_flight = 0
            self.next = 0
            self.done: defer.Deferred[dict[str, Any]] = defer.Deferred()
            self.started = time.monotonic()
            for _ in range(c):
                self.submit()

        def submit(self) -> None:
            if time.monotonic() >= self.deadline:
                if self.in_flight == 0 and not self.done.called:
                    elapsed = time.monotonic() - self.started
                    self.done.callback(
                        summary(
                            self.latencies,
                            elapsed,
                            len(self.latencies),
                            self.failed,
                            self.errors,
                        )
                    )
                return
            self.in_flight += 1
            url = urls[self.next % len(urls)]
            self.next += 1
            request = Request(
                url,
                callback=self.parse,
                errback=self.failure,
                cb_kwargs={"sent": time.perf_counter()},
                dont_filter=True,
                meta={
                    "playwright": True,
                    "playwright_include_page": True,
                    "playwright_context": f"page-{next(serial)}",
                },
            )
            crawler.engine.crawl(request)

        async def parse(self, response: Any, sent: float) -> None:
            await response.meta["playwright_page"].context.close()
            self.latencies.append(time.perf_counter() - sent)
            self.failed += ON_LOAD_ELEMENT not in response.text
            self.in_flight -= 1
            self.submit()

        def failure(self, failure: Any) -> None:
            page = failure.request.meta.get("playwright_page")
            if page is not None:
                asyncio.ensure_future(page.context.close()).add_done_callback(
                    lambda task: task.exception()  # retrieved: a closed context is no news
                )
            self.errors += 1
            self.in_flight -= 1
            self.submit()

    def answer(figures: dict[str, Any]) -> None:
        print(json.dumps(figures), flush=True)

    def order(line: str) -> None:
        asked = json.loads(line)
        Turn(asked["c"], asked["duration"]).done.addCallback(answer)

    async def stop() -> None:
        await runner.stop()
        await finished

    def read_orders() -> None:
        for line in sys.stdin:
            reactor.callFromThread(order, line)
        reactor.callFromThread(
            lambda: defer.ensureDeferred(stop()).addBoth(lambda _: reactor.stop())
        )

    def ready(_: Any) -> None:
        print("ready", flush=True)
        threading.Thread(target=read_orders, daemon=True).start()

    opened.addCallback(ready)
    reactor.run()


# ---- the contenders as this process drives them --------------------------------------------


class Worker:
    """A contender in a child process (``--worker NAME``): a turn is one JSON line each way."""

    def __init__(self, name: str, urls: list[str], path: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.js_contenders", "--worker", name, path, *urls],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.pid = self.process.pid
        try:
            line = self._line(90)
            if line != "ready":
                raise RuntimeError(f"{name} did not start: {line!r}")
        except BaseException:
            self.process.kill()
            self.process.wait(5)
            raise

    def _line(self, timeout: float) -> str:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise RuntimeError(f"{self.name} did not answer in {timeout:g} s")
        return self.process.stdout.readline().strip()

    def turn(self, c: int, duration: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"c": c, "duration": duration}) + "\n")
        self.process.stdin.flush()
        return dict(json.loads(self._line(duration + TURN_SLACK)))

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


class Service:
    """scrapespy serve, driven over HTTP by c threads on keep-alive connections."""

    name = "scrapespy"

    def __init__(self, urls: list[str], path: str, work: Path) -> None:
        from bench.contenders import scrapespy

        self.urls = urls
        self.proc, self.key = scrapespy(
            f"sqlite:///{work / 'js.db'}", work, extra_env={"SCRAPESPY_CHROMIUM_PATH": path}
        )
        assert self.proc.process is not None
        self.pid = self.proc.process.pid
        address = urlsplit(self.proc.base)
        self.host, self.port = address.hostname or "127.0.0.1", address.port or 80

    def _one(self, conn: http.client.HTTPConnection, url: str) -> bool:
        body = json.dumps({"url": url, **BODY_FIELDS, "timeout": PAGE_TIMEOUT})
        headers = {"Content-Type": "application/json", "X-API-Key": self.key}
        conn.request("POST", "/scrape", body, headers)
        response = conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {data[:200]!r}")
        return ON_LOAD_TEXT in (json.loads(data).get("markdown") or "")

    def turn(self, c: int, duration: float) -> dict[str, Any]:
        deadline = time.monotonic() + duration
        latencies: list[float] = []
        counts = {"failed": 0, "errors": 0}
        lock = threading.Lock()

        def worker(first: int) -> None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=PAGE_TIMEOUT + 10)
            n = first
            try:
                while time.monotonic() < deadline:
                    url = self.urls[n % len(self.urls)]
                    n += c
                    sent = time.perf_counter()
                    try:
                        ok = self._one(conn, url)
                    except Exception:
                        conn.close()
                        with lock:
                            counts["errors"] += 1
                        time.sleep(0.2)  # a service gone: no busy loop till the deadline
                        continue
                    with lock:
                        latencies.append(time.perf_counter() - sent)
                        counts["failed"] += not ok
            finally:
                conn.close()

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=c) as pool:
            list(pool.map(worker, range(c)))
        elapsed = time.monotonic() - started
        return summary(latencies, elapsed, len(latencies), counts["failed"], counts["errors"])

    def stop(self) -> None:
        self.proc.stop()


def measured(contender: Any, c: int, duration: float) -> dict[str, Any]:
    cpu0 = cpu_seconds(contender.pid)
    figures = contender.turn(c, duration)
    cpu = cpu_seconds(contender.pid) - cpu0
    figures["cpu_s_per_100"] = cpu / figures["pages"] * 100 if figures["pages"] else None
    return figures


def median(values: list[Any]) -> float | None:
    numbers = [v for v in values if isinstance(v, (int, float))]
    return round(statistics.median(numbers), 3) if numbers else None


def per_round(
    turns: dict[str, list[dict[str, Any]]], name: str, figure: str, against: str = AGAINST
) -> list[float]:
    return [
        round(mine[figure] / theirs[figure], 3)
        for mine, theirs in zip(turns[name], turns[against], strict=False)
        if mine.get(figure) and theirs.get(figure)
    ]


FIGURES = ("p50_ms", "pages_per_s", "cpu_s_per_100")


def measure_rounds(
    contenders: dict[str, Any],
    measure: Any,
    results: dict[str, Any],
    reps: int,
    duration: float,
    against: str,
) -> None:
    """At each concurrency, ``reps`` rounds of one turn a contender (each round starting with
    the next one): the turns, each contender's median figures and its per-round ratios to
    ``against``'s, into ``results``."""
    names = tuple(contenders)
    rounds = 0
    for c in CONCURRENCY:
        turns: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for rep in range(reps):
            start = rounds % len(names)
            rounds += 1
            for name in names[start:] + names[:start]:
                figures = measure(contenders[name], c, duration)
                turns[name].append(figures)
                print(f"  {name:<18} c={c} round {rep + 1}: {brief(figures)}", flush=True)
        results["turns"][c] = turns
        for name, runs in turns.items():
            results["figures"].setdefault(name, {})[c] = {
                figure: median([run[figure] for run in runs]) for figure in FIGURES
            } | {
                "pages": sum(run["pages"] for run in runs),
                "failed_checks": sum(run["failed_checks"] for run in runs),
                "errors": sum(run["errors"] for run in runs),
            }
            if name != against:
                ratios = results["ratios"].setdefault(name, {})
                for figure in FIGURES:
                    each = per_round(turns, name, figure, against)
                    ratios[f"{figure}_c{c}"] = median(each)
                    ratios[f"{figure}_c{c}_rounds"] = each


def run() -> dict[str, Any]:
    from bench.site import serve, server_name, tear_down

    path = chromium_path()
    work = Path(tempfile.mkdtemp(prefix="scrapespy-js-contenders-"))
    write_pages(work / "site", PAGES)
    site, target = serve(work / "site")
    urls = [f"{target}/js-article-{i}.html" for i in range(PAGES)]
    load = os.getloadavg()
    results: dict[str, Any] = {
        "chromium": path,
        "site": server_name(),
        "machine": {"cores": os.cpu_count(), "load_before": [round(x, 2) for x in load]},
        "reps": REPS,
        "duration_s": DURATION,
        "body": BODY_FIELDS,
        "warm_up": {},
        "turns": {},
        "figures": {},
        "ratios": {},
    }
    cleanups: list[Any] = []
    try:
        (work / "scrapespy").mkdir()
        contenders: dict[str, Any] = {}
        for name in CONTENDERS:
            if name == "scrapespy":
                contender: Any = Service(urls, path, work / "scrapespy")
            else:
                contender = Worker(name, urls, path)
            cleanups.append(contender.stop)
            contenders[name] = contender
            results["warm_up"][name] = figures = measured(contender, 4, WARM_UP_SECONDS)
            print(f"  {name:<18} warm-up {figures}", flush=True)
        print(
            f"js contenders: {path}, site {target} ({server_name()}), "
            f"{REPS} rounds of {DURATION:g} s turns at c={CONCURRENCY}",
            flush=True,
        )
        measure_rounds(contenders, measured, results, REPS, DURATION, AGAINST)
    finally:
        tear_down(cleanups, site, work)
    results["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return results


def brief(f: dict[str, Any]) -> str:
    p50 = f"{f['p50_ms']:.0f} ms" if f["p50_ms"] else "-"
    cpu = f"{f['cpu_s_per_100']:.1f}" if f["cpu_s_per_100"] else "-"
    return (
        f"{f['pages']} pages, {f['pages_per_s']:.2f}/s, p50 {p50}, CPU s/100 {cpu}, "
        f"failed checks {f['failed_checks']}, errors {f['errors']}"
    )


LABELS = {
    "scrapespy": "scrapespy POST /scrape js (markdown, main content)",
    "playwright": "plain Playwright (new context + page, goto(load), content())",
    "scrapy_playwright": "scrapy-playwright, bare Scrapy crawler",
}


def x(value: float | None) -> str:
    """A ratio as the reports print it."""
    return f"{value:.2f}x" if value is not None else "-"


def failures_of(results: dict[str, Any], name: str, warm_up: bool = False) -> tuple[int, list[str]]:
    """The pages of ``name``'s turns (and warm-up) read without the page's own paragraph, and
    the report's lines on them and on the pages that failed outright."""
    figures = results["figures"][name]
    bad = sum(figures[c]["failed_checks"] for c in CONCURRENCY)
    bad += results["warm_up"][name]["failed_checks"] if warm_up else 0
    errors = sum(figures[c]["errors"] for c in CONCURRENCY)
    lines = []
    if bad:
        lines.append(f"{name}: CHECK FAILED on {bad} pages read without '{ON_LOAD_TEXT}'")
    if errors:
        lines.append(f"{name}: FAILED {errors} pages (no answer, or not a 200)")
    return bad, lines


def published(results: dict[str, Any], lines: list[str], path: Path | None) -> None:
    """The report printed, and kept with the results in ``path`` when given."""
    results["report"] = lines
    print("\n" + "\n".join(lines))
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2) + "\n")
        print(f"written: {path}")


def report(results: dict[str, Any]) -> list[str]:
    lines = [
        "| contender | c=1 p50 | c=4 pages/s | CPU s / 100 pages (c=4) | "
        "c=1 p50 x Playwright | c=4 pages/s x Playwright | CPU x Playwright |",
        "|---|---|---|---|---|---|---|",
    ]
    failures = []
    for name in CONTENDERS:
        one, four = results["figures"][name][1], results["figures"][name][4]
        ratios = results["ratios"].get(name, {})
        bad, found = failures_of(results, name, warm_up=True)
        failures += found
        mark = " (CHECK FAILED)" if bad else ""
        lines.append(
            f"| {LABELS[name]}{mark} | {one['p50_ms'] or 0:.0f} ms | "
            f"{four['pages_per_s'] or 0:.2f} | {four['cpu_s_per_100'] or 0:.1f} | "
            f"{x(ratios.get('p50_ms_c1'))} | {x(ratios.get('pages_per_s_c4'))} | "
            f"{x(ratios.get('cpu_s_per_100_c4'))} |"
        )
    ours = results["ratios"].get("scrapespy", {})
    lines.append(
        f"targets: scrapespy c=1 p50 {x(ours.get('p50_ms_c1'))} Playwright's (<= 1.2x), "
        f"c=4 pages/s {x(ours.get('pages_per_s_c4'))} (>= 0.95x); per round "
        f"{ours.get('p50_ms_c1_rounds')} and {ours.get('pages_per_s_c4_rounds')}"
    )
    lines += failures or [f"every page read held '{ON_LOAD_TEXT}'"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.js_contenders", description=__doc__)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == "playwright":
        import asyncio

        asyncio.run(playwright_worker(args.rest[1:], args.rest[0]))
        return 0
    if args.worker == "scrapy_playwright":
        scrapy_worker(args.rest[1:], args.rest[0])
        return 0
    results = run()
    lines = report(results)
    published(results, lines, args.json)
    failed = any(line.startswith(tuple(CONTENDERS)) and "FAILED" in line for line in lines)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
