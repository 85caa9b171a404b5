"""End to end: a document's markdown and text as a reader sees the source, and its pages
counted from its content.

The PDF is printed by Chromium (the system Chromium through Playwright, in a process of its own)
from a page of long justified paragraphs in a narrow column, a title that wraps over two lines,
compound words with hyphens that land at line ends, and words with soft hyphens.
"""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.test_e2e_documents import CHROMIUM, PRINT

pytestmark = pytest.mark.engine

WORDS = (
    "harbour quay cargo vessel tonnage dredging basin tide pilot berth crane container ledger "
    "income budget audit storm channel buoy lighthouse customs freight manifest schedule"
).split()
# compounds the source writes with hyphens: one that ends a printed line keeps its hyphen
COMPOUNDS = ("Zwei-Faktor-Authentifizierung", "Hafen-Lotsen-Dienst", "state-of-the-art")
TITLE = "The harbour authority's annual report on dredging, cargo tonnage and the winter storms"
# a printed page's characters a reader never wants: controls and noncharacters
UNWANTED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")


def source_paragraphs() -> list[str]:
    """Paragraphs of 2 to 12 printed lines, many with a hyphenated compound."""
    rng = random.Random(43)
    paragraphs = []
    for _ in range(14):
        words = []
        for _ in range(rng.randint(20, 130)):
            words.append(rng.choice(COMPOUNDS) if rng.random() < 0.15 else rng.choice(WORDS))
        text = " ".join(words)
        paragraphs.append(text[0].upper() + text[1:] + ".")
    return paragraphs


SOFT = "super\u00adcali\u00adfragilistic\u00adexpiali\u00addocious"


def article_html() -> str:
    style = (
        "body{font:15px/1.4 serif;width:420px} p{text-align:justify;margin:0 0 1em}"
        "h1{font-size:28px;width:420px}"
    )
    paragraphs = source_paragraphs()
    soft = " ".join(["the"] + [SOFT] * 12) + "."
    body = "".join(f"<p>{text}</p>" for text in [*paragraphs, soft])
    head = f"<head><title>{TITLE}</title><style>{style}</style></head>"
    return f"<html>{head}<body><h1>{TITLE}</h1>{body}</body></html>"


@pytest.fixture(scope="module")
def article(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out: Path = tmp_path_factory.mktemp("layout")
    (out / "article.html").write_text(article_html())
    subprocess.run([sys.executable, "-c", PRINT, str(out), CHROMIUM], check=True, timeout=120)
    return (out / "article.pdf").read_bytes()


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def test_the_printed_article_is_what_the_test_needs(article: bytes) -> None:
    """The PDF has what the checks below are about: pages, a title on two lines, hyphens that
    pdfium marks U+FFFE at a line end, and soft hyphens printed at a line end."""
    pdf = pdfium.PdfDocument(article)
    try:
        assert len(pdf) >= 2
        text = "".join(pdf[index].get_textpage().get_text_range() for index in range(len(pdf)))
    finally:
        pdf.close()
    assert text.count("\ufffe") >= 3
    assert "\u2010\r\n" in text
    first_line = text.split("\r\n")[0]
    assert TITLE.startswith(first_line) and len(first_line) < len(TITLE)  # the title wraps


def test_a_pdf_gives_a_paragraph_per_paragraph_and_a_heading_per_title(
    service: ServiceProcess, site: TargetSite, article: bytes, paying: tuple[int, str]
) -> None:
    _, key = paying
    site.page("/layout/article.pdf", article, **{"Content-Type": "application/pdf"})
    body = {"url": site.url("/layout/article.pdf"), "formats": ["markdown"]}
    result = service.scrape(key, body).json
    assert result["success"] is True, result
    expected = [*source_paragraphs(), " ".join(["the"] + [SOFT.replace("\u00ad", "")] * 12) + "."]
    assert result["markdown"].split("\n\n") == [f"# {TITLE}", *expected]
    assert result["headings"] == {"h1": [TITLE]}
    assert result["title"] == TITLE
    assert result["text"].split("\n") == [TITLE, *expected]
    for field in ("markdown", "text"):
        assert not UNWANTED.search(result[field]), UNWANTED.findall(result[field])
    assert result["credits_charged"] == 1


def long_docx(characters: int) -> bytes:
    """A DOCX as python-docx writes it: its template declares one page, whatever follows."""
    import docx

    document = docx.Document()
    rng = random.Random(7)
    written = 0
    while written < characters:
        text = " ".join(rng.choice(WORDS) for _ in range(120)).capitalize() + "."
        document.add_paragraph(text)
        written += len(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_docx_is_billed_by_the_pages_its_text_fills(
    service: ServiceProcess, site: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    body = long_docx(100_000)
    site.page("/layout/long.docx", body, **{"Content-Type": "application/octet-stream"})
    result = service.scrape(key, {"url": site.url("/layout/long.docx")}).json
    assert result["success"] is True, result
    # one page per started 3,000 characters (docs/documents.md), not the template's one
    pages = -(-len(result["text"].replace("\n", "")) // 3000)
    assert result["document"]["pages"] == pages >= 34
    assert result["credits_charged"] == -(-pages // 10) >= 4
    assert accounts.summary(account)["balance"] == 100 - result["credits_charged"]


def test_a_docx_past_the_page_limit_fails_too_large_unbilled(
    database_url: str,
    tmp_path: Path,
    site: TargetSite,
    accounts: Accounts,
    paying: tuple[int, str],
) -> None:
    account, key = paying
    site.page("/layout/limit.docx", long_docx(100_000), **{"Content-Type": "application/pdf"})
    limited = ServiceProcess(
        database_url, tmp_path, env={"SCRAPESPY_DOCUMENT_MAX_PAGES": "20"}
    ).start()
    try:
        result = limited.scrape(key, {"url": site.url("/layout/limit.docx")}).json
    finally:
        limited.stop()
    assert (result["success"], result["error_code"]) == (False, "too_large"), result
    assert "SCRAPESPY_DOCUMENT_MAX_PAGES" in result["error"]
    assert result["credits_charged"] == 0
    assert accounts.summary(account)["balance"] == 100
