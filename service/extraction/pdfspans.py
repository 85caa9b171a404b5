"""A PDF page's printed lines, measured, from pdf_oxide's text spans.

pdf_oxide (MIT or Apache-2.0, in Rust) hands over a page's text as spans: runs of characters set
in one font, with their box, font size and each character's advance. Reading them costs less
than half the CPU of pdfium's text page (docs/documents.md), the larger part of converting a
PDF. The spans are taken in the order the page draws them, as pdfium's text is (pdf_oxide
sorts them top to bottom, mixing columns); consecutive spans on one baseline are one printed
line, put in order from left to right (a letter drawn after its line set in the gap left for
it), with a space where the gap between two is a word's. Each line is measured as
service.extraction.pdflines measures pdfium's: its first character's left edge and baseline, its
last character's right edge and baseline, its first word's width and its bullet.

pdfium stays the reader of what pdf_oxide does not read (service.extraction.documents): a file
it cannot open, a page it fails on, and characters no text has (a control character or U+FFFD,
a font it could not decode).
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Any, Final

from service.extraction.pdflines import BULLET, BULLET_GLYPHS, Line

# a soft hyphen the source wrote: invisible where the line did not break there (Chromium prints
# one that broke a line as U+2010 beside it); its advance is not the glyph's place
SOFT_HYPHEN: Final = "\u00ad"
# spans whose baselines are within this many font sizes are one line (a superscript, a lowered
# letter of a logo)
SAME_LINE_EMS: Final = 0.3
# a gap this many font sizes wide between two spans of a line is a space
SPACE_EMS: Final = 0.15
# what no text has: a font pdf_oxide could not map to Unicode, most likely
UNDECODED: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffd]")
_DRAWN: Final = attrgetter("sequence")


class _Span:
    __slots__ = ("left", "right", "text", "widths", "baseline", "size")

    def __init__(self, span: Any) -> None:
        left, baseline, width, _ = span.bbox
        text: str = span.text
        widths: list[float] = span.char_widths
        tail = 0.0
        if SOFT_HYPHEN in text:
            if len(widths) == len(text):
                if text.endswith(SOFT_HYPHEN):
                    tail = widths[-1]
                widths = [w for w, char in zip(widths, text, strict=True) if char != SOFT_HYPHEN]
            text = text.replace(SOFT_HYPHEN, "")
        end = len(text.rstrip())
        self.left: float = left
        # the box's right edge keeps the word spacing the advances leave out (justified text)
        self.right: float = left + width - tail - sum(widths[end:])
        self.text = text
        self.widths = widths
        self.baseline: float = baseline
        self.size: float = span.font_size


def span_lines(spans: list[Any], page: int) -> list[Line]:
    """The page's printed lines (``page`` its index) from pdf_oxide's ``extract_spans``."""
    lines: list[Line] = []
    run: list[_Span] = []
    for raw in sorted(spans, key=_DRAWN):  # pdf_oxide sorts them top to bottom: columns mixed
        span = _Span(raw)
        if run:
            last = run[-1]
            if abs(span.baseline - last.baseline) <= SAME_LINE_EMS * max(span.size, last.size):
                run.append(span)
                continue
            _measure(run, page, lines)
        run = [span]
    if run:
        _measure(run, page, lines)
    return lines


def undecoded(lines: list[Line]) -> bool:
    """Whether a line has a character no text has: a font read wrong, for pdfium to read."""
    return any(
        "\ufffd" in line.text or (not line.text.isprintable() and UNDECODED.search(line.text))
        for line in lines
    )


def _measure(run: list[_Span], page: int, lines: list[Line]) -> None:
    if len(run) > 1:
        run.sort(key=lambda span: span.left)
    first = run[0]
    parts = [first.text]
    right = first.right if first.text.strip() else first.left
    for before, span in zip(run, run[1:], strict=False):
        if span.text.strip():
            right = max(right, span.right)
        if span.left < before.right - SPACE_EMS * before.size:
            inside = _inside(before, span)  # drawn after the span whose gap it fills
            if inside is not None:
                parts[-1] = inside
                span.left, span.right = before.left, max(before.right, span.right)
                span.text, span.widths = inside, []
                continue
        if (
            span.left - before.right > SPACE_EMS * before.size
            and not parts[-1].endswith(" ")
            and not span.text.startswith(" ")
        ):
            parts.append(" ")
        parts.append(span.text)
    text = "".join(parts)
    stripped = text.strip()
    if not stripped:
        return
    chars, widths = first.text, first.widths
    lead = len(chars) - len(chars.lstrip())
    left = first.left + sum(widths[:lead])
    body = chars[lead:]
    space = body.find(" ")
    word = sum(widths[lead : lead + (space if space > 0 else len(body))])
    opens = 0
    if stripped[0] in BULLET_GLYPHS:
        bullet = BULLET.match(stripped)
        if bullet is not None and bullet.end() < len(stripped):
            opens = bullet.end()
    lines.append(
        Line(
            stripped
            if stripped.isprintable() and "  " not in stripped
            else " ".join(stripped.split()),
            round(first.size, 1),
            page,
            left,
            right,
            first.baseline,
            run[-1].baseline,
            word,
            _body_left(run, left, lead, opens),
            opens,
        )
    )


def _inside(before: _Span, span: _Span) -> str | None:
    """``before``'s text with ``span``'s set where it is drawn, in place of the space pdf_oxide
    put in that gap (TeX's logos lower a letter and draw it after the line: ``LaT X`` and ``E``
    are ``LaTEX``), or None when ``before``'s characters cannot place it."""
    text, widths = before.text, before.widths
    if len(widths) != len(text):
        return None
    at, edge = 0, before.left
    while at < len(text) and edge + widths[at] / 2 < span.left:
        edge += widths[at]
        at += 1
    if at and text[at - 1] == " ":
        return text[: at - 1] + span.text + text[at:]
    return text[:at] + span.text + text[at + 1 if text[at : at + 1] == " " else at :]


def _body_left(run: list[_Span], left: float, lead: int, opens: int) -> float:
    """Where a line's text starts after its bullet (``opens`` characters, with their spaces)."""
    first = run[0]
    if not opens:
        return left
    if lead + opens <= len(first.text.rstrip()):
        return left + sum(first.widths[lead : lead + opens])
    return run[1].left if len(run) > 1 else left  # the bullet a span of its own
