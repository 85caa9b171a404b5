"""The ScrapingHub article-extraction benchmark as a second, real corpus.

181 real article pages with their ``articleBody`` (ScrapingHub's article-extraction-benchmark
repository, MIT). It is not vendored: clone it and pass its directory,
``python -m bench.content.score --real DIR`` (``DIR/html/*.html.gz``, ``DIR/ground-truth.json``).

Besides this benchmark's token F1, ``shingle_f1`` computes the benchmark's own figure (4-gram
shingles, per-page counts normalised, precision and recall averaged over pages, F1 of the two
averages), so that results compare with its published table.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter
from pathlib import Path

_TOKEN = re.compile(r"\w+")


def load(directory: Path) -> list[tuple[str, str, str, str]]:
    """(name, url, html, expected body) for every page of the benchmark.

    A directory of ``*/source.html`` and ``*/expected.html`` (mozilla/readability's
    ``test/test-pages``) is read too: its expected text is Readability.js's output, real pages
    but a machine's ground truth."""
    if not (directory / "ground-truth.json").exists():
        return _load_readability(directory)
    truth = json.loads((directory / "ground-truth.json").read_text())
    pages = []
    for name, item in sorted(truth.items()):
        raw = gzip.decompress((directory / "html" / f"{name}.html.gz").read_bytes())
        html = raw.decode("utf-8", errors="replace")
        pages.append((name, item.get("url", ""), html, item.get("articleBody", "")))
    return pages


def _load_readability(directory: Path) -> list[tuple[str, str, str, str]]:
    from selectolax.lexbor import LexborHTMLParser

    pages = []
    for case in sorted(p for p in directory.iterdir() if (p / "expected.html").exists()):
        expected = LexborHTMLParser((case / "expected.html").read_text(errors="replace"))
        root = expected.body or expected.root
        text = root.text(separator=" ") if root is not None else ""
        url = f"http://fakehost/{case.name}/"  # the URL readability's tests use
        pages.append((case.name, url, (case / "source.html").read_text(errors="replace"), text))
    return pages


def _shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens)


def _tp_fp_fn(expected: str, predicted: str) -> tuple[float, float, float]:
    e, p = _shingles(expected), _shingles(predicted)
    tp = float(sum((e & p).values()))
    fp = float(sum((p - e).values()))
    fn = float(sum((e - p).values()))
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def shingle_f1(pairs: list[tuple[str, str]]) -> tuple[float, float, float]:
    """The benchmark's (precision, recall, F1) over (expected, predicted) pairs."""
    counts = [_tp_fp_fn(e, p) for e, p in pairs]

    def precision(tp: float, fp: float, fn: float) -> float:
        if fp == fn == 0:
            return 1.0
        return tp / (tp + fp) if tp + fp else 0.0

    def recall(tp: float, fp: float, fn: float) -> float:
        if fp == fn == 0:
            return 1.0
        return tp / (tp + fn) if tp + fn else 0.0

    p = statistics.mean(precision(*c) for c in counts if c[0] + c[1] > 0)
    r = statistics.mean(recall(*c) for c in counts if c[0] + c[2] > 0)
    return p, r, 2 * p * r / (p + r) if p + r else 0.0
