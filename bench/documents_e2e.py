"""``POST /scrape`` of PDFs served by nginx against poppler's ``pdftotext``: pages per second at
concurrency 1 and 4, end to end.

Run with ``python -m bench.documents_e2e`` (``make bench`` does, after installing nginx-light and
poppler-utils). Chromium (``page.pdf()``, the system Chromium through Playwright) prints the
benchmark's twenty article pages (harness/pages.py: headings, paragraphs, links) to PDFs, which
nginx serves. Each round measures, in turn, for ``BENCH_DOC_SECONDS`` seconds each:

- scrapespy: ``c`` clients, each sending ``POST /scrape`` (``formats: ["markdown"]``, a funded
  key, SQLite) for the PDFs in turn over a kept-alive connection; a page counts when its answer
  succeeded with the document's pages;
- pdftotext: ``c`` clients, each running ``pdftotext -enc UTF-8 FILE -`` on the same PDFs, read
  from the local disk (no HTTP fetch: the stricter yardstick).

Rounds alternate which goes first (the machine drifts between minutes); each round's ratio is
scrapespy's pages per second over pdftotext's, and the figure is the median of those ratios.

Beside them, the floor of a service built on each PDF reader (:func:`native_floor`): the CPU time
the reader alone takes to read each page's text (pdf_oxide's spans, which the service reads;
pdfium's page and text page, its fallback), over the CPU time of ``pdftotext``'s whole process
for the same files. When CPU-bound (c=4 on two cores), the service cannot go faster than that
ratio times ``pdftotext``, whatever it does around the reader.
Writes ``bench/results/documents_e2e.json``; the target (docs/documents.md) is >= 1x at both
concurrencies.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.contenders import scrapespy
from bench.documents import CHROMIUM, PRINT
from bench.site import serve, stop
from harness.pages import article

RESULTS = Path(__file__).parent / "results" / "documents_e2e.json"
SECONDS = float(os.environ.get("BENCH_DOC_SECONDS", "6"))
ROUNDS = int(os.environ.get("BENCH_DOC_ROUNDS", "5"))
CONCURRENCIES = (1, 4)
DOCUMENTS = 20


def print_pdfs(folder: Path) -> dict[str, int]:
    """The article pages printed to ``folder``/NAME.pdf: each PDF's name -> its pages."""
    import pypdfium2 as pdfium

    for index in range(DOCUMENTS):
        (folder / f"article-{index}.html").write_text(article(index))
    subprocess.run([sys.executable, "-c", PRINT, str(folder), CHROMIUM], check=True)
    pages = {}
    for path in sorted(folder.glob("*.pdf")):
        document = pdfium.PdfDocument(path.read_bytes())
        pages[path.name] = len(document)
        document.close()
    return pages


def clients(
    concurrency: int, seconds: float, one: Callable[[int, http.client.HTTPConnection | None], int]
) -> tuple[float, int]:
    """``concurrency`` threads calling ``one(turn, connection)`` until ``seconds`` have passed:
    pages per second and failures."""
    pages = [0] * concurrency
    failures = [0] * concurrency
    stop_at = time.monotonic() + seconds

    def run(index: int) -> None:
        turn = index * 7
        while time.monotonic() < stop_at:
            done = one(turn, None)
            if done > 0:
                pages[index] += done
            else:
                failures[index] += 1
            turn += 1

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(index,)) for index in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(pages) / (time.monotonic() - started), sum(failures)


class Scraper:
    """One kept-alive connection per client thread to the service."""

    def __init__(self, base: str, key: str, site: str, pages: dict[str, int]) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.key, self.site = key, site
        self.names = sorted(pages)
        self.pages = pages
        self.local = threading.local()

    def __call__(self, turn: int, _: Any) -> int:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
            self.local.connection = connection
        name = self.names[turn % len(self.names)]
        body = json.dumps({"url": f"{self.site}/{name}", "formats": ["markdown"]})
        headers = {"Content-Type": "application/json", "X-API-Key": self.key}
        try:
            connection.request("POST", "/scrape", body, headers)
            answer = json.loads(connection.getresponse().read())
        except (OSError, http.client.HTTPException, ValueError):
            connection.close()
            self.local.connection = None
            return 0
        document = answer.get("document") or {}
        ok = answer.get("success") and answer.get("markdown")
        return int(document.get("pages", 0)) if ok else 0


def pdftotext(folder: Path, pages: dict[str, int]) -> Callable[[int, Any], int]:
    names = sorted(pages)

    def one(turn: int, _: Any) -> int:
        name = names[turn % len(names)]
        done = subprocess.run(
            ["pdftotext", "-enc", "UTF-8", str(folder / name), "-"], capture_output=True
        )
        return pages[name] if done.returncode == 0 and done.stdout else 0

    return one


def native_floor(folder: Path, pages: dict[str, int], repeats: int = 5) -> dict[str, float]:
    """CPU milliseconds a page: each reader alone reading each page's text in this process
    (pdfium loading the page and its text page; pdf_oxide its text spans, what the service
    reads) and ``pdftotext`` (its processes, start included); the median of three rounds."""
    import resource

    import pdf_oxide
    import pypdfium2 as pdfium

    names, total = sorted(pages), sum(pages.values()) * repeats
    data = {name: (folder / name).read_bytes() for name in names}

    def children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def with_pdfium(body: bytes) -> None:
        document = pdfium.PdfDocument(body)
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            textpage.get_text_range()
            textpage.close()
            page.close()
        document.close()

    def with_oxide(body: bytes) -> None:
        document = pdf_oxide.PdfDocument.from_bytes(body)
        for index in range(document.page_count()):
            document.extract_spans(index)

    readers: dict[str, list[float]] = {"pdfium": [], "pdf_oxide": []}
    theirs = []
    for _ in range(3):
        for reader, read in (("pdfium", with_pdfium), ("pdf_oxide", with_oxide)):
            started = time.process_time()
            for _ in range(repeats):
                for name in names:
                    read(data[name])
            readers[reader].append((time.process_time() - started) * 1000 / total)
        started = children()
        for _ in range(repeats):
            for name in names:
                subprocess.run(
                    ["pdftotext", "-enc", "UTF-8", str(folder / name), "-"],
                    capture_output=True,
                    check=True,
                )
        theirs.append((children() - started) * 1000 / total)
    pdftotext_ms = statistics.median(theirs)
    floor = {"pdftotext_cpu_ms_per_page": round(pdftotext_ms, 3)}
    for reader, found in readers.items():
        reader_ms = statistics.median(found)
        floor[f"{reader}_text_cpu_ms_per_page"] = round(reader_ms, 3)
        floor[f"{reader}_ceiling_x_pdftotext"] = round(pdftotext_ms / reader_ms, 3)
    return floor


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-docs-") as directory:
        work = Path(directory)
        folder = work / "site"
        folder.mkdir()
        pages = print_pdfs(folder)
        floor = native_floor(folder, pages)
        print(f"  the readers alone: {floor}")
        site, base = serve(folder)
        (work / "service").mkdir()
        proc, key = scrapespy(f"sqlite:///{work / 'docs.db'}", work / "service")
        try:
            ours = Scraper(proc.base, key, base, pages)
            theirs = pdftotext(folder, pages)
            clients(2, 3, ours)  # warm-up: robots.txt, workers, connections
            clients(2, 1, theirs)
            figures: dict[str, Any] = {}
            for concurrency in CONCURRENCIES:
                turns: dict[str, list[float]] = {"scrapespy": [], "pdftotext": []}
                failed = 0
                for turn in range(ROUNDS):
                    pair = [("scrapespy", ours), ("pdftotext", theirs)]
                    for name, one in pair if turn % 2 == 0 else pair[::-1]:
                        rate, failures = clients(concurrency, SECONDS, one)
                        turns[name].append(round(rate, 1))
                        failed += failures
                        print(f"  c={concurrency} {name:<9} round {turn + 1}: {rate:.1f} pages/s")
                ratios = [
                    round(a / b, 3)
                    for a, b in zip(turns["scrapespy"], turns["pdftotext"], strict=True)
                    if b
                ]
                figures[f"c{concurrency}"] = {
                    "scrapespy_pages_per_second": statistics.median(turns["scrapespy"]),
                    "pdftotext_pages_per_second": statistics.median(turns["pdftotext"]),
                    "x_pdftotext": statistics.median(ratios),
                    "x_pdftotext_rounds": ratios,
                    "turns": turns,
                    "failed": failed,
                }
        finally:
            proc.stop()
            stop(site)
    summary = {
        "documents": len(pages),
        "pages": sum(pages.values()),
        "seconds_per_turn": SECONDS,
        "rounds": ROUNDS,
        "cores": os.cpu_count(),
        "request": {"formats": ["markdown"], "engine": "static", "database": "sqlite"},
        "target": ">= 1x pdftotext at c=1 and c=4",
        "readers_alone": floor,
        **figures,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "turns"}, indent=2))
    ok = all(figures[f"c{c}"]["x_pdftotext"] >= 1 for c in CONCURRENCIES)
    return 0 if ok and not any(figures[f"c{c}"]["failed"] for c in CONCURRENCIES) else 1


if __name__ == "__main__":
    raise SystemExit(main())
