"""The service's side of the content figures in ``make bench`` (issue 20), run by bench/run.py.

- ``formats: ["markdown"], only_main_content: true`` at static c=32: one more contender in the
  c=32 rounds, on the SQLite instance, taking its turns with the others; its figure is the median
  of its throughput's ratios to the plain scrapespy turn of the same round (bar >= 0.8x).
  ``BENCH_CONTENT_SERVICE=0`` leaves it out.
- ``formats: ["screenshot"]`` at js c=1: turns with and without the screenshot alternate
  (``BENCH_SCREENSHOT_TURNS`` each, default 4, of ``BENCH_SCREENSHOT_DURATION`` s, default 3,
  the first of each pair swapping every round); the figure is the median of the per-round
  differences of p50 (bar <= 60 ms). ``BENCH_SCREENSHOT=0`` leaves it out.

And issue 21's figure, the same way as the screenshot's:

- ``actions`` at js c=1: a five-step script (click, wait_for, type, press, scroll) that asks for
  no wait of its own, on a rendered page (/actions.html), in turns alternating with the plain js
  scrape of the same page; the median of the per-round differences of p50 (bar <= 50 ms).
  ``BENCH_ACTIONS=0`` leaves it out.

All use bench/wrk/scrapespy.lua with BENCH_FIELDS, which counts a response without the asked
field as failed: a figure with failures measured something else, and the table says so.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from typing import Any

MARKDOWN = os.environ.get("BENCH_CONTENT_SERVICE", "1") != "0"
SCREENSHOT = os.environ.get("BENCH_SCREENSHOT", "1") != "0"
ACTIONS = os.environ.get("BENCH_ACTIONS", "1") != "0"
SCREENSHOT_TURNS = int(os.environ.get("BENCH_SCREENSHOT_TURNS", "4"))
SCREENSHOT_DURATION = float(os.environ.get("BENCH_SCREENSHOT_DURATION", "3"))
SCRIPT = "scrapespy.lua"
CONTENDER = "scrapespy_markdown"
MARKDOWN_FIELDS = {
    "BENCH_FIELDS": '"formats":["markdown"],"only_main_content":true',
    "BENCH_EXPECT": '"markdown":"',
}
SCREENSHOT_FIELDS = {"BENCH_FIELDS": '"formats":["screenshot"]', "BENCH_EXPECT": '"screenshot":"'}
FIVE_STEPS = (
    '{"type":"click","selector":"#more"},{"type":"wait_for","selector":"#added"},'
    '{"type":"type","selector":"#q","text":"hello"},{"type":"press","key":"Enter"},'
    '{"type":"scroll","direction":"down","amount":800}'
)
ACTIONS_FIELDS = {
    "BENCH_FIELDS": f'"actions":[{FIVE_STEPS}]',
    # every step ran and the click's paragraph was read
    "BENCH_EXPECT": '"index":4,"type":"scroll","ok":true',
}
ACTIONS_BAR_MS = 50.0
MARKDOWN_BAR = 0.8
SCREENSHOT_BAR_MS = 60.0

# measure(script, env, concurrency, seconds) -> the figures of bench.run.measured
Measure = Callable[[str, dict[str, str], int, float], dict[str, Any]]


def markdown_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, **MARKDOWN_FIELDS}


def markdown_ratio(turns: dict[str, list[dict[str, Any]]], plain: str) -> dict[str, Any]:
    """The markdown contender's c=32 throughput against ``plain``'s turn of the same round."""
    ours, base = turns.get(CONTENDER, []), turns.get(plain, [])
    each = [round(a["rps"] / b["rps"], 3) for a, b in zip(ours, base, strict=False) if b["rps"]]
    return {
        "concurrency": 32,
        "rps": statistics.median(t["rps"] for t in ours) if ours else None,
        "plain_rps": statistics.median(t["rps"] for t in base) if base else None,
        "rps_x_plain": statistics.median(each) if each else None,
        "rps_x_plain_turns": each,
        "failed": sum(t["failed"] for t in ours),
        "requests": sum(t["requests"] for t in ours),
        "bar": MARKDOWN_BAR,
    }


def screenshot_added_p50(measure: Measure, env: dict[str, str]) -> dict[str, Any]:
    """js c=1 with and without a viewport screenshot, in alternating turns."""
    return added_p50(measure, env, "/js.html", SCREENSHOT_FIELDS, "screenshot", SCREENSHOT_BAR_MS)


def actions_added_p50(measure: Measure, env: dict[str, str]) -> dict[str, Any]:
    """js c=1 with and without the five-step action script, in alternating turns."""
    return added_p50(measure, env, "/actions.html", ACTIONS_FIELDS, "actions", ACTIONS_BAR_MS)


def added_p50(
    measure: Measure,
    env: dict[str, str],
    page: str,
    fields: dict[str, str],
    name: str,
    bar_ms: float,
) -> dict[str, Any]:
    """What ``fields`` add to a js c=1 scrape of ``page``'s p50, in alternating turns."""
    js = {**env, "BENCH_ENGINE": "js", "BENCH_PAGE": page}
    plain_env = {**js, "BENCH_FIELDS": "", "BENCH_EXPECT": ""}
    shot_env = {**js, **fields}
    measure(SCRIPT, shot_env, 1, 2)  # warm-up: the first use of what the fields ask for
    plain: list[dict[str, Any]] = []
    shot: list[dict[str, Any]] = []
    for turn in range(SCREENSHOT_TURNS):
        pair = [(plain, plain_env), (shot, shot_env)]
        for runs, run_env in pair if turn % 2 == 0 else pair[::-1]:
            runs.append(measure(SCRIPT, run_env, 1, SCREENSHOT_DURATION))
            print(
                f"  scrapespy js c=1 {name if runs is shot else 'plain':<10} "
                f"turn {turn + 1}: {runs[-1]}",
                flush=True,
            )
    added = [round(s["p50_ms"] - p["p50_ms"], 1) for s, p in zip(shot, plain, strict=True)]
    return {
        "concurrency": 1,
        "p50_ms": statistics.median(t["p50_ms"] for t in shot),
        "plain_p50_ms": statistics.median(t["p50_ms"] for t in plain),
        "added_p50_ms": statistics.median(added),
        "added_p50_ms_turns": added,
        "scrapes": sum(t["requests"] for t in shot),
        "plain_scrapes": sum(t["requests"] for t in plain),
        "failed": sum(t["failed"] for t in shot),
        "bar_ms": bar_ms,
    }


def verdict(ok: bool | None, failed: int = 0) -> str:
    if failed:
        return f"NOT MEASURED: {failed} answers failed or lacked the field"
    return "-" if ok is None else ("meets the bar" if ok else "MISSES the bar")


def row(name: str, figure: str, bar: str, said: str) -> str:
    return f"{name:<40}{figure:>22}  {bar:<12}{said}".rstrip()


def report(content: dict[str, Any]) -> list[str]:
    """Issue 20's four figures, each with its bar."""
    rows = ["\n" + row("issue 20", "figure", "bar", "verdict")]
    q = content.get("only_main_content")
    if q is not None:
        bar = content["f1_bar"]
        rows.append(
            row(
                "main content P / R / F1 (corpus)",
                f"{q['precision']:.3f} / {q['recall']:.3f} / {q['f1']:.3f}",
                f"F1 >= {bar}",
                verdict(q["f1"] >= bar),
            )
        )
    cost, bar = content.get("cost"), content.get("cost_bar")
    x = cost["x_trafilatura"] if cost else None
    rows.append(
        row(
            "main content + markdown, x trafilatura",
            "not measured" if x is None else f"{x:.2f}x",
            f"<= {bar}x",
            verdict(None if x is None else x <= bar),
        )
    )
    md = content.get("markdown_c32")
    if md is None:
        rows.append(
            row("static c=32 rps with markdown, x plain", "skipped", "", "BENCH_CONTENT_SERVICE=0")
        )
    else:
        r = md["rps_x_plain"]
        rows.append(
            row(
                "static c=32 rps with markdown, x plain",
                "-" if r is None else f"{r:.2f}x",
                f">= {md['bar']}x",
                verdict(None if r is None else r >= md["bar"], md["failed"]),
            )
        )
    shot = content.get("screenshot_js_c1")
    if shot is None:
        rows.append(row("js c=1 screenshot, added p50", "skipped", "", "BENCH_SCREENSHOT=0"))
    else:
        added = shot["added_p50_ms"]
        rows.append(
            row(
                "js c=1 screenshot, added p50",
                f"{added:.1f} ms",
                f"<= {shot['bar_ms']:g} ms",
                verdict(added <= shot["bar_ms"], shot["failed"]),
            )
        )
    steps = content.get("actions_js_c1")
    rows.append("\n" + row("issue 21", "figure", "bar", "verdict"))
    if steps is None:
        rows.append(row("js c=1 five-step actions, added p50", "skipped", "", "BENCH_ACTIONS=0"))
    else:
        added = steps["added_p50_ms"]
        rows.append(
            row(
                "js c=1 five-step actions, added p50",
                f"{added:.1f} ms",
                f"<= {steps['bar_ms']:g} ms",
                verdict(added <= steps["bar_ms"], steps["failed"]),
            )
        )
    return rows
