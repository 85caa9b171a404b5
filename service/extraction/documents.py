"""Documents (PDF, and through service.extraction.office DOCX, PPTX, XLSX, ODT and EPUB) turned
into a page's fields and outputs, in the extraction workers.

A target may answer a document instead of HTML. It is recognised by its bytes
(:func:`document_type`), not by its ``Content-Type``, which servers get wrong both ways, and
converted here with pdfium (``pypdfium2``, Apache-2.0/BSD-3-Clause; docs/documents.md has the
measurements that chose it): ``text`` and ``markdown`` in pdfium's reading order, a line set in
a larger font than the body becoming a markdown heading, and ``document`` what the file
declares. A document past ``max_pages``, encrypted with a password, without a text layer (a
scan) or that pdfium cannot read is a :class:`DocumentRefused` with its error code: the scrape
fails, unbilled.
"""

from __future__ import annotations

import re
from typing import Any, Final

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from service.extraction.bounds import PageTooLarge
from service.extraction.fields import no_matches
from service.extraction.office import Converted, convert_archive, zip_kind

PDF: Final = "pdf"
# A PDF's header may follow up to 1024 bytes of anything (ISO 32000-1, 7.5.2)
_SIGNATURES: Final = ((b"%PDF-", PDF, 1024),)
# A line at least this much larger than the body's size is a heading; the largest is h1.
HEADING_RATIO: Final = 1.2
HEADING_LEVELS: Final = 3
# a line that opens with a bullet glyph (Word's, LibreOffice's) is a list item
BULLET: Final = re.compile(r"[\u2022\u25e6\u25aa\u25cf\u2023\u2043\uf0b7]\s*")


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
            converted = convert_archive(body, kind)
        except PageTooLarge:
            raise
        except Exception:  # a damaged archive or part: the libraries raise many kinds
            raise DocumentRefused(
                f"the document could not be read (a damaged {kind.upper()})"
            ) from None
    if converted.pages > max_pages:
        raise _too_many(converted.pages, max_pages)
    if not any(line.strip() for line in converted.lines):
        raise DocumentWithoutText(
            "the document has no text layer (a scanned or image-only PDF); OCR is not offered"
            if kind == PDF
            else "the document has no text"
        )
    title = converted.title or next(iter(converted.headings.get("h1", [])), None)
    fields: dict[str, Any] = {
        "title": title,
        "meta": {},
        "headings": converted.headings,
        "links": [],
        "images": [],
        "text": "\n".join(converted.lines).strip(),
        "extracted": no_matches(selectors),
        "document": {
            "type": kind,
            "pages": converted.pages,
            "title": converted.title,
            "author": converted.author,
            "created": converted.created,
        },
    }
    if "markdown" in formats:
        fields["markdown"] = "\n\n".join(block for block in converted.blocks if block).strip()
    if "html" in formats:
        fields["html"] = None
    return fields


def _too_many(pages: int, max_pages: int) -> PageTooLarge:
    return PageTooLarge(
        f"the document has {pages} pages, over the limit of {max_pages} "
        "(SCRAPESPY_DOCUMENT_MAX_PAGES)"
    )


def _pdf(body: bytes, max_pages: int) -> Converted:
    """A PDF's lines in pdfium's reading order, a line in a larger font a heading."""
    pdf = _open(body)
    try:
        pages = len(pdf)
        if pages > max_pages:
            raise _too_many(pages, max_pages)
        lines = [line for index in range(pages) for line in _page_lines(pdf[index])]
        declared = pdf.get_metadata_dict(skip_empty=True)
    finally:
        pdf.close()
    levels = _heading_levels(lines)
    out = Converted(pages=pages)
    for text, size in lines:
        level = levels.get(size)
        bullet = BULLET.match(text)
        if level is not None and text:
            out.heading(level, text)
        elif bullet is not None:
            out.paragraph(text[bullet.end() :], "- ")
        else:
            out.paragraph(text)
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


def _page_lines(page: pdfium.PdfPage) -> list[tuple[str, float]]:
    """Each line of the page in pdfium's reading order, with the font size of its first
    character (to one decimal)."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
        lines: list[tuple[str, float]] = []
        start = 0
        for raw in text.split("\n"):
            line = raw.rstrip("\r")
            stripped = line.strip()
            if stripped:
                first = start + (len(line) - len(line.lstrip()))
                size = pdfium_c.FPDFText_GetFontSize(textpage.raw, first)
                lines.append((" ".join(stripped.split()), round(size, 1)))
            start += len(raw) + 1
        return lines
    finally:
        textpage.close()
        page.close()


def _heading_levels(lines: list[tuple[str, float]]) -> dict[float, int]:
    """Font size -> heading level: the sizes clearly above the body's (the size most of the
    characters are set in), the largest first."""
    weights: dict[float, int] = {}
    for text, size in lines:
        weights[size] = weights.get(size, 0) + len(text)
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
