"""End to end: documents made to exhaust an extraction worker fail alone, unbilled, and the
pool goes on with fresh workers.

Each file is small on the wire and huge once read: a PDF whose content stream inflates to
hundreds of megabytes, a DOCX of millions of empty paragraphs, a workbook that repeats one long
shared string in every cell, and a PDF whose one page sits 20,000 levels down its page tree.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite

pytestmark = pytest.mark.engine

MEMORY_MB = 400
SPREADSHEET = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE = "http://schemas.openxmlformats.org/package/2006"


def pdf(objects: dict[int, bytes]) -> bytes:
    """A PDF of ``objects`` (1 the catalogue) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def page(parent: int, contents: int, font: int) -> bytes:
    return (
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        % (
            parent,
            contents,
        )
        + b"/Resources << /Font << /F1 %d 0 R >> >> >>" % font
    )


def inflating_pdf(megabytes: int) -> bytes:
    """One page whose content stream (path operators) inflates to ``megabytes`` MB."""
    packer = zlib.compressobj(9)
    chunk = b"0 0 m\n" * (1 << 16)
    parts = [packer.compress(b"BT /F1 12 Tf 72 720 Td (Inflated) Tj ET\n")]
    parts += [packer.compress(chunk) for _ in range((megabytes << 20) // len(chunk))]
    stream = b"".join(parts) + packer.flush()
    return pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            3: page(2, 4, 5),
            4: b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream",
            5: FONT,
        }
    )


def deep_pdf(depth: int) -> bytes:
    """One page ``depth`` Pages nodes down the page tree."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    for level in range(depth):
        number = 2 + level
        parent = b"" if level == 0 else b" /Parent %d 0 R" % (number - 1)
        objects[number] = b"<< /Type /Pages /Kids [%d 0 R] /Count 1%s >>" % (number + 1, parent)
    leaf = 2 + depth
    content = b"BT /F1 12 Tf 72 720 Td (Deep page) Tj ET"
    objects[leaf] = page(leaf - 1, leaf + 1, leaf + 2)
    objects[leaf + 1] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content)
    objects[leaf + 2] = FONT
    return pdf(objects)


def empty_paragraphs_docx(paragraphs: int) -> bytes:
    """python-docx's template with ``paragraphs`` one-letter paragraphs (under the 256 MiB an
    archive may unpack to)."""
    import docx

    template = io.BytesIO()
    docx.Document().save(template)
    out = io.BytesIO()
    namespace = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    with (
        zipfile.ZipFile(template) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as made,
    ):
        for info in source.infolist():
            if info.filename != "word/document.xml":
                made.writestr(info, source.read(info))
        with made.open("word/document.xml", "w") as part:
            part.write(f"<?xml version='1.0'?><w:document {namespace}><w:body>".encode())
            thousand = b"<w:p><w:r><w:t>x</w:t></w:r></w:p>" * 1000
            for _ in range(paragraphs // 1000):
                part.write(thousand)
            part.write(b"</w:body></w:document>")
    return out.getvalue()


def repeated_string_xlsx(rows: int, columns: int, characters: int) -> bytes:
    """A sheet whose every cell is the one shared string of ``characters`` characters."""
    cells = '<c t="s"><v>0</v></c>' * columns
    sheet = "".join(f'<row r="{row}">{cells}</row>' for row in range(1, rows + 1))
    text = "harbour " * (characters // 8)
    relation = f"{RELATIONSHIPS}/"
    parts = {
        "[Content_Types].xml": (
            f'<Types xmlns="{PACKAGE}/content-types">'
            '<Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{PACKAGE}/relationships"><Relationship Id="rId1" '
            f'Type="{relation}officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{SPREADSHEET}" xmlns:r="{RELATIONSHIPS}"><sheets>'
            '<sheet name="Berths" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{PACKAGE}/relationships">'
            f'<Relationship Id="rId1" Type="{relation}worksheet" Target="worksheets/sheet1.xml"/>'
            f'<Relationship Id="rId2" Type="{relation}sharedStrings" Target="sharedStrings.xml"/>'
            "</Relationships>"
        ),
        "xl/sharedStrings.xml": f'<sst xmlns="{SPREADSHEET}"><si><t>{text}</t></si></sst>',
        "xl/worksheets/sheet1.xml": (
            f'<worksheet xmlns="{SPREADSHEET}"><sheetData>{sheet}</sheetData></worksheet>'
        ),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as made:
        for name, data in parts.items():
            made.writestr(name, data)
    return out.getvalue()


@pytest.fixture(scope="module")
def bounded(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    """The service with workers of ``MEMORY_MB`` MiB, and time enough for a worker to reach
    that: the memory bound, not the time bound, is what stops it."""
    env = {
        "SCRAPESPY_EXTRACT_MAX_MEMORY_MB": str(MEMORY_MB),
        "SCRAPESPY_EXTRACT_MAX_SECONDS": "110",
        "SCRAPESPY_EXTRACT_WORKERS": "1",
    }
    workdir: Path = tmp_path_factory.mktemp("bounded")
    proc = ServiceProcess(database_url, workdir, env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def heavy(site: TargetSite) -> TargetSite:
    site.page("/heavy/inflating.pdf", inflating_pdf(700), **{"Content-Type": "application/pdf"})
    site.page("/heavy/deep.pdf", deep_pdf(20_000), **{"Content-Type": "application/pdf"})
    site.page("/heavy/paragraphs.docx", empty_paragraphs_docx(7_000_000))
    site.page("/heavy/repeated.xlsx", repeated_string_xlsx(2000, 8, 4000))
    site.page("/heavy/fine.pdf", deep_pdf(3), **{"Content-Type": "application/pdf"})
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def scrape(service: ServiceProcess, key: str, url: str) -> dict[str, object]:
    reply = service.scrape(key, {"url": url, "timeout": 120, "formats": ["markdown"]})
    assert reply.status == 200, reply.body
    return reply.json


def test_the_files_are_small_on_the_wire() -> None:
    assert len(inflating_pdf(700)) < 2 * 1024 * 1024
    assert len(empty_paragraphs_docx(7_000_000)) < 1024 * 1024
    assert len(repeated_string_xlsx(2000, 8, 4000)) < 64 * 1024


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        # pdfium aborts when an allocation past the bound fails: the worker dies with it
        ("inflating.pdf", "document_unreadable", "SCRAPESPY_EXTRACT_MAX_MEMORY_MB"),
        # lxml raises MemoryError: the worker answers, then exits
        ("paragraphs.docx", "too_large", f"the {MEMORY_MB} MiB of memory"),
    ],
)
def test_a_document_past_a_workers_memory_fails_alone_unbilled(
    bounded: ServiceProcess,
    heavy: TargetSite,
    accounts: Accounts,
    paying: tuple[int, str],
    name: str,
    code: str,
    words: str,
) -> None:
    account, key = paying
    result = scrape(bounded, key, heavy.url(f"/heavy/{name}"))
    assert (result["success"], result["error_code"]) == (False, code), result
    assert words in str(result["error"])
    assert result["credits_charged"] == 0
    assert accounts.summary(account)["balance"] == 100
    # the pool replaced the worker: the next document is converted
    result = scrape(bounded, key, heavy.url("/heavy/fine.pdf"))
    assert result["success"] is True, (result["error_code"], result["error"])
    assert result["text"] == "Deep page"


def test_a_workbook_repeating_a_long_string_fails_too_large_before_it_is_built(
    service: ServiceProcess, heavy: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    result = scrape(service, key, heavy.url("/heavy/repeated.xlsx"))
    assert (result["success"], result["error_code"]) == (False, "too_large"), result
    assert "SCRAPESPY_DOCUMENT_MAX_PAGES" in str(result["error"])
    assert result["credits_charged"] == 0
    assert accounts.summary(account)["balance"] == 100


def test_a_pdf_whose_page_tree_is_too_deep_is_unreadable(
    service: ServiceProcess, heavy: TargetSite, accounts: Accounts, paying: tuple[int, str]
) -> None:
    account, key = paying
    result = scrape(service, key, heavy.url("/heavy/deep.pdf"))
    assert (result["success"], result["error_code"]) == (False, "document_unreadable"), result
    assert result["credits_charged"] == 0
    assert accounts.summary(account)["balance"] == 100
