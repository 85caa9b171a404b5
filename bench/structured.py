"""``formats: ["structured_data"]``'s cost per page against plain extraction (issue 36).

python -m bench.structured [ROUNDS]

As bench/extract_cost.py measures the other outputs: an extraction worker's whole answer to one
request (``service.extraction.worker.answer``: decode, parse, fields, outputs, encode), timed with
the process's CPU clock, the best of ``ROUNDS`` rounds (default 30) over the benchmark's 20
pages. Three sets of pages: the benchmark's own (an ``og:title`` only), the same publishing a
JSON-LD ``@graph``, a microdata item, Open Graph and Twitter card tags
(harness.pages.with_structured_data), and those with an RDFa item as well, which is read by a
slower parser (service.extraction.structured). The bar: under 1 ms added a page on the first
two. Results in bench/results/structured.json.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.pages import article, with_structured_data
from service.extraction.outputs import OutputOptions
from service.extraction.worker import answer, encode_request

RESULTS = Path(__file__).parent / "results" / "structured.json"
BAR_MS = 1.0
ASKED = OutputOptions(frozenset({"structured_data"}))
PAGE_SETS: dict[str, Callable[[int], str]] = {
    "bench pages": article,
    "with JSON-LD, microdata, OG, Twitter": with_structured_data,
    "with RDFa as well": lambda index: with_structured_data(index, rdfa=True),
}
BARRED = ("bench pages", "with JSON-LD, microdata, OG, Twitter")


def best_ms(frames: list[bytes], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for frame in frames:
            answer(frame)
        best = min(best, (time.process_time() - start) / len(frames))
    return best * 1000


def frames(pages: list[str], options: OutputOptions | None) -> list[bytes]:
    """Each page's request payload, without the 4-byte length that frames it on the pipe."""
    return [
        encode_request(page, f"http://127.0.0.1/article-{i}.html", None, options)[4:]
        for i, page in enumerate(pages)
    ]


def measure(rounds: int = 30) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, make in PAGE_SETS.items():
        pages = [make(i) for i in range(20)]
        plain = best_ms(frames(pages, None), rounds)
        asked = best_ms(frames(pages, ASKED), rounds)
        figures[name] = {
            "plain_ms": round(plain, 3),
            "structured_data_ms": round(asked, 3),
            "added_ms": round(asked - plain, 3),
            "x_plain": round(asked / plain, 3),
            "bar_ms": BAR_MS if name in BARRED else None,
        }
        print(
            f"{name:<40} plain {plain:6.3f} ms/page, with structured_data {asked:6.3f} "
            f"(+{asked - plain:.3f} ms, {asked / plain:.2f}x)",
            flush=True,
        )
    return figures


def main(rounds: int = 30) -> None:
    figures = measure(rounds)
    met = all(figures[name]["added_ms"] < BAR_MS for name in BARRED)
    results = {"rounds": rounds, "pages": 20, "bar_met": met, "figures": figures}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"bar (< {BAR_MS} ms added a page): {'met' if met else 'NOT met'}; written: {RESULTS}")
    if not met:
        sys.exit(1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
