"""The document converters (service.extraction.documents and .office) on bytes that are not
what they say: damaged archives, a zip bomb, an archive of another kind."""

from __future__ import annotations

import io
import zipfile

import pytest

from service.core.errors import FAILURE_CODES
from service.extraction.bounds import PageTooLarge
from service.extraction.documents import (
    DocumentEncrypted,
    DocumentRefused,
    DocumentWithoutText,
    convert,
    document_type,
)
from service.extraction.office import MAX_UNPACKED

CHUNK = b"\0" * (1024 * 1024)


def archive(parts: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as made:
        for name, data in parts.items():
            made.writestr(name, data)
    return out.getvalue()


def test_each_refusal_is_a_failure_code_of_a_result() -> None:
    refusals = (DocumentRefused, DocumentEncrypted, DocumentWithoutText)
    assert {refusal.code for refusal in refusals} <= set(FAILURE_CODES)


def test_an_archive_of_another_kind_is_no_document() -> None:
    assert document_type(archive({"readme.txt": b"hello"})) is None
    assert document_type(b"PK\x03\x04 not really an archive") is None
    assert document_type(b"<html>" + b" " * 2000 + b"%PDF- further than a header may be") is None
    assert document_type(b"\n" * 100 + b"%PDF-1.7\n") == "pdf"  # junk before it is allowed


def test_a_damaged_docx_is_refused_as_unreadable() -> None:
    body = archive({"word/document.xml": b"<w:document>cut sh"})
    assert document_type(body) == "docx"
    with pytest.raises(DocumentRefused) as refused:
        convert(body, "docx", None, frozenset(), 500)
    assert refused.value.code == "document_unreadable"


def test_a_zip_bomb_is_refused_before_it_is_unpacked() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as made:
        made.writestr("word/document.xml", b"<w:document/>")
        with made.open("word/media/zeros.bin", "w") as zeros:
            for _ in range(MAX_UNPACKED // len(CHUNK) + 1):
                zeros.write(CHUNK)
    body = out.getvalue()
    assert len(body) < 2 * 1024 * 1024  # small on the wire
    with pytest.raises(PageTooLarge, match="unpacks to"):
        convert(body, "docx", None, frozenset(), 500)


def _typeset(lines: list[str]) -> bytes:
    """A one-page PDF with ``lines`` set in Helvetica 12, 16 points apart (pdfium writes it)."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(595, 842)
    font = pdfium_c.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    for row, text in enumerate(lines):
        obj = pdfium_c.FPDFPageObj_CreateTextObj(pdf.raw, font, 12.0)
        wide = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(obj, ctypes.cast(wide, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 50, 800 - 16 * row)
        pdfium_c.FPDFPage_InsertObject(page.raw, obj)
    pdfium_c.FPDFPage_GenerateContent(page.raw)
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def test_each_printed_line_is_measured_a_bullet_from_its_text() -> None:
    import pypdfium2 as pdfium

    from service.extraction.pdflines import page_lines

    pdf = pdfium.PdfDocument(_typeset(["Wireless keyboard", "\u2022 an item", "last"]))
    lines = page_lines(pdf[0].get_textpage(), 0)
    assert [line.text for line in lines] == ["Wireless keyboard", "\u2022 an item", "last"]
    first, item, last = lines
    assert [first.bullet, item.bullet, last.bullet] == [0, 2, 0]
    assert first.left == item.left == last.left == pytest.approx(50.0, abs=0.5)
    assert item.body_left > item.left + 3  # after the bullet and its space
    assert first.body_left == first.left
    assert 0 < first.first_word < first.right - first.left  # "Wireless", not the whole line
    assert first.top - item.top == pytest.approx(16.0, abs=0.5)
    assert {line.size for line in lines} == {12.0}


@pytest.mark.parametrize(
    ("raw", "clean_text"),
    [
        ("two lines\nand a\ttab", "two lines\nand a\ttab"),  # kept as it is
        ("a\x00b\x1fc\x7fd\n", "abcd\n"),  # C0 controls and DEL, in ASCII text
        ("caf\u00e9\x85 au lait\n\x9f", "caf\u00e9 au lait\n"),  # C1 controls, in Latin-1
        ("Zwei-Faktor\ufffeAuthentifizierung\n", "Zwei-Faktor-Authentifizierung\n"),
        ("\u0101\ufdd0\x01b\n", "\u0101b\n"),  # past Latin-1: the pattern's pass
        ("\U0001f600\U0001fffe\n", "\U0001f600\n"),  # the other planes' noncharacters
    ],
)
def test_no_control_or_noncharacter_is_left_in_text(raw: str, clean_text: str) -> None:
    from service.extraction.pdflines import clean

    assert clean(raw) == clean_text
