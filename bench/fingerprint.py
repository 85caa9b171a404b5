"""The static engine's fingerprint (decision record 0037): what it presents, and what it costs.

    python -m bench.fingerprint [ROUNDS] [SECONDS]    # default 5 rounds of 5 s turns

First the fingerprints: a TLS site on 127.0.0.1 (harness.fingerprints) computes the JA4 and the
HTTP/2 fingerprint of the system Chromium opening it (the full browser and the headless shell,
unautomated) and of one static scrape by each fingerprint. Then the cost: static c=32 turns on
the bench's 20 pages of the ceiling (plain Scrapy), scrapespy with ``SCRAPESPY_STATIC_FINGERPRINT``
``scrapy`` and with ``chrome``, each on SQLite, in rotating order; each ratio is the median of
the per-round ratios to the ceiling's turn. Written to ``bench/results/fingerprint.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.ab import turn
from bench.contenders import ceiling, scrapespy
from bench.run import wrk
from bench.site import serve, server_name, tear_down
from harness.fingerprints import CHROMIUMS, FingerprintSite, chromium_hello
from harness.pages import write_pages
from harness.service import call

RESULTS = Path(__file__).parent / "results" / "fingerprint.json"
FINGERPRINTS = ("scrapy", "chrome")


def fingerprints(services: dict[str, tuple[Any, str]], workdir: Path) -> dict[str, Any]:
    site = FingerprintSite(workdir)
    try:
        seen: dict[str, Any] = {}
        for binary in CHROMIUMS:
            if os.access(binary, os.X_OK):
                hello = chromium_hello(site, f"/{Path(binary).name}", binary)
                seen[Path(binary).name] = {"ja4": hello.ja4, "http2": hello.http2}
        for name, (proc, key) in services.items():
            body = {"url": site.url(f"/{name}"), "respect_robots": False}
            call("POST", proc.url("/scrape"), body, key=key, timeout=60)
            hello = site.last(f"/{name}")
            seen[f"scrapespy {name}"] = {"ja4": hello.ja4, "http2": hello.http2 or hello.alpn}
        return seen
    finally:
        site.close()


def main(rounds: int, seconds: float) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-fingerprint-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    urls_file = work / "urls.txt"
    urls_file.write_text("\n".join(f"{target}/article-{i}.html" for i in range(20)))
    services: dict[str, tuple[Any, str]] = {}
    try:
        for name in FINGERPRINTS:
            (work / name).mkdir()
            env = {"SCRAPESPY_STATIC_FINGERPRINT": name}
            services[name] = scrapespy(f"sqlite:///{work / name}.db", work / name, extra_env=env)
            wrk("scrapespy.lua", services[name][0].base, 8, bench_env(target, services, name), 2)
        seen = fingerprints(services, work)
        for who, figures in seen.items():
            print(f"{who:>32}: {figures['ja4']}  {figures['http2']}", flush=True)
        turns: dict[str, list[float]] = {"ceiling": [], **{n: [] for n in FINGERPRINTS}}
        cpu: dict[str, list[float]] = {n: [] for n in FINGERPRINTS}
        names = list(turns)
        for round_ in range(rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                if name == "ceiling":
                    rps = ceiling(urls_file, 32, seconds)["rps"]
                else:
                    row = turn(services[name][0], bench_env(target, services, name), seconds)
                    assert row["failed"] == 0, row
                    rps = row["rps"]
                    cpu[name].append(row["cpu_ms"])
                turns[name].append(rps)
                print(round_, name, round(rps, 1), flush=True)
        ratios = {
            name: [a / b for a, b in zip(turns[name], turns["ceiling"], strict=True)]
            for name in FINGERPRINTS
        }
        summary = {
            "rounds": rounds,
            "seconds": seconds,
            "site": server_name(),
            "fingerprints": seen,
            "c32_rps": {name: statistics.median(v) for name, v in turns.items()},
            "c32_x_ceiling": {name: statistics.median(r) for name, r in ratios.items()},
            "c32_x_ceiling_rounds": {n: [round(x, 3) for x in r] for n, r in ratios.items()},
            # CPU of the service's process tree per scrape, less swayed by a busy machine
            "c32_cpu_ms_per_scrape": {n: statistics.median(v) for n, v in cpu.items()},
            "machine_load_1min": os.getloadavg()[0],
        }
        RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
        print(json.dumps({k: summary[k] for k in ("c32_x_ceiling", "c32_cpu_ms_per_scrape")}))
    finally:
        for proc, _ in services.values():
            proc.stop()
        tear_down([], site, work)


def bench_env(target: str, services: dict[str, tuple[Any, str]], name: str) -> dict[str, str]:
    return {"BENCH_TARGET": target, "BENCH_KEY": services[name][1]}


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:3]]
    main(int(args[0]) if args else 5, args[1] if len(args) > 1 else 5.0)
