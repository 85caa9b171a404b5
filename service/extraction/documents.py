"""Documents (PDF, and through service.extraction.office DOCX, PPTX, XLSX, ODT and EPUB) turned
into a page's fields and outputs, in the extraction workers.

A target may answer a document instead of HTML. It is recognised by its bytes
(:func:`document_type`), not by its ``Content-Type``, which servers get wrong both ways, and
converted here. pdfium (``pypdfium2``, Apache-2.0/BSD-3-Clause) opens a PDF: its pages, what it
declares, a password, a page it cannot reach; pdf_oxide's text spans give its printed lines
(service.extraction.pdfspans), at less than half pdfium's CPU, and pdfium's text pages where
pdf_oxide cannot read the file (docs/documents.md has the measurements that chose them). The
lines are joined into paragraphs (service.extraction.pdflines), one set in a larger font than
the body becoming a markdown heading; ``document`` is what the file declares. A document past
``max_pages``, encrypted with a password, without a text layer (a scan) or that pdfium cannot
read is a :class:`DocumentRefused` with its error code: the scrape fails, unbilled.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any, Final

import pdf_oxide
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from service.extraction.bounds import PageTooLarge
from service.extraction.fields import no_matches
from service.extraction.office import Converted, convert_archive, zip_kind
from service.extraction.pdflines import (
    BULLET,
    Line,
    clean,
    column_rights,
    continues,
    join,
    line_steps,
    page_lines,
)
from service.extraction.pdfspans import span_lines, undecoded

log = logging.getLogger(__name__)
# pdf_oxide warns of every oddity of a file (a caller's, not the operator's concern) through
# Python's logging; what it cannot read, pdfium reads
pdf_oxide.set_log_level("error")

PDF: Final = "pdf"
# A PDF's header may follow up to 1024 bytes of anything (ISO 32000-1, 7.5.2)
_SIGNATURES: Final = ((b"%PDF-", PDF, 1024),)
# A line at least this much larger than the body's size is a heading; the largest is h1.
HEADING_RATIO: Final = 1.2
HEADING_LEVELS: Final = 3


class DocumentRefused(Exception):
    """A document that cannot be converted; ``code`` is the scrape's error_code."""

    code = "document_unreadable"


class DocumentEncrypted(DocumentRefused):
    code = "document_encrypted"


class DocumentWithoutText(DocumentRefused):
    code = "document_no_text"


def document_type(body: bytes) -> str | None:
    """The kind of document ``body`` is (service.core.vocabulary's ``DOCUMENT_TYPES``), or None
    for anything else (a page)."""
    for signature, kind, within in _SIGNATURES:
        if signature in body[: within + len(signature)]:
            return kind
    return zip_kind(body)


def convert(
    body: bytes, kind: str, selectors: Any, formats: frozenset[str], max_pages: int
) -> dict[str, Any]:
    """The fields of a page (service.extraction.fields) for the document ``body``, with
    ``markdown`` when ``formats`` asks for it and ``document``; raises :class:`PageTooLarge`
    past ``max_pages`` and :class:`DocumentRefused` for one that cannot be converted."""
    if kind == PDF:
        converted = _pdf(body, max_pages)
    else:
        try:
            converted = convert_archive(body, kind, max_pages)
        except (PageTooLarge, MemoryError):  # past a bound: not a damaged file
            raise
        except Exception:  # a damaged archive or part: the libraries raise many kinds
            raise DocumentRefused(
                f"the document could not be read (a damaged {kind.upper()})"
            ) from None
    if converted.pages > max_pages:
        raise _too_many(converted.pages, max_pages)
    return _fields(converted, kind, selectors, formats)


def pdf_part(body: bytes, part: int, parts: int, max_pages: int) -> dict[str, Any]:
    """The measured lines of the ``part``-th of ``parts`` equal runs of a PDF's pages, its page
    count and (part 0) what it declares: one worker's share of a PDF that several convert at once
    (service.extraction.split), joined by :func:`convert_parts` exactly as :func:`convert` would."""
    pdf = _open(body)
    try:
        pages = len(pdf)
        if pages > max_pages:
            raise _too_many(pages, max_pages)
        first, end = pages * part // parts, pages * (part + 1) // parts
        lines = [_wire(line) for line in _lines(body, pdf, first, end)]
        declared = pdf.get_metadata_dict(skip_empty=True) if part == 0 else {}
    except pdfium.PdfiumError:
        raise _unloadable() from None
    finally:
        pdf.close()
    return {"pages": pages, "lines": lines, "declared": declared}


def convert_parts(
    parts: list[dict[str, Any]], selectors: Any, formats: frozenset[str]
) -> dict[str, Any]:
    """:func:`convert`'s fields of a PDF from its :func:`pdf_part` shares, in order."""
    lines = [Line(*row) for part in parts for row in part["lines"]]
    converted = _paragraphs(lines, parts[0]["pages"], parts[0]["declared"])
    return _fields(converted, PDF, selectors, formats)


def _wire(line: Line) -> list[Any]:
    return [
        line.text,
        line.size,
        line.page,
        line.left,
        line.right,
        line.top,
        line.bottom,
        line.first_word,
        line.body_left,
        line.bullet,
    ]


def _unloadable() -> DocumentRefused:
    # a page pdfium cannot load (a page tree nested past its bound)
    return DocumentRefused("the document could not be read (a page pdfium cannot load)")


def _fields(
    converted: Converted, kind: str, selectors: Any, formats: frozenset[str]
) -> dict[str, Any]:
    if not any(line.strip() for line in converted.lines):
        raise DocumentWithoutText(
            "the document has no text layer (a scanned or image-only PDF); OCR is not offered"
            if kind == PDF
            else "the document has no text"
        )
    # no control character or noncharacter reaches the caller, whatever the file holds
    headings = {
        level: [clean(text) for text in texts] for level, texts in converted.headings.items()
    }
    declared_title = clean(converted.title) if converted.title else None
    title = declared_title or next(iter(headings.get("h1", [])), None)
    fields: dict[str, Any] = {
        "title": title,
        "meta": {},
        "headings": headings,
        "links": [],
        "images": [],
        "text": clean("\n".join(converted.lines)).strip(),
        "extracted": no_matches(selectors),
        "document": {
            "type": kind,
            "pages": converted.pages,
            "title": declared_title,
            "author": clean(converted.author) if converted.author else None,
            "created": converted.created,
        },
    }
    if "markdown" in formats:
        fields["markdown"] = clean(
            "\n\n".join(block for block in converted.blocks if block)
        ).strip()
    if "html" in formats:
        fields["html"] = None
    return fields


def _too_many(pages: int, max_pages: int) -> PageTooLarge:
    return PageTooLarge(
        f"the document has {pages} pages, over the limit of {max_pages} "
        "(SCRAPESPY_DOCUMENT_MAX_PAGES)"
    )


def _pdf(body: bytes, max_pages: int) -> Converted:
    """A PDF's paragraphs and headings (service.extraction.pdflines) in pdfium's reading order,
    a line in a larger font a heading."""
    pdf = _open(body)
    try:
        pages = len(pdf)
        if pages > max_pages:
            raise _too_many(pages, max_pages)
        lines = _lines(body, pdf, 0, pages)
        declared = pdf.get_metadata_dict(skip_empty=True)
    except pdfium.PdfiumError:
        raise _unloadable() from None
    finally:
        pdf.close()
    return _paragraphs(lines, pages, declared)


def _paragraphs(lines: list[Line], pages: int, declared: dict[str, Any]) -> Converted:
    """The document's blocks: its measured lines joined into paragraphs and headings."""
    levels = _heading_levels(lines)
    steps = line_steps(lines)
    columns = column_rights(lines)
    out = Converted(pages=pages)
    block: list[Line] = []
    text = ""
    text_left = 0.0

    def close() -> None:
        if not block:
            return
        level = levels.get(block[0].size)
        bullet = BULLET.match(text)
        if level is not None:
            out.heading(level, text)
        elif bullet is not None and bullet.end() < len(text):
            out.paragraph(text[bullet.end() :], "- ")
        else:
            out.paragraph(text)

    for index, line in enumerate(lines):
        if (
            block
            and not line.bullet
            and continues(
                block[-1],
                line,
                columns[index - 1],
                steps.get(line.size),
                line.size in levels,
                text_left,
            )
        ):
            block.append(line)
            text = join(text, line.text)
            text_left = min(text_left, line.left)
            continue
        close()
        block, text, text_left = [line], line.text, line.body_left
    close()
    out.title = declared.get("Title") or None
    out.author = declared.get("Author") or None
    out.created = _date(declared.get("CreationDate"))
    return out


def _open(body: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(body)  # an empty user password is tried, as readers do
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pdfium_c.FPDF_ERR_PASSWORD:
            raise DocumentEncrypted(
                "the document is encrypted with a password; it cannot be read"
            ) from None
        raise DocumentRefused("the document could not be read (damaged or not a PDF)") from None


def _lines(body: bytes, pdf: pdfium.PdfDocument, first: int, end: int) -> list[Line]:
    """The measured lines of pages ``first`` to ``end`` (excluded): pdf_oxide's, or pdfium's
    where pdf_oxide cannot read the file, finds no text or reads a character no text has (in
    one reader for the whole run: their font sizes differ for a scaled font)."""
    size = pdfium_c.FS_SIZEF()
    for index in range(first, end):  # a page pdfium cannot reach (a tree nested past its bound)
        if not pdfium_c.FPDF_GetPageSizeByIndexF(pdf.raw, index, ctypes.byref(size)):
            raise _unloadable()
    try:
        spans = pdf_oxide.PdfDocument.from_bytes(body)
        lines = [
            line
            for index in range(first, end)
            for line in span_lines(spans.extract_spans(index), index)
        ]
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a file pdf_oxide does not read; pdfium may
        log.info("pdf_oxide could not read a PDF (%s); pdfium reads it", type(exc).__name__)
        lines = []
    if not lines or undecoded(lines):
        lines = [line for index in range(first, end) for line in _page_lines(pdf, index)]
    return lines


def _page_lines(pdf: pdfium.PdfDocument, index: int) -> list[Line]:
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            return page_lines(textpage, index)
        finally:
            textpage.close()
    finally:
        page.close()


def _heading_levels(lines: list[Line]) -> dict[float, int]:
    """Font size -> heading level: the sizes clearly above the body's (the size most of the
    characters are set in), the largest first."""
    weights: dict[float, int] = {}
    for line in lines:
        weights[line.size] = weights.get(line.size, 0) + len(line.text)
    if not weights:
        return {}
    body = max(weights, key=lambda size: weights[size])
    larger = sorted((size for size in weights if size >= body * HEADING_RATIO), reverse=True)
    return {size: min(rank + 1, HEADING_LEVELS) for rank, size in enumerate(larger)}


def _date(value: str | None) -> str | None:
    """A PDF date (``D:20261126174715+00'00'``) as ISO 8601, or None when there is none."""
    if not value:
        return None
    digits = value.removeprefix("D:")
    if len(digits) < 8 or not digits[:8].isdigit():
        return None
    year, month, day = digits[0:4], digits[4:6], digits[6:8]
    clock = digits[8:14].ljust(6, "0") if digits[8:14].isdigit() else "000000"
    zone = digits[14:].replace("'", "")
    offset = "Z" if zone in ("", "Z") or zone.startswith("Z") else f"{zone[:3]}:{zone[3:5] or '00'}"
    if offset in ("+00:00", "-00:00"):
        offset = "Z"
    return f"{year}-{month}-{day}T{clock[0:2]}:{clock[2:4]}:{clock[4:6]}{offset}"
