"""Plain static c=32 turns of several versions of the service side by side: what a change costs
per scrape, measured apart from the machine's state.

    for c in 6f9105f 6c2fb4e; do mkdir -p /tmp/ab/$c; git archive $c | tar -x -C /tmp/ab/$c; done
    .venv/bin/python -m bench.ab 4 5 /tmp/ab/6f9105f /tmp/ab/6c2fb4e

Each tree (an export of a commit) runs as its own service on its own SQLite file (its code first
on PYTHONPATH, this checkout's virtualenv for the rest), all against one local site; the trees
take plain c=32 turns of SECONDS in rotating order for ROUNDS rounds. Printed per tree: the
median of its per-round throughput ratios to the first tree, and the median CPU per scrape of
its process tree (extraction workers included) and of its reactor thread, from /proc.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.contenders import free_port, scrapespy, wait_port
from bench.run import wrk
from harness.pages import write_pages
from harness.procinfo import TICKS, cpu_seconds


def _seconds(path: str) -> float:
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the process tree of ``pid``, and of its main (reactor) thread."""
    return cpu_seconds(pid), _seconds(f"/proc/{pid}/task/{pid}/stat")


def _idle_and_total() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    return ticks[3] + ticks[4], sum(ticks)


def turn(proc: Any, env: dict[str, str], seconds: float) -> dict[str, float]:
    """One c=32 turn of ``bench/wrk/scrapespy.lua`` against ``proc``: scrapes a second, failed
    answers, the CPU per scrape of its process tree and of its reactor thread, and how busy the
    machine's cores were."""
    before, (idle0, total0) = cpu(proc.process.pid), _idle_and_total()
    out = wrk("scrapespy.lua", proc.base, 32, env, seconds)
    after, (idle1, total1) = cpu(proc.process.pid), _idle_and_total()
    n = max(out["requests"], 1)
    return {
        "rps": n / (out["duration_us"] / 1e6),
        "failed": out["failed"],
        "cpu_ms": (after[0] - before[0]) / n * 1000,
        "reactor_ms": (after[1] - before[1]) / n * 1000,
        "busy": 1 - (idle1 - idle0) / max(total1 - total0, 1),
    }


def main(rounds: int, seconds: float, trees: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    write_pages(work / "site")
    port = free_port()
    site = subprocess.Popen(
        [sys.executable, "-m", "bench.site", str(work / "site"), str(port)],
        stdout=subprocess.DEVNULL,
    )
    services: dict[str, tuple[Any, dict[str, str]]] = {}
    try:
        wait_port(port)
        for path in trees:
            name = Path(path).name
            (work / name).mkdir()
            os.environ["PYTHONPATH"] = path
            try:
                proc, key = scrapespy(f"sqlite:///{work / (name + '.db')}", work / name)
            finally:
                os.environ.pop("PYTHONPATH", None)
            env = {"BENCH_TARGET": f"http://127.0.0.1:{port}", "BENCH_KEY": key}
            services[name] = (proc, env)
            wrk("scrapespy.lua", proc.base, 8, env, 2)  # warm-up
        turns: dict[str, list[dict[str, float]]] = {name: [] for name in services}
        names = list(services)
        for round_ in range(rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                proc, env = services[name]
                row = turn(proc, env, seconds)
                turns[name].append(row)
                print(round_, name, {k: round(v, 3) for k, v in row.items()}, flush=True)
        base = names[0]
        for name in names:
            ratios = [a["rps"] / b["rps"] for a, b in zip(turns[name], turns[base], strict=True)]
            print(
                f"{name}: rps x {base} {[round(r, 3) for r in ratios]} "
                f"median {statistics.median(ratios):.3f}; CPU ms / scrape "
                f"{statistics.median(t['cpu_ms'] for t in turns[name]):.3f}, reactor "
                f"{statistics.median(t['reactor_ms'] for t in turns[name]):.3f}"
            )
    finally:
        for proc, _ in services.values():
            proc.stop()
        site.terminate()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:])
