"""Plain and markdown static c=32 turns on one service, alternating: issue 20's ratio alone.

    .venv/bin/python -m bench.markdown_ab [ROUNDS] [SECONDS] [NAME=VALUE ...]

One instance on a throwaway SQLite file against the bench site; each round runs a plain turn and
a ``"formats": ["markdown"], "only_main_content": true`` turn of SECONDS at c=32, the first of
the two swapping every round. Printed per round and as medians: the markdown turn's throughput
over the plain one's, each turn's scrapes a second, the CPU per scrape of the service's process
tree (extraction workers included) and of its reactor thread, and how busy the machine's cores
were. NAME=VALUE pairs go to the service's environment (``SCRAPESPY_EXTRACT_WORKERS=3``).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.ab import turn
from bench.contenders import scrapespy
from bench.formats import MARKDOWN_FIELDS
from bench.run import wrk
from bench.site import serve, tear_down
from harness.pages import write_pages


def main(rounds: int, seconds: float, extra: dict[str, str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-markdown-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    cleanups: list[Any] = []
    try:
        (work / "service").mkdir()
        proc, key = scrapespy(f"sqlite:///{work / 'service.db'}", work / "service", extra_env=extra)
        cleanups.append(proc.stop)
        plain = {"BENCH_TARGET": target, "BENCH_KEY": key}
        kinds = {"plain": plain, "markdown": {**plain, **MARKDOWN_FIELDS}}
        for env in kinds.values():
            wrk("scrapespy.lua", proc.base, 8, env, 2)  # warm-up
        turns: dict[str, list[dict[str, float]]] = {name: [] for name in kinds}
        ratios = []
        for round_ in range(rounds):
            order = list(kinds) if round_ % 2 == 0 else list(reversed(kinds))
            for name in order:
                turns[name].append(turn(proc, kinds[name], seconds))
            ratios.append(turns["markdown"][-1]["rps"] / turns["plain"][-1]["rps"])
            print(f"round {round_}: {ratios[-1]:.3f}", flush=True)
        print(f"markdown / plain, median of rounds: {statistics.median(ratios):.3f}")
        for name, rows in turns.items():
            medians = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
            print(name, " ".join(f"{k} {v:.3f}" for k, v in medians.items()))
    finally:
        tear_down(cleanups, site, work)


if __name__ == "__main__":
    args = sys.argv[1:]
    numbers = [a for a in args if "=" not in a]
    main(
        int(numbers[0]) if numbers else 6,
        float(numbers[1]) if len(numbers) > 1 else 5.0,
        dict(a.split("=", 1) for a in args if "=" in a),
    )
