"""Issue 22's latency figure in ``make bench``, run by bench/run.py: what ``auto`` costs when
its first attempt succeeds.

On the SQLite instance at static c=1, turns of plain scrapes and of scrapes with
``"engine": "auto", "proxy_type": "auto"`` alternate (``BENCH_AUTO_TURNS`` each, default 6, of
``BENCH_AUTO_DURATION`` s, default 3, the first of each pair swapping every round). The benchmark's
article pages are no JavaScript shells and the instance has no proxy pools, so every auto scrape
answers on its first attempt, after the shell check. The figure is the median of the per-round
differences of p50; the noise it is held to is the spread of the plain turns' own p50s (largest
less smallest). bench/wrk/scrapespy.lua counts an auto answer without ``attempts`` as failed.
``BENCH_AUTO=0`` leaves it out.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

from bench.formats import SCRIPT, Measure, row, verdict

AUTO = os.environ.get("BENCH_AUTO", "1") != "0"
TURNS = int(os.environ.get("BENCH_AUTO_TURNS", "6"))
DURATION = float(os.environ.get("BENCH_AUTO_DURATION", "3"))
FIELDS = {
    "BENCH_ENGINE": "auto",
    "BENCH_FIELDS": '"proxy_type":"auto"',
    "BENCH_EXPECT": '"attempts":[{',
}


def added_p50(measure: Measure, env: dict[str, str]) -> dict[str, Any]:
    """static c=1 with and without auto, in alternating turns."""
    plain_env = {**env, "BENCH_ENGINE": "static", "BENCH_FIELDS": "", "BENCH_EXPECT": ""}
    auto_env = {**plain_env, **FIELDS}
    measure(SCRIPT, auto_env, 1, 1)  # warm-up
    plain: list[dict[str, Any]] = []
    auto: list[dict[str, Any]] = []
    for turn in range(TURNS):
        pair = [(plain, plain_env), (auto, auto_env)]
        for runs, run_env in pair if turn % 2 == 0 else pair[::-1]:
            runs.append(measure(SCRIPT, run_env, 1, DURATION))
            name = "auto" if runs is auto else "plain"
            print(f"  scrapespy static c=1 {name:<6} turn {turn + 1}: {runs[-1]}", flush=True)
    added = [round(a["p50_ms"] - p["p50_ms"], 3) for a, p in zip(auto, plain, strict=True)]
    plain_p50s = [t["p50_ms"] for t in plain]
    return {
        "concurrency": 1,
        "p50_ms": statistics.median(t["p50_ms"] for t in auto),
        "plain_p50_ms": statistics.median(plain_p50s),
        "added_p50_ms": statistics.median(added),
        "added_p50_ms_turns": added,
        "noise_ms": round(max(plain_p50s) - min(plain_p50s), 3),
        "scrapes": sum(t["requests"] for t in auto),
        "failed": sum(t["failed"] for t in auto),
    }


def report(content: dict[str, Any]) -> list[str]:
    figure = content.get("auto_static_c1")
    rows = ["\n" + row("issue 22", "figure", "bar", "verdict")]
    if figure is None:
        rows.append(row("static c=1 auto, added p50", "skipped", "", "BENCH_AUTO=0"))
        return rows
    added, noise = figure["added_p50_ms"], figure["noise_ms"]
    rows.append(
        row(
            "static c=1 auto, added p50",
            f"{added:.2f} ms",
            f"<= {noise:.2f} ms",
            verdict(added <= noise, figure["failed"]),
        )
    )
    return rows
