"""What ``change_tracking`` adds to a static markdown scrape, end to end, and what its diff costs.

python -m bench.change_tracking_cost [ROUNDS] [--json bench/results/change_tracking.json]

One service process (SQLite, in a temporary folder) and the local target site serving ten of
the benchmark's article pages (``harness.pages``, about 33 KB each). Each round scrapes the ten
pages, each twice in a row, with ``"formats": ["markdown"]`` and with ``["markdown",
"change_tracking"]`` (git-diff mode), one request at a time, the variant that goes first
alternating from page to page, so that the machine's drift falls on both of a pair alike. A
pair's ratio is tracked / plain (client side, the whole HTTP round trip); a round's is the
median of its ten pairs', and the result the median of the rounds' (the first round, where
every tracked page is ``new``, included; the later ones compare ``same``). Target: at most
1.15x.

The diff's own cost is timed too, in this process: the normalised markdown of one article
against the same with one paragraph edited, by difflib (:func:`service.extraction.changes
.git_diff`) and by ``git diff --no-index`` on two files (the library's alternative: a process
per diff), the best of 20 runs each.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.pages import article
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.extraction.changes import git_diff, normalised_lines
from service.extraction.outputs import OutputOptions, extract_page

PAGES = 10
TARGET = 1.15


def _scrape_ms(service: ServiceProcess, key: str, url: str, formats: list[str]) -> float:
    body: dict[str, Any] = {"url": url, "formats": formats}
    if "change_tracking" in formats:
        body["change_tracking"] = {"modes": ["git-diff"]}
    started = time.perf_counter()
    reply = call("POST", service.url("/scrape"), body, key=key)
    elapsed = (time.perf_counter() - started) * 1000
    answer = reply.json
    assert reply.status == 200 and answer["success"], reply.body[:300]
    return elapsed


def end_to_end(rounds: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="bench-changes-"))
    url = f"sqlite:///{folder / 'bench.db'}"
    accounts = Accounts(url)
    site = TargetSite().start()
    for n in range(PAGES):
        page = article(n).encode()
        site.routes[f"/a/{n}"] = lambda _h, page=page: (
            200,
            {"Content-Type": "text/html; charset=utf-8"},
            page,
        )
    urls = [site.url(f"/a/{n}") for n in range(PAGES)]
    service = ServiceProcess(url, folder, log_path=folder / "service.log").start()
    variants = {"plain": ["markdown"], "tracked": ["markdown", "change_tracking"]}
    per_round: list[dict[str, float]] = []
    try:
        _, key = accounts.create(credits=10**6)
        for warm in urls[:3]:  # the first requests start what later ones reuse
            _scrape_ms(service, key, warm, ["markdown"])
        for r in range(rounds):
            times: dict[str, list[float]] = {name: [] for name in variants}
            pairs = []
            for n, page in enumerate(urls):
                # each page twice in a row, the variant that goes first alternating
                order = list(variants) if (r + n) % 2 == 0 else list(reversed(variants))
                took = {name: _scrape_ms(service, key, page, variants[name]) for name in order}
                pairs.append(took["tracked"] / took["plain"])
                for name, ms in took.items():
                    times[name].append(ms)
            per_round.append(
                {
                    "plain": round(statistics.median(times["plain"]), 3),
                    "tracked": round(statistics.median(times["tracked"]), 3),
                    "ratio": round(statistics.median(pairs), 3),
                }
            )
    finally:
        service.stop()
        site.stop()
        accounts.close()
        shutil.rmtree(folder, ignore_errors=True)
    ratio = statistics.median(one["ratio"] for one in per_round)
    return {
        "pages": PAGES,
        "rounds": per_round,
        "plain_ms_median": round(statistics.median(one["plain"] for one in per_round), 3),
        "tracked_ms_median": round(statistics.median(one["tracked"] for one in per_round), 3),
        "ratio": round(ratio, 3),
        "target": TARGET,
        "met": ratio <= TARGET,
    }


def _best_ms(run: Any, times: int = 20) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 3)


def diff_cost() -> dict[str, Any]:
    html = article(0)
    options = OutputOptions(frozenset({"markdown"}))
    markdown = extract_page(html, "http://127.0.0.1/a/0", None, options)["markdown"]
    before = normalised_lines(markdown)
    after = list(before)
    middle = next(i for i in range(len(after) // 2, len(after)) if len(after[i]) > 40)
    after[middle] = after[middle][::-1]  # one paragraph edited
    made = git_diff(before, after)
    assert made is not None
    figures: dict[str, Any] = {
        "markdown_lines": len(before),
        "markdown_chars": len(markdown),
        "difflib_ms": _best_ms(lambda: git_diff(before, after)),
        "same_ms": _best_ms(lambda: before == list(before)),
    }
    git = shutil.which("git")
    if git is not None:
        folder = Path(tempfile.mkdtemp(prefix="bench-diff-"))
        (folder / "a.md").write_text("\n".join(before) + "\n")
        (folder / "b.md").write_text("\n".join(after) + "\n")
        command = [git, "diff", "--no-index", "--no-color", "a.md", "b.md"]
        figures["git_diff_process_ms"] = _best_ms(
            lambda: subprocess.run(command, cwd=folder, capture_output=True, check=False)
        )
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def main(argv: list[str]) -> None:
    rounds = 15
    out: Path | None = None
    args = iter(argv)
    for arg in args:
        if arg == "--json":
            out = Path(next(args))
        else:
            rounds = int(arg)
    result = {
        "command": "python -m bench.change_tracking_cost " + " ".join(argv),
        "end_to_end": end_to_end(rounds),
        "diff": diff_cost(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.write_text(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
