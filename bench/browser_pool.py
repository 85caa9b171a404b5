"""The browser pool's cost: scrapespy's ``js`` engine on its in-process browser against the same
service rendering on browser servers on this host, side by side.

    python -m bench.browser_pool [--json PATH]

Contenders, each a ``scrapespy serve`` (SQLite, a funded key, private targets allowed,
``SCRAPESPY_MAX_PAGES=4``) driven as bench/js_contenders.py drives scrapespy (the same 20 pages
of about 33 KB, the same body, the same keep-alive client, each page checked for the paragraph
its script inserts on ``load``), all on the same Chromium binary:

- ``in_process``: the service launches its own Chromium (no ``SCRAPESPY_BROWSER_*``), as today;
- ``server``: one ``scrapespy browser --port N`` (a Playwright ``launchServer`` in the
  driver's Node, no token), the service given ``SCRAPESPY_BROWSER_ENDPOINTS=ws://...``;
- ``server_token``: the same with a token (``SCRAPESPY_BROWSER_ENDPOINT_TOKEN``): the server's
  front checks it and relays the WebSocket to Playwright's, one more hop in Node;
- ``cdp``: Chromium started by hand with ``--remote-debugging-port`` and scrapespy's own
  switches, the service given ``SCRAPESPY_BROWSER_URL=http://...`` (Playwright's
  ``connect_over_cdp``): the other way a remote browser could be reached.

Method: as bench/js_contenders.py (bench/README.md, "How it measures"): a 5 s warm-up at c=4
per contender, then at c=1 and c=4 ``BENCH_POOL_REPS`` rounds (default 5) of one turn of
``BENCH_POOL_DURATION`` seconds (default 10) a contender (``BENCH_POOL_CONTENDERS``, comma-
separated, runs fewer of them), each round starting with the next
contender; a figure is the median of a contender's turns, a ratio the median of per-round
ratios to ``in_process`` of the same round. CPU counts the service's process tree and the
browser server's (or the CDP Chromium's). 127.0.0.1 only; every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.js_contenders import (
    BODY_FIELDS,
    PAGES,
    WARM_UP_SECONDS,
    Service,
    brief,
    chromium_path,
    failures_of,
    launch_options,
    measure_rounds,
    published,
    x,
)
from harness.pages import ON_LOAD_TEXT, write_pages
from harness.procinfo import cpu_seconds

REPS = int(os.environ.get("BENCH_POOL_REPS", "5"))
DURATION = max(float(os.environ.get("BENCH_POOL_DURATION", "10")), 1.0)
ALL = ("in_process", "server", "server_token", "cdp")
# BENCH_POOL_CONTENDERS=in_process,server: fewer turns (in_process is always run: the yardstick)
CONTENDERS = tuple(
    name
    for name in ALL
    if name == "in_process"
    or name in (os.environ.get("BENCH_POOL_CONTENDERS") or ",".join(ALL)).split(",")
)
AGAINST = "in_process"
TOKEN = "bench-token-0c5d"
START_TIMEOUT = 60.0


def _scrapespy_command() -> str:
    return str(Path(sys.executable).with_name("scrapespy"))


class BrowserServer:
    """``scrapespy browser --port N``: its process and endpoint, once it printed it."""

    def __init__(self, token: str = "") -> None:
        from bench.contenders import free_port

        self.port = free_port()
        env = {**os.environ, "BENCH_POOL_TOKEN": token}
        self.process = subprocess.Popen(
            [
                _scrapespy_command(),
                "browser",
                "--port",
                str(self.port),
                "--token-env",
                "BENCH_POOL_TOKEN",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.process.stdout is not None
        self.endpoint = self.process.stdout.readline().decode().strip()
        if not self.endpoint.startswith("ws://"):
            self.stop()
            raise RuntimeError("scrapespy browser did not start")
        self.pid = self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


class CdpChromium:
    """Chromium with scrapespy's switches and ``--remote-debugging-port``."""

    def __init__(self, path: str, work: Path) -> None:
        from bench.contenders import free_port

        self.port = free_port()
        options = launch_options(path)
        self.process = subprocess.Popen(
            [
                options["executable_path"],
                *options["args"],
                f"--remote-debugging-port={self.port}",
                "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={work / 'cdp-profile'}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Debian's chromium commands are scripts that start the browser as their child: it is
            # stopped with its whole group, or it outlives the benchmark
            start_new_session=True,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.pid = self.process.pid
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.endpoint + "/json/version", timeout=1).read()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the CDP Chromium did not come up")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class Contender(Service):
    """scrapespy serve with ``env``, and the browser it renders on when it is not its own."""

    def __init__(
        self, name: str, urls: list[str], path: str, work: Path, browser: Any, env: dict[str, str]
    ) -> None:
        from bench.contenders import scrapespy

        self.name = name
        self.browser = browser
        self.urls = urls
        work.mkdir(parents=True, exist_ok=True)
        self.proc, self.key = scrapespy(
            f"sqlite:///{work / 'js.db'}",
            work,
            extra_env={"SCRAPESPY_CHROMIUM_PATH": path, **env},
        )
        assert self.proc.process is not None
        self.pid = self.proc.process.pid
        address = urlsplit(self.proc.base)
        self.host, self.port = address.hostname or "127.0.0.1", address.port or 80

    def stop(self) -> None:
        try:
            self.proc.stop()
        finally:
            if self.browser is not None:
                self.browser.stop()


def contender(name: str, urls: list[str], path: str, work: Path) -> Contender:
    where = work / name
    if name == "in_process":
        return Contender(name, urls, path, where, None, {})
    if name == "cdp":
        where.mkdir(parents=True, exist_ok=True)
        chromium = CdpChromium(path, where)
        return Contender(
            name, urls, path, where, chromium, {"SCRAPESPY_BROWSER_URL": chromium.endpoint}
        )
    token = TOKEN if name == "server_token" else ""
    server = BrowserServer(token)
    env = {"SCRAPESPY_BROWSER_ENDPOINTS": server.endpoint}
    if token:
        env["SCRAPESPY_BROWSER_ENDPOINT_TOKEN"] = token
    return Contender(name, urls, path, where, server, env)


def measured(one: Contender, c: int, duration: float) -> dict[str, Any]:
    pids = [one.pid] + ([one.browser.pid] if one.browser is not None else [])
    cpu0 = sum(cpu_seconds(pid) for pid in pids)
    figures = one.turn(c, duration)
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu0
    figures["cpu_s_per_100"] = cpu / figures["pages"] * 100 if figures["pages"] else None
    return figures


def run() -> dict[str, Any]:
    from bench.site import serve, server_name, tear_down

    path = chromium_path()
    work = Path(tempfile.mkdtemp(prefix="scrapespy-browser-pool-"))
    write_pages(work / "site", PAGES)
    site, target = serve(work / "site")
    urls = [f"{target}/js-article-{i}.html" for i in range(PAGES)]
    results: dict[str, Any] = {
        "chromium": path,
        "site": server_name(),
        "machine": {
            "cores": os.cpu_count(),
            "load_before": [round(x, 2) for x in os.getloadavg()],
        },
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
        contenders: dict[str, Contender] = {}
        for name in CONTENDERS:
            one = contender(name, urls, path, work)
            cleanups.append(one.stop)
            contenders[name] = one
            results["warm_up"][name] = figures = measured(one, 4, WARM_UP_SECONDS)
            print(f"  {name:<13} warm-up {brief(figures)}", flush=True)
        measure_rounds(contenders, measured, results, REPS, DURATION, AGAINST)
    finally:
        tear_down(cleanups, site, work)
    results["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return results


LABELS = {
    "in_process": "in-process Chromium (launched by the service)",
    "server": "one `scrapespy browser` server (Playwright launchServer)",
    "server_token": "the same, with a token (its front relays the WebSocket)",
    "cdp": "Chromium over CDP (`SCRAPESPY_BROWSER_URL=http://...`)",
}


def report(results: dict[str, Any]) -> list[str]:
    lines = [
        "| browser | c=1 p50 | c=4 pages/s | CPU s / 100 pages (c=4) | c=1 p50 x in-process | "
        "c=4 pages/s x in-process |",
        "|---|---|---|---|---|---|",
    ]
    failures = []
    for name in CONTENDERS:
        one, four = results["figures"][name][1], results["figures"][name][4]
        ratios = results["ratios"].get(name, {})
        failures += failures_of(results, name)[1]
        lines.append(
            f"| {LABELS[name]} | {one['p50_ms'] or 0:.0f} ms | {four['pages_per_s'] or 0:.2f} | "
            f"{four['cpu_s_per_100'] or 0:.1f} | {x(ratios.get('p50_ms_c1'))} | "
            f"{x(ratios.get('pages_per_s_c4'))} |"
        )
    ours = results["ratios"].get("server", {})
    lines.append(
        f"targets: server c=1 p50 {x(ours.get('p50_ms_c1'))} in-process's (<= 1.1x), "
        f"c=4 pages/s {x(ours.get('pages_per_s_c4'))} (>= 0.9x); per round "
        f"{ours.get('p50_ms_c1_rounds')} and {ours.get('pages_per_s_c4_rounds')}"
    )
    lines += failures or [f"every page read held '{ON_LOAD_TEXT}'"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.browser_pool", description=__doc__)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results = run()
    lines = report(results)
    published(results, lines, args.json)
    failed = any("FAILED" in line for line in lines)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
