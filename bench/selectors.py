"""A nested extraction schema's cost per page (``json.selectors``, issue 36) against plain
extraction, in an extraction worker, on the benchmark's 20 pages and on a 50-product listing.

python -m bench.selectors [ROUNDS] [--json bench/results/selectors.json]

Timed as bench.extract_cost times its variants: the worker's whole answer to one request
(``service.extraction.worker.answer``: decode, parse, fields, outputs, encode) on the process's
CPU clock, the best of ``ROUNDS`` rounds (default 30). Variants: plain (the standard fields),
flat ``selectors`` (what scrapespy had), and a nested schema (records with nested objects and
lists, CSS and XPath), whose extra cost is the figure: lxml parses the page a second time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.extract_cost import best_ms
from harness.listing import LISTING, SCHEMA
from harness.pages import article
from service.extraction import compile_selectors
from service.extraction.outputs import OutputOptions
from service.extraction.worker import encode_request

ARTICLE_SCHEMA: dict[str, Any] = {
    "name": "Article",
    "baseSelector": "body",
    "fields": [
        {"name": "title", "selector": "article h1", "type": "text"},
        {
            "name": "sections",
            "selector": "nav.nav a",
            "type": "list",
            "fields": [
                {"name": "name", "type": "text", "transform": "lowercase"},
                {"name": "url", "type": "attribute", "attribute": "href"},
            ],
        },
        {
            "name": "paragraphs",
            "selector": ".//article/p",
            "type": "nested_list",
            "fields": [
                {"name": "text", "type": "text"},
                {
                    "name": "links",
                    "selector": "a",
                    "type": "list",
                    "fields": [{"name": "href", "type": "attribute", "attribute": "href"}],
                },
            ],
        },
    ],
}
ARTICLE_FLAT = {"title": "article h1", "sections": "nav.nav a::attr(href)", "p": "article p"}
LISTING_FLAT = {"names": "h2.name", "prices": ".price", "urls": "a.more::attr(href)"}


def variants(schema: dict[str, Any], flat: dict[str, str]) -> dict[str, tuple[Any, Any]]:
    return {
        "plain": (None, None),
        "flat selectors": (compile_selectors(flat), None),
        "nested schema (json)": (None, OutputOptions(frozenset(), records=schema)),
    }


def measure(
    pages: list[str], schema: dict[str, Any], flat: dict[str, str], rounds: int
) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name, (selectors, options) in variants(schema, flat).items():
        frames = [
            encode_request(page, f"http://127.0.0.1/page-{i}.html", selectors, options)[4:]
            for i, page in enumerate(pages)
        ]
        figures[name] = round(best_ms(frames, rounds), 3)
    return figures


def main(argv: list[str]) -> None:
    rounds = int(argv[0]) if argv and argv[0].isdigit() else 30
    out = Path(argv[argv.index("--json") + 1]) if "--json" in argv else None
    sets = {
        "articles (20 bench pages)": measure(
            [article(i) for i in range(20)], ARTICLE_SCHEMA, ARTICLE_FLAT, rounds
        ),
        "listing (50 products)": measure([LISTING] * 5, SCHEMA, LISTING_FLAT, rounds),
    }
    for pages, figures in sets.items():
        plain = figures["plain"]
        print(pages)
        for name, ms in figures.items():
            extra = f"  (+{ms - plain:.3f} ms, x{ms / plain:.2f})" if name != "plain" else ""
            print(f"  {name:<22} {ms:7.3f} ms/page{extra}", flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"ms_per_page": sets, "rounds": rounds}, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
