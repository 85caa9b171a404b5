"""The content figures of ``make bench``: ``python -m bench.content_bench [--json PATH]``.

- Quality: token-level precision, recall and F1 (``bench.content.score``) of the text that
  ``only_main_content`` returns (``extract_main(...).text``) against each corpus page's
  ``.expected.txt``, macro-averaged over the pages of ``bench/content/corpus``; trafilatura's
  ``extract`` is scored on the same pages beside it.
- Cost: ``extract_main`` with markdown (main content and markdown, what a request with
  ``formats: ["markdown"], only_main_content: true`` pays) against trafilatura's ``extract``,
  in this one process on the same pages. On every page the two take ``BENCH_CONTENT_REPEAT``
  turns each (default 5), alternating, and each keeps its best time; the ratio is the median of
  the per-page ratios, so that drift hits both alike. The timing stops after
  ``BENCH_CONTENT_BUDGET`` seconds (default 30; the pages left are scored but not timed).

trafilatura is installed by ``make bench`` only (the ``bench`` extra); without it the cost and
trafilatura's scores are ``None``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.content.candidates import trafilatura_text
from bench.content.score import Page, Score, load_pages, score
from service.extraction.main_content import extract_main

REPEAT = int(os.environ.get("BENCH_CONTENT_REPEAT", "5"))
BUDGET = float(os.environ.get("BENCH_CONTENT_BUDGET", "30"))
F1_BAR = 0.96
COST_BAR = 0.5


def only_main_text(html: str, url: str) -> str:
    return extract_main(html, url, markdown=False).text


def main_and_markdown(html: str, url: str) -> str:
    return extract_main(html, url, markdown=True).markdown


def quality(scores: list[Score]) -> dict[str, float]:
    pooled = Score(
        sum(s.tp for s in scores), sum(s.predicted for s in scores), sum(s.expected for s in scores)
    )
    return {
        "precision": round(statistics.mean(s.precision for s in scores), 4),
        "recall": round(statistics.mean(s.recall for s in scores), 4),
        "f1": round(statistics.mean(s.f1 for s in scores), 4),
        "f1_micro": round(pooled.f1, 4),
        "f1_min": round(min(s.f1 for s in scores), 4),
    }


def best_times(pages: list[Page], table: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each candidate's best time on each page, the candidates taking turns."""
    best: dict[str, dict[str, float]] = {name: {} for name in table}
    deadline = time.monotonic() + BUDGET
    for page in pages:
        if time.monotonic() > deadline:
            break
        for _ in range(REPEAT):
            for name, fn in table.items():
                start = time.perf_counter()
                fn(page.html, page.url)
                took = time.perf_counter() - start
                best[name][page.name] = min(best[name].get(page.name, took), took)
    return best


def run() -> dict[str, Any]:
    pages = load_pages()
    ours = {p.name: score(only_main_text(p.html, p.url), p.expected) for p in pages}
    splits = sorted({p.split for p in pages})
    out: dict[str, Any] = {
        "pages": len(pages),
        "only_main_content": quality(list(ours.values())),
        "only_main_content_f1_by_split": {
            split: round(statistics.mean(ours[p.name].f1 for p in pages if p.split == split), 4)
            for split in splits
        },
        "f1_bar": F1_BAR,
        "trafilatura": None,
        "cost": None,
        "cost_bar": COST_BAR,
    }
    if importlib.util.find_spec("trafilatura") is None:
        return out
    import trafilatura

    out["trafilatura_version"] = trafilatura.__version__
    theirs = [score(trafilatura_text(p.html, p.url), p.expected) for p in pages]  # and warm-up
    out["trafilatura"] = quality(theirs)
    times = best_times(pages, {"scrapespy": main_and_markdown, "trafilatura": trafilatura_text})
    timed = [n for n in times["scrapespy"] if n in times["trafilatura"]]
    ours_ms = [times["scrapespy"][n] * 1000 for n in timed]
    theirs_ms = [times["trafilatura"][n] * 1000 for n in timed]
    out["cost"] = {
        "pages_timed": len(timed),
        "repeat": REPEAT,
        "main_markdown_ms_per_page": round(statistics.median(ours_ms), 3),
        "trafilatura_ms_per_page": round(statistics.median(theirs_ms), 3),
        "x_trafilatura": round(
            statistics.median(times["scrapespy"][n] / times["trafilatura"][n] for n in timed), 3
        ),
        "x_trafilatura_total": round(sum(ours_ms) / sum(theirs_ms), 3),
    }
    return out


def report(content: dict[str, Any]) -> list[str]:
    q = content["only_main_content"]
    t = content.get("trafilatura")
    lines = [
        f"content (corpus of {content['pages']} pages): only_main_content text "
        f"P {q['precision']:.3f}  R {q['recall']:.3f}  F1 {q['f1']:.3f} "
        f"(bar >= {content['f1_bar']}; micro {q['f1_micro']:.3f}, worst page {q['f1_min']:.3f})",
        "  F1 by split: "
        + ", ".join(f"{k} {v:.3f}" for k, v in content["only_main_content_f1_by_split"].items()),
    ]
    if t is not None:
        lines.append(
            f"  trafilatura extract on the same pages: P {t['precision']:.3f}  "
            f"R {t['recall']:.3f}  F1 {t['f1']:.3f}"
        )
    cost = content.get("cost")
    if cost is None:
        lines.append("  cost: trafilatura is not installed (pip install -e '.[bench]')")
    else:
        lines.append(
            f"  cost per page: main content + markdown {cost['main_markdown_ms_per_page']:.2f} ms,"
            f" trafilatura extract {cost['trafilatura_ms_per_page']:.2f} ms: "
            f"{cost['x_trafilatura']:.2f}x (bar <= {content['cost_bar']}x; "
            f"{cost['pages_timed']} pages, best of {cost['repeat']})"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures there")
    args = parser.parse_args(argv)
    content = run()
    print("\n".join(report(content)))
    if args.json:
        args.json.write_text(json.dumps(content, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
