"""Score main-content extractors and markdown converters: ``python -m bench.content.score``.

Quality is the token-level precision, recall and F1 of the extracted text against each page's
``.expected.txt``: lowercase word tokens (``\\w+``), multiset overlap, as in the trafilatura and
ScrapingHub article-extraction benchmarks. Macro averages the per-page figures; micro pools the
token counts of all pages.

Speed is measured in this one process on the same pages: for every page each candidate runs
``--repeat`` times in turn with the others (so drift hits all alike) and keeps its best time; the
table gives the median of those per-page bests and the median per-page ratio to trafilatura's.

Markdown converters all get the same input, the main-content HTML that ``lexbor_main`` selects
(absolute URLs), and are checked against the snippets of ``.expected.md`` (a table, a fenced code
block, a heading, an absolute link and image), compared after normalising whitespace, escapes,
fence info strings and table rule widths.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.content import candidates, realset
from bench.content.make_corpus import CORPUS, SNIPPET_SEPARATOR
from service.extraction import main_content as lexbor_main

BASELINE = "trafilatura extract"
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text.lower()))


@dataclass
class Score:
    tp: int
    predicted: int
    expected: int

    @property
    def precision(self) -> float:
        return self.tp / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.expected if self.expected else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score(predicted: str, expected: str) -> Score:
    p, e = tokens(predicted), tokens(expected)
    return Score(sum((p & e).values()), sum(p.values()), sum(e.values()))


@dataclass
class Page:
    name: str
    url: str
    layout: str
    split: str
    html: str
    expected: str
    snippets: list[str]


def load_pages(pattern: str = "*") -> list[Page]:
    index = json.loads((CORPUS / "index.json").read_text())
    pages = []
    for name, meta in index.items():
        if not Path(name).match(pattern):
            continue
        md = CORPUS / f"{name}.expected.md"
        snippets = md.read_text().split(SNIPPET_SEPARATOR) if md.exists() else []
        pages.append(
            Page(
                name,
                meta["url"],
                meta["layout"],
                meta.get("split", "tuning"),
                (CORPUS / f"{name}.html").read_text(),
                (CORPUS / f"{name}.expected.txt").read_text(),
                [s.strip() for s in snippets if s.strip()],
            )
        )
    return pages


_FENCE = re.compile(r"^(`{3,}|~{3,})\S*$")
_RULE_CELL = re.compile(r":?-{3,}:?")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def normalise_markdown(md: str) -> str:
    lines = []
    for line in md.splitlines():
        line = " ".join(_ESCAPE.sub(r"\1", line).split())
        if not line:
            continue
        if _FENCE.match(line):
            line = "```"
        if line.startswith("|"):
            line = re.sub(r"\s*\|\s*", "|", _RULE_CELL.sub("---", line))
        lines.append(line)
    return "\n".join(lines)


def snippets_found(md: str, snippets: list[str]) -> int:
    text = normalise_markdown(md)
    return sum(normalise_markdown(s) in text for s in snippets)


@dataclass
class Run:
    scores: dict[str, Score] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    snippets: int = 0
    snippets_total: int = 0


def best_time(fn: Callable[[str, str], str], html: str, url: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(html, url)
        best = min(best, time.perf_counter() - start)
    return best


def measure(
    pages: list[Page], table: dict[str, Callable[[str, str], str]], repeat: int, budget: float,
    quality: Callable[[str, Page, Run], None],
) -> dict[str, Run]:  # fmt: skip
    return measure_with(pages, table, repeat, budget, quality, {})


def measure_with(
    pages: list[Page], table: dict[str, Callable[[str, str], str]], repeat: int, budget: float,
    quality: Callable[[str, Page, Run], None], runs: dict[str, Run],
) -> dict[str, Run]:  # fmt: skip
    runs.update({name: Run() for name in table})
    deadline = time.monotonic() + budget
    for page in pages:
        for name, fn in table.items():
            quality(fn(page.html, page.url), page, runs[name])
        # Candidates take turns, best of `repeat` each, until the time budget is spent.
        if time.monotonic() < deadline:
            for _ in range(repeat):
                for name, fn in table.items():
                    t = best_time(fn, page.html, page.url, 1)
                    previous = runs[name].seconds.get(page.name, float("inf"))
                    runs[name].seconds[page.name] = min(previous, t)
    return runs


def text_quality(out: str, page: Page, run: Run) -> None:
    run.scores[page.name] = score(out, page.expected)


def markdown_quality(out: str, page: Page, run: Run) -> None:
    run.snippets += snippets_found(out, page.snippets)
    run.snippets_total += len(page.snippets)


def ratio(run: Run, base: Run | None) -> str:
    if base is None or not run.seconds:
        return "-"
    common = [n for n in run.seconds if n in base.seconds]
    return f"{statistics.median(run.seconds[n] / base.seconds[n] for n in common):.2f}x"


def ms(run: Run) -> str:
    return f"{statistics.median(run.seconds.values()) * 1000:.2f}" if run.seconds else "-"


def text_table(runs: dict[str, Run]) -> list[str]:
    base = runs.get(BASELINE)
    rows = [
        "| candidate | P macro | R macro | F1 macro | F1 micro | F1 min | ms/page (median) | vs trafilatura |",  # noqa: E501
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        s = list(run.scores.values())
        pooled = Score(
            sum(x.tp for x in s), sum(x.predicted for x in s), sum(x.expected for x in s)
        )
        p, r, f = (statistics.mean(getattr(x, a) for x in s) for a in ("precision", "recall", "f1"))
        rows.append(
            f"| {name} | {p:.3f} | {r:.3f} | {f:.3f} | "
            f"{pooled.f1:.3f} | {min(x.f1 for x in s):.3f} | {ms(run)} | {ratio(run, base)} |"
        )
    return rows


def grouped_table(runs: dict[str, Run], pages: list[Page], attr: str) -> list[str]:
    """F1 macro of each candidate per value of ``attr`` (``layout`` or ``split``)."""
    groups = sorted({getattr(p, attr) for p in pages})
    rows = ["| candidate | " + " | ".join(groups) + " |", "|---" * (len(groups) + 1) + "|"]
    for name, run in runs.items():
        cells = []
        for group in groups:
            f1s = [run.scores[p.name].f1 for p in pages if getattr(p, attr) == group]
            cells.append(f"{statistics.mean(f1s):.2f}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return rows


def markdown_table(runs: dict[str, Run], base: Run | None) -> list[str]:
    rows = [
        "| markdown | snippets found | ms/page (median) | vs trafilatura extract |",
        "|---|---|---|---|",
    ]
    for name, run in runs.items():
        rows.append(
            f"| {name} | {run.snippets}/{run.snippets_total} | {ms(run)} | {ratio(run, base)} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per page and candidate")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds of timing per table")
    parser.add_argument("--pages", default="*", help="glob on page names")
    parser.add_argument("--per-page", action="store_true", help="print every page's F1")
    parser.add_argument("--real", type=Path, help="a checkout of the ScrapingHub benchmark")
    args = parser.parse_args(argv)
    text = candidates.available(candidates.TEXT_CANDIDATES)
    if args.real:
        return score_real(args.real, text, args.repeat, args.budget)
    pages = load_pages(args.pages)
    missing = set(candidates.TEXT_CANDIDATES) - set(text)
    print(f"{len(pages)} pages; not installed: {', '.join(sorted(missing)) or 'none'}\n")

    runs = measure(pages, text, args.repeat, args.budget, text_quality)
    print("\n".join(text_table(runs)) + "\n")
    print("F1 macro per split (holdout was written blind to lexbor_main 54cdd90, holdout2 to")
    print("d5180c6; both have been seen since, see docs/content.md):\n")
    print("\n".join(grouped_table(runs, pages, "split")) + "\n")
    print("F1 macro per layout:\n")
    print("\n".join(grouped_table(runs, pages, "layout")) + "\n")
    if args.per_page:
        for page in pages:
            f1s = " ".join(f"{runs[n].scores[page.name].f1:.3f}" for n in runs)
            print(f"{page.name:28} {f1s}")
        print()

    md_pages = [p for p in pages if p.snippets]
    fragments = [
        Page(p.name, p.url, p.layout, p.split, lexbor_main.extract_main(p.html, p.url, False).html,
             p.expected, p.snippets)
        for p in md_pages
    ]  # fmt: skip
    converters = measure(
        fragments,
        candidates.available(candidates.MARKDOWN_CONVERTERS),
        args.repeat,
        args.budget,
        markdown_quality,
    )
    pipelines = measure(
        md_pages,
        {BASELINE: candidates.trafilatura_text}
        | candidates.available(candidates.MARKDOWN_PIPELINES),
        args.repeat,
        args.budget,
        markdown_quality,
    )
    base = pipelines.pop(BASELINE)
    print(f"Markdown converters on lexbor_main's HTML ({len(md_pages)} pages):\n")
    print("\n".join(markdown_table(converters, base)) + "\n")
    print("Whole pipelines, page to main-content markdown:\n")
    print("\n".join(markdown_table(pipelines, base)))
    return 0


def score_real(
    directory: Path, text: dict[str, Callable[[str, str], str]], repeat: int, budget: float
) -> int:
    pages = [
        Page(name, url, "real", "real", html, body, [])
        for name, url, html, body in realset.load(directory)
    ]
    outputs: dict[str, dict[str, str]] = {name: {} for name in text}

    def keep(out: str, page: Page, run: Run) -> None:
        text_quality(out, page, run)
        outputs[next(n for n, r in runs_ref.items() if r is run)][page.name] = out

    runs_ref: dict[str, Run] = {}
    runs = measure_with(pages, text, repeat, budget, keep, runs_ref)
    print(f"{len(pages)} real pages from {directory}\n")
    print("\n".join(text_table(runs)) + "\n")
    print("The benchmark's own figure (4-gram shingles, as its published table):\n")
    print("| candidate | precision | recall | F1 |\n|---|---|---|---|")
    for name in runs:
        pairs = [(p.expected, outputs[name][p.name]) for p in pages]
        p, r, f = realset.shingle_f1(pairs)
        print(f"| {name} | {p:.3f} | {r:.3f} | {f:.3f} |")
    pipelines = measure(
        pages,
        candidates.available(candidates.MARKDOWN_PIPELINES),
        repeat,
        budget,
        lambda out, page, run: None,
    )
    print("\nWhole pipelines, page to main-content markdown (time only):\n")
    print("| markdown | ms/page (median) | vs trafilatura extract |\n|---|---|---|")
    for name, run in pipelines.items():
        print(f"| {name} | {ms(run)} | {ratio(run, runs.get(BASELINE))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
