"""The PDF converter against poppler's ``pdftotext``: pages per second and text F1.

Run with ``python -m bench.documents`` (``make bench`` does, after installing poppler-utils).
Chromium (``page.pdf()``, the system Chromium through Playwright) prints generated pages of
known text to PDFs: reports of several pages with headings, paragraphs, lists and a table.
Each converter reads the same PDFs, one after the other on one core: the service's own
(service.extraction.documents: pdf_oxide's spans), its fallback alone (pdfium's text pages,
through the same paragraphs), ``pdftotext`` (a process per file, as a service calling it would
run it) and pypdf (pure Python, the other permissive candidate installed). F1 is over
words: the words of each PDF's source text against the converter's, as multisets.

Writes ``bench/results/documents.json``; the targets (docs/documents.md) are pages per second
of at least poppler's and F1 of at least 0.95.
"""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

CHROMIUM = "/usr/bin/chromium"
RESULTS = Path(__file__).parent / "results" / "documents.json"
DOCUMENTS = 12
PAGES_EACH = 8
WORDS = (
    "harbour quay cargo vessel tonnage dredging basin tide pilot berth crane container ledger "
    "income budget audit storm channel buoy lighthouse customs freight manifest schedule "
    "engineer survey depth metre winter summer authority report annual council finance"
).split()

PRINT = """
import sys
from pathlib import Path
from playwright.sync_api import sync_playwright

out = Path(sys.argv[1])
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=sys.argv[2])
    page = browser.new_page()
    for source in sorted(out.glob("*.html")):
        page.set_content(source.read_text())
        source.with_suffix(".pdf").write_bytes(page.pdf())
    browser.close()
"""


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def source(rng: random.Random, number: int) -> tuple[str, str]:
    """One report: its HTML, and its text as a reader sees it."""
    html: list[str] = [f"<html><head><title>Report {number}</title></head><body>"]
    text: list[str] = []
    for page in range(PAGES_EACH):
        heading = f"Section {number}.{page + 1} {rng.choice(WORDS)}"
        paragraphs = [" ".join(sentence(rng) for _ in range(4)) for _ in range(5)]
        items = [sentence(rng) for _ in range(3)]
        cells = [[rng.choice(WORDS), str(rng.randint(1, 9999))] for _ in range(4)]
        html.append('<div style="page-break-after: always">')
        html.append(f"<h2>{heading}</h2>")
        html.extend(f"<p>{paragraph}</p>" for paragraph in paragraphs)
        html.append("<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>")
        rows = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in cells)
        html.append(f"<table>{rows}</table></div>")
        text.extend([heading, *paragraphs, *items, *(f"{a} {b}" for a, b in cells)])
    html.append("</body></html>")
    return "".join(html), "\n".join(text)


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def f1(expected: str, got: str) -> float:
    want, have = words(expected), words(got)
    common = sum((want & have).values())
    if not common:
        return 0.0
    precision, recall = common / sum(have.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def service_text(path: Path) -> str:
    from service.extraction.documents import PDF, convert

    fields = convert(path.read_bytes(), PDF, None, frozenset({"markdown"}), 10_000)
    return str(fields["text"])


def pdfium_text(path: Path) -> str:
    """The service's fallback reader alone: pdfium's text pages, joined into paragraphs."""
    import pypdfium2 as pdfium

    from service.extraction import documents

    pdf = pdfium.PdfDocument(path.read_bytes())
    pages = len(pdf)
    try:
        lines = [line for index in range(pages) for line in documents._page_lines(pdf, index)]
    finally:
        pdf.close()
    return "\n".join(documents._paragraphs(lines, pages, {}).lines)


def poppler_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True)
    return done.stdout.decode()


def pypdf_text(path: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(path.read_bytes()))
    return "\n".join(page.extract_text() or "" for page in reader.pages)


SERVICE: Final = "pdf_oxide spans (service.extraction.documents)"
CONVERTERS: dict[str, Callable[[Path], str]] = {
    SERVICE: service_text,
    "pdfium (pypdfium2), the service's fallback": pdfium_text,
    "poppler pdftotext": poppler_text,
    "pypdf": pypdf_text,
}


def measure(pdfs: list[tuple[Path, str]], pages: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, convert in CONVERTERS.items():
        if name.startswith("poppler") and shutil.which("pdftotext") is None:
            results[name] = {"skipped": "pdftotext is not installed (poppler-utils)"}
            continue
        convert(pdfs[0][0])  # imports and caches warm
        started = time.perf_counter()
        texts = [convert(path) for path, _ in pdfs]
        seconds = time.perf_counter() - started
        scores = [f1(expected, got) for (_, expected), got in zip(pdfs, texts, strict=True)]
        results[name] = {
            "pages_per_second": round(pages / seconds, 1),
            "f1": round(sum(scores) / len(scores), 4),
            "f1_min": round(min(scores), 4),
        }
    return results


def main() -> int:
    rng = random.Random(35)
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory)
        expected: dict[str, str] = {}
        for number in range(DOCUMENTS):
            html, text = source(rng, number)
            (out / f"report{number:02}.html").write_text(html)
            expected[f"report{number:02}"] = text
        subprocess.run([sys.executable, "-c", PRINT, str(out), CHROMIUM], check=True)
        pdfs = [(out / f"{stem}.pdf", text) for stem, text in sorted(expected.items())]
        from pypdf import PdfReader

        pages = sum(len(PdfReader(path).pages) for path, _ in pdfs)
        results = measure(pdfs, pages)
    ours = results[SERVICE]
    poppler = results["poppler pdftotext"]
    summary: dict[str, Any] = {
        "documents": DOCUMENTS,
        "pages": pages,
        "converters": results,
        "targets": {"speed_vs_pdftotext": ">= 1x", "f1": ">= 0.95"},
        "speed_vs_pdftotext": (
            round(ours["pages_per_second"] / poppler["pages_per_second"], 2)
            if "pages_per_second" in poppler
            else None
        ),
        "f1": ours["f1"],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    speed_ok = summary["speed_vs_pdftotext"] is None or summary["speed_vs_pdftotext"] >= 1
    return 0 if speed_ok and summary["f1"] >= 0.95 else 1


if __name__ == "__main__":
    raise SystemExit(main())
