"""Office documents and e-books turned into markdown blocks: DOCX, PPTX, XLSX, ODT and EPUB.

All five are ZIP archives; :func:`zip_kind` tells them apart by their parts, and each
converter gives a :class:`Converted`: the markdown blocks in reading order, the plain text
lines, the headings and what the file declares. python-docx, python-pptx and openpyxl (MIT)
read the Office formats; an ODT's ``content.xml`` is read here with the standard library (its
headings, paragraphs, lists and tables are plain elements); an EPUB's chapters are XHTML,
converted by the service's own HTML extraction (service.extraction.outputs), so no e-book
library is needed (ebooklib is AGPL).

What counts as a page, for the page bound and billing alike, is read from the content, never
from the count a file declares (python-docx's template declares one page whatever follows): one
per started ``CHARS_PER_PAGE`` characters of text (a printed page of prose), and for the formats
with pages of their own at least one per slide, worksheet or EPUB chapter (a spine item).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from xml.etree import ElementTree

from service.extraction.bounds import PageTooLarge

DOCX: Final = "docx"
PPTX: Final = "pptx"
XLSX: Final = "xlsx"
EPUB: Final = "epub"
ODT: Final = "odt"
# the part that says which kind an archive is
_PARTS: Final = (
    ("word/document.xml", DOCX),
    ("ppt/presentation.xml", PPTX),
    ("xl/workbook.xml", XLSX),
)
# the ``mimetype`` part of an OpenDocument or EPUB archive -> its kind
_MIMETYPES: Final = {
    b"application/epub+zip": EPUB,
    b"application/vnd.oasis.opendocument.text": ODT,
}
# an archive's parts unpacked, at most: a zip bomb is refused before it is read
MAX_UNPACKED: Final = 256 * 1024 * 1024
MAX_PARTS: Final = 10_000
MAX_CELLS: Final = 1_000_000
CHARS_PER_PAGE: Final = 3000


@dataclass
class Converted:
    """A document as markdown blocks and text lines, with what it declares."""

    blocks: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    headings: dict[str, list[str]] = field(default_factory=dict)
    pages: int = 0
    title: str | None = None
    author: str | None = None
    created: str | None = None

    listing: bool = False  # the last block is a list, which the next item joins

    def heading(self, level: int, text: str) -> None:
        self.listing = False
        level = max(1, min(level, 6))
        self.headings.setdefault(f"h{level}", []).append(text)
        self.blocks.append(f"{'#' * level} {text}")
        self.lines.append(text)

    def paragraph(self, text: str, prefix: str = "") -> None:
        if prefix and self.listing:
            self.blocks[-1] += "\n" + prefix + text
        else:
            self.blocks.append(prefix + text)
        self.listing = bool(prefix)
        self.lines.append(text)

    def table(self, rows: list[list[str]]) -> None:
        self.listing = False
        rows = [row for row in rows if any(cell.strip() for cell in row)]
        if not rows:
            return
        width = max(len(row) for row in rows)
        cells = [[_cell(value) for value in row] + [""] * (width - len(row)) for row in rows]
        markdown = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
        markdown.extend("| " + " | ".join(row) + " |" for row in cells[1:])
        self.blocks.append("\n".join(markdown))
        self.lines.extend(" ".join(cell for cell in row if cell) for row in cells)


def zip_kind(body: bytes) -> str | None:
    """``docx``, ``pptx``, ``xlsx``, ``odt`` or ``epub`` for an archive that is one, else None.
    Only the archive's directory (and its ``mimetype`` part) is read."""
    if not body.startswith(b"PK\x03\x04"):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            names = set(archive.namelist())
            for part, kind in _PARTS:
                if part in names:
                    return kind
            if "mimetype" in names:
                return _MIMETYPES.get(archive.read("mimetype")[:64].strip())
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return None
    return None


def convert_archive(body: bytes, kind: str, max_pages: int | None = None) -> Converted:
    """The document ``body`` of ``kind``; raises :class:`PageTooLarge` for an archive that would
    unpack past ``MAX_UNPACKED`` (or has more than ``MAX_PARTS`` parts), and for a workbook
    whose cells hold more than ``max_pages`` pages of text, as soon as it is read that far."""
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        infos = archive.infolist()
        unpacked = sum(info.file_size for info in infos)
        if len(infos) > MAX_PARTS or unpacked > MAX_UNPACKED:
            raise PageTooLarge(
                f"the document unpacks to {unpacked} bytes in {len(infos)} parts, over the "
                f"limit of {MAX_UNPACKED} bytes or {MAX_PARTS} parts"
            )
        if kind == XLSX:
            return _xlsx(body, archive, max_pages)
        return _CONVERTERS[kind](body, archive)


def _docx(body: bytes, archive: zipfile.ZipFile) -> Converted:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(body))
    out = Converted()
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            out.table([[cell.text for cell in row.cells] for row in block.rows])
            continue
        assert isinstance(block, Paragraph)
        text = " ".join(block.text.split())
        if not text:
            continue
        style = block.style.name if block.style is not None and block.style.name else ""
        level = _heading_level(style)
        if level is not None:
            out.heading(level, text)
        elif style.startswith("List Number"):
            out.paragraph(text, "1. ")
        elif style.startswith("List"):
            out.paragraph(text, "- ")
        else:
            out.paragraph(text)
    _declared(out, document.core_properties)
    out.pages = _text_pages(out)
    return out


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else None


def _text_pages(out: Converted, least: int = 1) -> int:
    """The pages ``out``'s text fills: one per started ``CHARS_PER_PAGE`` characters, and at
    least ``least``."""
    chars = sum(map(len, out.lines))
    return max(least, -(-chars // CHARS_PER_PAGE))


def _pptx(body: bytes, archive: zipfile.ZipFile) -> Converted:
    import pptx

    presentation = pptx.Presentation(io.BytesIO(body))
    out = Converted()
    for number, slide in enumerate(presentation.slides, 1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text.split()) if title_shape is not None else ""
        out.heading(2, title or f"Slide {number}")
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text:
                        out.paragraph(text, "  " * paragraph.level + "- ")
            if getattr(shape, "has_table", False):
                out.table([[cell.text for cell in row.cells] for row in shape.table.rows])
    _declared(out, presentation.core_properties)
    out.pages = _text_pages(out, len(presentation.slides))
    return out


def _xlsx(body: bytes, archive: zipfile.ZipFile, max_pages: int | None = None) -> Converted:
    """A workbook's sheets as tables. Its cells are counted as they are read, padding included,
    and so are their characters: a small file can repeat one long shared string in every cell,
    and the table would copy it for each."""
    import openpyxl

    max_chars = max_pages * CHARS_PER_PAGE if max_pages is not None else None
    chars = 0

    book = openpyxl.load_workbook(io.BytesIO(body), read_only=True, data_only=True)
    out = Converted()
    cells = 0
    try:
        for sheet in book.worksheets:
            out.heading(2, sheet.title)
            rows: list[list[str]] = []
            for row in sheet.iter_rows(values_only=True):
                cells += len(row)
                if cells > MAX_CELLS:
                    raise PageTooLarge(f"the workbook has more than {MAX_CELLS} cells")
                values = ["" if value is None else str(value) for value in row]
                chars += sum(map(len, values))
                if max_chars is not None and chars > max_chars:
                    raise PageTooLarge(
                        f"the document has more than {max_pages} pages of text ({CHARS_PER_PAGE} "
                        f"characters a page), over the limit of {max_pages} "
                        "(SCRAPESPY_DOCUMENT_MAX_PAGES)"
                    )
                rows.append(values)
            width = max((_last_filled(row) for row in rows), default=0)
            out.table([row[:width] for row in rows])
        properties = book.properties
        out.title = properties.title or None
        out.author = properties.creator or None
        out.created = _iso(properties.created)
        out.pages = _text_pages(out, len(book.worksheets))
    finally:
        book.close()
    return out


def _last_filled(row: list[str]) -> int:
    for index in range(len(row), 0, -1):
        if row[index - 1].strip():
            return index
    return 0


_CONTAINER_NS: Final = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS: Final = {"opf": "http://www.idpf.org/2007/opf", "dc": "http://purl.org/dc/elements/1.1/"}


def _epub(body: bytes, archive: zipfile.ZipFile) -> Converted:
    from service.extraction.outputs import OutputOptions, extract_page

    container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
    rootfile = container.find(".//c:rootfile", _CONTAINER_NS)
    if rootfile is None:
        raise ValueError("an EPUB without a rootfile")
    opf_path = rootfile.attrib["full-path"]
    opf = ElementTree.fromstring(archive.read(opf_path))
    base = posixpath.dirname(opf_path)
    manifest = {
        item.attrib["id"]: item.attrib["href"]
        for item in opf.iterfind(".//opf:manifest/opf:item", _OPF_NS)
    }
    spine = [item.attrib["idref"] for item in opf.iterfind(".//opf:spine/opf:itemref", _OPF_NS)]
    out = Converted()
    options = OutputOptions(frozenset({"markdown"}))
    for idref in spine:
        path = posixpath.normpath(posixpath.join(base, manifest[idref]))
        html = archive.read(path).decode("utf-8", "replace")
        page = extract_page(html, f"epub:/{path}", None, options)
        if page.get("markdown"):
            out.blocks.append(page["markdown"])
        if page.get("text"):
            out.lines.append(page["text"])
        for level, texts in page["headings"].items():
            out.headings.setdefault(level, []).extend(texts)
    out.title = _text(opf.find(".//dc:title", _OPF_NS))
    out.author = _text(opf.find(".//dc:creator", _OPF_NS))
    out.created = _text(opf.find(".//dc:date", _OPF_NS))
    out.pages = _text_pages(out, len(spine))
    return out


_ODF: Final = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_H, _P, _LIST, _TABLE = (
    f"{{{_ODF['text']}}}h",
    f"{{{_ODF['text']}}}p",
    f"{{{_ODF['text']}}}list",
    f"{{{_ODF['table']}}}table",
)


def _odt(body: bytes, archive: zipfile.ZipFile) -> Converted:
    content = ElementTree.fromstring(archive.read("content.xml"))
    text = content.find("office:body/office:text", _ODF)
    out = Converted()
    if text is not None:
        for element in text:
            _odt_block(out, element)
    try:
        meta = ElementTree.fromstring(archive.read("meta.xml"))
    except KeyError:
        meta = None
    if meta is not None:
        out.title = _text(meta.find(".//dc:title", _ODF))
        out.author = _text(meta.find(".//meta:initial-creator", _ODF)) or _text(
            meta.find(".//dc:creator", _ODF)
        )
        out.created = _text(meta.find(".//meta:creation-date", _ODF))
    out.pages = _text_pages(out)
    return out


def _odt_block(out: Converted, element: ElementTree.Element, depth: int = 0) -> None:
    """One element of an ODT's body, in order: a heading, a paragraph, a list or a table."""
    if element.tag == _H:
        level = element.get(f"{{{_ODF['text']}}}outline-level") or "1"
        text = _flat(element)
        if text:
            out.heading(int(level) if level.isdigit() else 1, text)
    elif element.tag == _P:
        text = _flat(element)
        if text:
            out.paragraph(text)
    elif element.tag == _LIST:
        for item in element:
            for child in item:
                if child.tag == _LIST:
                    _odt_block(out, child, depth + 1)
                elif (text := _flat(child)) != "":
                    out.paragraph(text, "  " * depth + "- ")
    elif element.tag == _TABLE:
        rows = element.iterfind(".//table:table-row", _ODF)
        out.table(
            [[_flat(cell) for cell in row.iterfind("table:table-cell", _ODF)] for row in rows]
        )
    else:  # sections and the like hold blocks of their own
        for child in element:
            _odt_block(out, child, depth)


def _flat(element: ElementTree.Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _text(element: ElementTree.Element | None) -> str | None:
    if element is None or element.text is None:
        return None
    return " ".join(element.text.split()) or None


def _declared(out: Converted, properties: Any) -> None:
    out.title = properties.title or None
    out.author = properties.author or None
    out.created = _iso(properties.created)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text + "Z" if value.tzinfo is None else text.replace("+00:00", "Z")


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


_CONVERTERS: Final = {DOCX: _docx, PPTX: _pptx, ODT: _odt, EPUB: _epub}
