"""End to end: a target that answers a PDF gets it converted, billed per block of pages.

The PDFs are made here by real tools: Chromium printing pages (``page.pdf()``, the system
Chromium through Playwright), and pypdf encrypting one of them.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader, PdfWriter

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.billing import keys
from tests.conftest import a_database_of_its_own

CHROMIUM = "/usr/bin/chromium"
REPORT = """<html><head><title>Harbour Authority Annual Report</title></head><body>
<h1>Harbour Authority Annual Report</h1>
<p>Cargo tonnage through the eastern quays rose by eleven percent over the year.</p>
<h2>Dredging programme</h2>
<p>The inner basin was dredged to a depth of nine metres before the winter storms.</p>
<p>&#8226; Fenders out</p><p>&#8226; Lines doubled</p>
<div style="page-break-before: always"><h2>Finances</h2>
<p>Operating income covered the dredging costs without new borrowing.</p></div>
</body></html>"""
# a page of a long document: the page break makes each a page of its own
LONG_PAGE = (
    '<div style="page-break-after: always"><p>Ledger page {n} of the long register.</p></div>'
)
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
SCAN = (
    f'<html><body><img src="data:image/png;base64,{PIXEL}" width="500" height="700"></body></html>'
)

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


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The documents, printed by Chromium (in a process of its own: Playwright's sync API
    does not run beside the tests' reactor)."""
    out: Path = tmp_path_factory.mktemp("pdfs")
    (out / "report.html").write_text(REPORT)
    (out / "scan.html").write_text(SCAN)
    long = "".join(LONG_PAGE.format(n=n) for n in range(1, 26))
    (out / "long.html").write_text(f"<html><body>{long}</body></html>")
    subprocess.run([sys.executable, "-c", PRINT, str(out), CHROMIUM], check=True, timeout=120)
    made = {path.stem: path.read_bytes() for path in out.glob("*.pdf")}
    writer = PdfWriter(clone_from=io.BytesIO(made["report"]))
    writer.encrypt(user_password="secret", owner_password="owner")
    encrypted = io.BytesIO()
    writer.write(encrypted)
    made["encrypted"] = encrypted.getvalue()
    return made


@pytest.fixture(scope="module")
def served(site: TargetSite, pdfs: dict[str, bytes]) -> TargetSite:
    for name, body in pdfs.items():
        site.page(f"/docs/{name}.pdf", body, **{"Content-Type": "application/pdf"})
    # a server that says HTML and sends a PDF
    site.page("/docs/lying", pdfs["report"], **{"Content-Type": "text/html; charset=utf-8"})
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def test_the_long_pdf_has_as_many_pages_as_printed(pdfs: dict[str, bytes]) -> None:
    assert len(PdfReader(io.BytesIO(pdfs["long"])).pages) == 25


def test_a_pdf_is_converted_to_markdown_and_text(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    formats = ["markdown", "raw_html", "structured_data"]
    body = {"url": served.url("/docs/report.pdf"), "formats": formats}
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    result = reply.json
    assert result["success"] is True, result
    assert result["error_code"] is None
    assert result["title"] == "Harbour Authority Annual Report"
    assert result["document"]["type"] == "pdf"
    assert result["document"]["pages"] == 2
    assert result["document"]["title"] == "Harbour Authority Annual Report"
    assert result["document"]["created"].startswith("20")
    assert result["raw_html"] is None
    assert result["structured_data"] is None  # no page markup to read
    markdown = result["markdown"]
    assert markdown.startswith("# Harbour Authority Annual Report\n")
    assert "## Dredging programme" in markdown and "## Finances" in markdown
    assert "\n- Fenders out\n- Lines doubled\n" in markdown  # bullets as Word prints them
    assert markdown.index("Cargo tonnage") < markdown.index("Dredging programme")
    assert "eleven percent over the year" in result["text"]
    assert result["headings"]["h2"] == ["Dredging programme", "Finances"]
    # two pages: one block of ten, the static engine's price
    assert result["credits_charged"] == 1
    assert accounts.summary(account)["balance"] == 99


def test_a_pdf_sent_as_html_is_still_converted(
    service: ServiceProcess, served: TargetSite, paying: tuple[int, str]
) -> None:
    _, key = paying
    result = service.scrape(key, {"url": served.url("/docs/lying")}).json
    assert result["success"] is True, result
    assert result["document"]["pages"] == 2
    assert "Cargo tonnage" in result["text"]
    assert "%PDF" not in result["text"]


def test_a_page_answer_has_no_document_field(
    service: ServiceProcess, served: TargetSite, paying: tuple[int, str]
) -> None:
    _, key = paying
    served.page("/docs/index.html", "<html><title>Index</title><p>Plain page</p></html>")
    result = service.scrape(key, {"url": served.url("/docs/index.html")}).json
    assert result["success"] is True and "document" not in result


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("scan", "document_no_text", "no text layer"),
        ("encrypted", "document_encrypted", "encrypted"),
    ],
)
def test_a_pdf_that_cannot_be_read_fails_unbilled(
    service: ServiceProcess,
    served: TargetSite,
    accounts: Accounts,
    paying: tuple[int, str],
    name: str,
    code: str,
    words: str,
) -> None:
    account, key = paying
    result = service.scrape(key, {"url": served.url(f"/docs/{name}.pdf")}).json
    assert result["success"] is False, result
    assert result["error_code"] == code
    assert words in result["error"]
    assert result["credits_charged"] == 0
    summary = accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (100, 0)


def test_a_document_is_billed_per_started_block_of_pages(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    assert call("GET", service.url("/pricing")).json["document_pages_per_block"] == 10
    # auto holds the js price (5): 25 pages are 3 blocks of 10 at the static price (1)
    result = service.scrape(key, {"url": served.url("/docs/long.pdf"), "engine": "auto"}).json
    assert result["success"] is True, result
    assert (result["engine"], result["document"]["pages"]) == ("static", 25)
    assert "Ledger page 25 of the long register." in result["text"]
    assert result["credits_charged"] == 3
    assert accounts.summary(account)["balance"] == 97
    assert accounts.entries_sum(account) == 97


def test_a_document_costing_more_than_its_hold_is_billed_in_full(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    # static holds its own price (1); the 3 blocks extend the hold before it is captured
    reply = service.scrape(key, {"url": served.url("/docs/long.pdf"), "formats": ["markdown"]})
    result = reply.json
    assert result["success"] is True, result
    assert (result["engine"], result["document"]["pages"]) == ("static", 25)
    assert result["credits_charged"] == 3
    assert reply.headers["X-Credits-Charged"] == "3"
    assert reply.headers["X-Credits-Remaining"] == "97"
    assert "Ledger page 25 of the long register." in result["markdown"]
    summary = accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (97, 0)
    assert accounts.entries_sum(account) == 97


def over_budget(result: dict[str, Any]) -> None:
    """A 25-page document refused: unbilled, its pages named, its content not given."""
    assert (result["success"], result["error_code"]) == (False, "document_over_budget"), result
    assert result["credits_charged"] == 0
    assert result["error"].startswith(
        "the document has 25 pages, 3 blocks of up to 10, which cost 3 credits, "
    ), result["error"]
    assert result["error"].endswith("; nothing was charged")
    assert result["document"]["pages"] == 25
    assert result["text"] is None and result.get("markdown") is None and result["title"] is None


def test_a_document_the_balance_cannot_cover_fails_unbilled(
    service: ServiceProcess, served: TargetSite, accounts: Accounts
) -> None:
    account, key = accounts.create(credits=1)  # one block, held; three are due
    body = {"url": served.url("/docs/long.pdf"), "formats": ["markdown"]}
    reply = service.scrape(key, body)
    assert reply.status == 200
    over_budget(reply.json)
    assert (
        "more than the balance available covers (1 held, 0 more available)" in (reply.json["error"])
    )
    assert reply.headers["X-Credits-Charged"] == "0"
    summary = accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (1, 0)
    assert accounts.entries_sum(account) == 1
    # a short document still fits the same balance
    report = service.scrape(key, {"url": served.url("/docs/report.pdf")}).json
    assert (report["success"], report["credits_charged"]) == (True, 1)


def test_a_document_over_max_credits_fails_unbilled(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    body = {"url": served.url("/docs/long.pdf"), "max_credits": 2}
    result = service.scrape(key, body).json
    over_budget(result)
    assert "more than the request's max_credits of 2" in result["error"]
    summary = accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (100, 0)
    # with room for its 3 blocks it goes through
    body["max_credits"] = 3
    assert service.scrape(key, body).json["credits_charged"] == 3
    assert accounts.summary(account)["balance"] == 97


def test_a_document_past_the_keys_monthly_cap_fails_unbilled(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    (info,) = accounts.database.run_sync(keys.listed, account)
    accounts.database.run_sync(keys.set_cap, account, info.id, 2)
    result = service.scrape(key, {"url": served.url("/docs/long.pdf")}).json
    over_budget(result)
    assert (
        "this API key's monthly cap of 2 credits (1 spent or held this month)" in (result["error"])
    )
    summary = accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (100, 0)


def test_a_document_past_the_page_limit_fails_too_large(
    database_url: str,
    tmp_path: Path,
    served: TargetSite,
    accounts: Accounts,
    paying: tuple[int, str],
) -> None:
    account, key = paying
    env = {"SCRAPESPY_DOCUMENT_MAX_PAGES": "20"}
    limited = ServiceProcess(database_url, tmp_path, env=env).start()
    try:
        result = limited.scrape(key, {"url": served.url("/docs/long.pdf")}).json
    finally:
        limited.stop()
    assert result["success"] is False
    assert result["error_code"] == "too_large"
    assert "25 pages" in result["error"] and "SCRAPESPY_DOCUMENT_MAX_PAGES" in result["error"]
    assert accounts.summary(account)["balance"] == 100


def test_the_js_engine_converts_the_pdf_not_the_viewer(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    body = {"url": served.url("/docs/report.pdf"), "engine": "js", "formats": ["markdown"]}
    result = service.scrape(key, body).json
    assert result["success"] is True, (result["error"], result["error_code"])
    assert (result["engine"], result["document"]["pages"]) == ("js", 2)
    assert result["markdown"].startswith("# Harbour Authority Annual Report\n")
    assert "Cargo tonnage" in result["text"]
    assert result["credits_charged"] == 5
    assert accounts.summary(account)["balance"] == 95


def test_the_js_engine_converts_a_pdf_sent_as_html(
    service: ServiceProcess, served: TargetSite, paying: tuple[int, str]
) -> None:
    _, key = paying
    result = service.scrape(key, {"url": served.url("/docs/lying"), "engine": "js"}).json
    assert result["success"] is True, (result["error"], result["error_code"])
    assert result["document"]["pages"] == 2
    assert "Cargo tonnage" in result["text"] and "%PDF" not in result["text"]


OFFICE_TYPES = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "odt": "application/vnd.oasis.opendocument.text",
    "epub": "application/epub+zip",
}
ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
<office:body><office:text>
<text:h text:outline-level="1">Pilotage</text:h>
<text:p>Pilots board <text:span>two miles</text:span> off the breakwater.</text:p>
<text:list><text:list-item><text:p>Ladder on the lee side</text:p></text:list-item>
<text:list-item><text:p>Speed six knots</text:p></text:list-item></text:list>
<text:h text:outline-level="2">Fees</text:h>
<table:table><table:table-row><table:table-cell><text:p>Length</text:p></table:table-cell>
<table:table-cell><text:p>Fee</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell><text:p>Under 50 m</text:p></table:table-cell>
<table:table-cell><text:p>120</text:p></table:table-cell></table:table-row></table:table>
</office:text></office:body></office:document-content>"""
ODT_META = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
 xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3"><office:meta>
<dc:title>Pilotage Notes</dc:title><meta:initial-creator>Port Pilots</meta:initial-creator>
<meta:creation-date>2026-03-01T09:30:00</meta:creation-date>
<meta:document-statistic meta:page-count="3"/></office:meta></office:document-meta>"""
EPUB_CHAPTER = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head><body>
<h1>{title}</h1><p>{text}</p><ul><li>Tide tables</li><li>Pilot ladders</li></ul></body></html>"""
EPUB_OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">harbour</dc:identifier>
<dc:title>The Harbour Guide</dc:title><dc:creator>Port Pilots</dc:creator>
<dc:language>en</dc:language></metadata>
<manifest><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
EPUB_CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>
</rootfiles></container>"""


def office_documents() -> dict[str, bytes]:
    """A DOCX, a PPTX and an XLSX written by python-docx, python-pptx and openpyxl, and an
    EPUB and an ODT laid out as their specifications say (the mimetype first, stored)."""
    import docx
    import openpyxl
    import pptx

    made: dict[str, bytes] = {}
    document = docx.Document()
    document.core_properties.title = "Berth Rules"
    document.core_properties.author = "Harbour Master"
    document.add_heading("Berth Rules", 0)
    document.add_heading("Mooring", 1)
    document.add_paragraph("Vessels moor bow first at the eastern quay.")
    document.add_paragraph("Fenders out", style="List Bullet")
    document.add_paragraph("Lines doubled", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (row, column), text in {(0, 0): "Berth", (0, 1): "Depth", (1, 0): "East 1"}.items():
        table.cell(row, column).text = text
    table.cell(1, 1).text = "9 m"
    out = io.BytesIO()
    document.save(out)
    made["docx"] = out.getvalue()
    deck = pptx.Presentation()
    for title, point in (("Dredging plan", "Inner basin to nine metres"), ("Budget", "No loans")):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = point
    out = io.BytesIO()
    deck.save(out)
    made["pptx"] = out.getvalue()
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Tonnage"
    for row in (["Quay", "Tonnes"], ["East", 1200], ["West", 800]):
        sheet.append(row)
    book.create_sheet("Empty berths").append(["North"])
    out = io.BytesIO()
    book.save(out)
    made["xlsx"] = out.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", EPUB_CONTAINER)
        archive.writestr("OEBPS/book.opf", EPUB_OPF)
        for name, title, text in (
            ("one", "Arriving", "Call the harbour office on channel twelve."),
            ("two", "Leaving", "Give way to the ferry at the harbour mouth."),
        ):
            archive.writestr(f"OEBPS/{name}.xhtml", EPUB_CHAPTER.format(title=title, text=text))
    made["epub"] = out.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(
            "mimetype", "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr("content.xml", ODT_CONTENT)
        archive.writestr("meta.xml", ODT_META)
    made["odt"] = out.getvalue()
    return made


@pytest.fixture(scope="module")
def office(site: TargetSite) -> TargetSite:
    for kind, body in office_documents().items():
        site.page(f"/office/file.{kind}", body, **{"Content-Type": OFFICE_TYPES[kind]})
    # a server that calls every file a byte stream
    site.page(
        "/office/download",
        office_documents()["docx"],
        **{"Content-Type": "application/octet-stream"},
    )
    return site


OFFICE_EXPECTED = {
    "docx": (
        1,
        "Berth Rules",
        "# Berth Rules\n\n# Mooring\n\nVessels moor bow first at the eastern quay.\n\n"
        "- Fenders out\n- Lines doubled\n\n| Berth | Depth |\n| --- | --- |\n| East 1 | 9 m |",
    ),
    "pptx": (
        2,
        None,
        "## Dredging plan\n\n- Inner basin to nine metres\n\n## Budget\n\n- No loans",
    ),
    "xlsx": (
        2,
        None,
        "## Tonnage\n\n| Quay | Tonnes |\n| --- | --- |\n| East | 1200 |\n| West | 800 |\n\n"
        "## Empty berths\n\n| North |\n| --- |",
    ),
    "odt": (
        1,  # its text, not the 3 pages its meta.xml declares
        "Pilotage Notes",
        "# Pilotage\n\nPilots board two miles off the breakwater.\n\n"
        "- Ladder on the lee side\n- Speed six knots\n\n## Fees\n\n"
        "| Length | Fee |\n| --- | --- |\n| Under 50 m | 120 |",
    ),
    "epub": (2, "The Harbour Guide", None),
}


@pytest.mark.parametrize("kind", list(OFFICE_EXPECTED))
@pytest.mark.parametrize("engine", ["static", "js"])
def test_office_documents_and_ebooks_are_converted(
    service: ServiceProcess, office: TargetSite, paying: tuple[int, str], kind: str, engine: str
) -> None:
    _, key = paying
    body = {"url": office.url(f"/office/file.{kind}"), "engine": engine, "formats": ["markdown"]}
    result = service.scrape(key, body).json
    assert result["success"] is True, (result["error"], result["error_code"])
    pages, title, markdown = OFFICE_EXPECTED[kind]
    assert (result["document"]["type"], result["document"]["pages"]) == (kind, pages)
    assert result["document"]["title"] == title
    if markdown is not None:
        assert result["markdown"] == markdown
    else:  # the chapters through the service's own HTML conversion
        assert result["markdown"].startswith("# Arriving\n\nCall the harbour office")
        assert "# Leaving" in result["markdown"] and "- Pilot ladders" in result["markdown"]
        assert result["document"]["author"] == "Port Pilots"
    # one block of ten pages at the engine's price
    assert result["credits_charged"] == (1 if engine == "static" else 5)


def test_a_document_sent_as_a_byte_stream_is_recognised_by_its_bytes(
    service: ServiceProcess, office: TargetSite, paying: tuple[int, str]
) -> None:
    _, key = paying
    result = service.scrape(key, {"url": office.url("/office/download")}).json
    assert result["success"] is True
    assert result["document"]["type"] == "docx"
    assert result["title"] == "Berth Rules"


def test_firecrawl_py_scrapes_a_pdf_with_its_default_parsers(
    service: ServiceProcess, served: TargetSite, paying: tuple[int, str]
) -> None:
    from firecrawl import Firecrawl

    _, key = paying
    client = Firecrawl(api_key=key, api_url=service.url(""), max_retries=1)
    document = client.scrape(served.url("/docs/report.pdf"), formats=["markdown"], parsers=["pdf"])
    assert document.markdown is not None
    assert document.markdown.startswith("# Harbour Authority Annual Report")
    assert document.metadata is not None
    assert (document.metadata.num_pages, document.metadata.credits_used) == (2, 1)


def test_a_damaged_pdf_fails_unbilled(
    service: ServiceProcess, served: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    served.page(
        "/docs/damaged.pdf", b"%PDF-1.7\n1 0 obj garbage", **{"Content-Type": "application/pdf"}
    )
    result = service.scrape(key, {"url": served.url("/docs/damaged.pdf")}).json
    assert (result["success"], result["error_code"]) == (False, "document_unreadable")
    assert result["credits_charged"] == 0
    assert accounts.summary(account)["balance"] == 100


@pytest.fixture(scope="module")
def jobs_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("documents-db"))


def finished_batch(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = call("POST", service.url("/batch"), body, key=key)
    assert reply.status == 202, reply.body
    status_url = service.url(f"/jobs/{reply.json['id']}")
    deadline = time.monotonic() + 60
    while (found := call("GET", status_url, key=key).json)["counts"]["pending"]:
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    return found  # type: ignore[no-any-return]


def test_a_batch_of_documents_bills_each_by_its_blocks(
    jobs_db: tuple[str, Accounts], tmp_path: Path, served: TargetSite
) -> None:
    database_url, own_accounts = jobs_db
    account, key = own_accounts.create(credits=100)
    short, short_key = own_accounts.create(credits=2)
    urls = [served.url(f"/docs/{name}.pdf") for name in ("long", "report", "scan")]
    jobs_service = ServiceProcess(database_url, tmp_path).start()
    try:
        # static holds 1 a page: the long document's hold is extended to its 3 blocks
        found = finished_batch(jobs_service, key, {"urls": urls, "engine": "static"})
        # 2 credits: the long document's 3 blocks do not fit, the short one's 1 does
        refused = finished_batch(jobs_service, short_key, {"urls": urls[:2]})
    finally:
        jobs_service.stop()
    # 25 pages: 3 blocks; 2 pages: 1 block; the scan: failed, unbilled (static price 1)
    results = {entry["url"]: entry for entry in found["results"]}
    assert [results[url]["credits"] for url in urls] == [3, 1, 0]
    assert results[urls[0]]["result"]["document"]["pages"] == 25
    assert results[urls[0]]["result"]["credits_charged"] == 3
    assert results[urls[2]]["result"]["error_code"] == "document_no_text"
    assert found["credits_charged"] == 4
    summary = own_accounts.summary(account)
    assert (summary["balance"], summary["held"]) == (96, 0)
    assert own_accounts.entries_sum(account) == 96
    results = {entry["url"]: entry for entry in refused["results"]}
    assert [results[url]["credits"] for url in urls[:2]] == [0, 1]
    over_budget(results[urls[0]]["result"])
    assert refused["credits_charged"] == 1
    summary = own_accounts.summary(short)
    assert (summary["balance"], summary["held"]) == (1, 0)
    assert own_accounts.entries_sum(short) == 1


@pytest.mark.parametrize("engine", ["static", "js"])
def test_a_document_past_the_download_limit_fails_too_large(
    service: ServiceProcess,
    served: TargetSite,
    accounts: Accounts,
    paying: tuple[int, str],
    engine: str,
) -> None:
    account, key = paying
    huge = b"%PDF-1.7\n" + b"%" * (17 * 1024 * 1024)  # past the 16 MiB download limit
    served.page("/docs/huge.pdf", huge, **{"Content-Type": "application/pdf"})
    result = service.scrape(key, {"url": served.url("/docs/huge.pdf"), "engine": engine}).json
    assert (result["success"], result["error_code"]) == (False, "too_large"), result["error"]
    assert accounts.summary(account)["balance"] == 100
