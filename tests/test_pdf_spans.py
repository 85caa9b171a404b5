"""A PDF's lines read from pdf_oxide's spans (service.extraction.pdfspans), and pdfium reading
what pdf_oxide does not (service.extraction.documents): PDFs written here by pdfium, each text
object where the test places it."""

from __future__ import annotations

import ctypes
import io
from types import SimpleNamespace

import pdf_oxide
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from service.extraction import documents
from service.extraction.documents import convert
from service.extraction.pdflines import join
from service.extraction.pdfspans import span_lines, undecoded

MARKDOWN = frozenset({"markdown"})


def placed(objects: list[tuple[str, float, float]], size: float = 12.0) -> bytes:
    """A one-page PDF with each ``(text, x, baseline)`` a Helvetica text object of its own, in
    the order given (the order the page draws them)."""
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(595, 842)
    font = pdfium_c.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
    for text, x, baseline in objects:
        obj = pdfium_c.FPDFPageObj_CreateTextObj(pdf.raw, font, size)
        wide = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(obj, ctypes.cast(wide, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, baseline)
        pdfium_c.FPDFPage_InsertObject(page.raw, obj)
    pdfium_c.FPDFPage_GenerateContent(page.raw)
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def lines_of(body: bytes) -> list:
    return span_lines(pdf_oxide.PdfDocument.from_bytes(body).extract_spans(0), 0)


def test_each_printed_line_is_measured_from_its_spans() -> None:
    lines = lines_of(placed([("Wireless keyboard", 50, 800), ("two", 50, 784), ("last", 60, 768)]))
    assert [line.text for line in lines] == ["Wireless keyboard", "two", "last"]
    first, second, last = lines
    assert first.left == second.left == pytest.approx(50.0, abs=0.5)
    assert last.left == pytest.approx(60.0, abs=0.5)
    assert 0 < first.first_word < first.right - first.left  # "Wireless", not the whole line
    assert first.right > second.right > second.left
    assert first.top - second.top == pytest.approx(16.0, abs=0.5)
    assert {line.size for line in lines} == {12.0}


def test_columns_are_read_in_the_order_the_page_draws_them() -> None:
    """pdf_oxide sorts spans top to bottom, which would mix two columns line by line."""
    body = placed([("left one", 50, 800), ("left two", 50, 784), ("right one", 300, 800)])
    assert [line.text for line in lines_of(body)] == ["left one", "left two", "right one"]


def test_spans_of_one_baseline_are_one_line_in_order_with_the_spaces_between() -> None:
    body = placed([("world", 100, 800), ("hello", 50, 800), ("there", 200, 801)])
    assert [line.text for line in lines_of(body)] == ["hello world there"]


def test_a_letter_drawn_after_its_line_fills_the_gap_left_for_it() -> None:
    """TeX's logo: ``LaT`` and ``X`` with a gap, its ``E`` lowered and drawn after the line."""
    body = placed([("LaT X input format", 50, 800), ("E", 70.7, 797.5)])
    assert [line.text for line in lines_of(body)][0].startswith("LaTEX input")


def test_a_line_end_hyphen_joins_the_word_as_the_source_wrote_it() -> None:
    assert join("the Zwei-Faktor-", "Authentifizierung") == "the Zwei-Faktor-Authentifizierung"
    assert join("super\u2010", "docious") == "superdocious"  # a soft hyphen's break
    assert join("pages 3 -", "5") == "pages 3 - 5"


def test_a_character_pdf_oxide_cannot_map_is_read_by_pdfium() -> None:
    """pdfium writes the bullet in WinAnsi's code for it, which pdf_oxide reads as DEL."""
    body = placed([("Items", 50, 800), ("\u2022 an item", 50, 770)])
    assert undecoded(lines_of(body))
    result = convert(body, "pdf", None, MARKDOWN, 500)
    assert result["markdown"] == "Items\n\n- an item"


def test_a_file_pdf_oxide_cannot_open_is_read_by_pdfium(monkeypatch: pytest.MonkeyPatch) -> None:
    body = placed([("A file only pdfium reads", 50, 800)])

    def refuse(data: bytes) -> None:
        raise OSError("Failed to open PDF from bytes: Invalid cross-reference table")

    reader = SimpleNamespace(PdfDocument=SimpleNamespace(from_bytes=refuse))
    monkeypatch.setattr(documents, "pdf_oxide", reader)
    result = convert(body, "pdf", None, MARKDOWN, 500)
    assert result["markdown"] == "A file only pdfium reads"


def test_pdf_oxides_warnings_about_a_file_stay_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cross-reference table pointing nowhere: pdf_oxide rebuilds it, and would warn."""
    body = placed([("A damaged but readable file", 50, 800)])
    broken = body[: body.rindex(b"startxref")] + b"startxref\n999999\n%%EOF\n"
    with caplog.at_level("DEBUG"):
        result = convert(broken, "pdf", None, MARKDOWN, 500)
    assert result["markdown"] == "A damaged but readable file"
    assert not [record for record in caplog.records if record.name.startswith("pdf_oxide")]
