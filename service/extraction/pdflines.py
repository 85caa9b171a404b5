"""A PDF's printed lines joined into the paragraphs and headings a reader sees.

pdfium gives a page's text in reading order with a line break after every printed line; a
paragraph of ten lines would otherwise be ten markdown paragraphs, and a title that wraps two
headings. Each line is measured here (its first character's position and font size, its last
character's right edge, its first word's width), and a line continues the one before it unless
one of the signs a reader goes by says otherwise:

- its font size differs (a heading and the body);
- it is further below the one before than the document's usual line step of that size (the
  space between paragraphs);
- it is indented further than the one before (a first-line indent), or opens with a bullet;
- the line before it ended short: its first word would have fitted at the end of the line
  before, so the break was the author's, not the typesetter's.

At a page break only the font size, the bullet and the short line say whether the paragraph goes
on. A word hyphenated at a line end is joined as the source wrote it: pdfium marks a hyphen that
ends a line with the noncharacter U+FFFE (``Zwei-Faktor\\ufffeAuthentifizierung``), which is the
source's own hyphen, and Chromium prints a soft hyphen (``&shy;``, CSS ``hyphens``) that broke a
line as U+2010, which the source did not write.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Final

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

# a line that opens with a bullet glyph (Word's, LibreOffice's) is a list item
BULLET_GLYPHS: Final = "\u2022\u25e6\u25aa\u25cf\u2023\u2043\uf0b7"
BULLET: Final = re.compile(f"[{BULLET_GLYPHS}]\\s*")
# pdfium's mark of a hyphen at a line end (the source's own hyphen), and the hyphens a
# typesetter adds when it breaks a word (Chromium prints a soft hyphen's break as U+2010)
LINE_END_HYPHEN: Final = "\ufffe"
ADDED_HYPHENS: Final = ("\u2010", "\u00ad")
# a line further below the previous than this many times the usual step starts a paragraph
STEP_RATIO: Final = 1.3
# a line starting this many font sizes further right than the previous is indented
INDENT_EMS: Final = 0.5
# a line's end this many font sizes short of the room its successor's first word needs
SHORT_EMS: Final = 0.3
# a heading's next line within this many font sizes below it continues the heading
HEADING_STEP_EMS: Final = 1.6

# Characters no reader wants in text: C0 and C1 controls (tab and line feed are kept),
# and Unicode's noncharacters (U+FDD0..U+FDEF, and the last two code points of every plane).
# Those of the other planes have a pattern of their own: in one class with the first plane's,
# they made the whole scan 13 times slower.
UNWANTED: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")
UNWANTED_LATIN: Final = bytes([*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])
UNWANTED_ASTRAL: Final = re.compile(
    "["
    + "".join(
        chr(plane * 0x10000 + 0xFFFE) + chr(plane * 0x10000 + 0xFFFF) for plane in range(1, 17)
    )
    + "]"
)


def clean(text: str) -> str:
    """``text`` without controls and noncharacters (pdfium's line-end hyphen mark is the
    source's hyphen)."""
    if text.isprintable():  # most paragraphs: one pass in C, no substitution
        return text
    try:
        # a whole document's text has line feeds, which are not printable: within the first
        # 256 code points (most Latin text) one byte pass finds the unwanted, a fifth of the
        # pattern's search (2 % of a PDF's conversion, docs/decisions/0001)
        latin = text.encode("latin-1")
    except UnicodeEncodeError:
        pass
    else:
        if len(latin.translate(None, UNWANTED_LATIN)) == len(latin):
            return text
    text = UNWANTED.sub("", text.replace(LINE_END_HYPHEN, "-"))
    if not text.isascii() and max(text) > "\uffff":
        text = UNWANTED_ASTRAL.sub("", text)
    return text


@dataclass(slots=True)
class Line:
    """One printed line (or, after a hyphen pdfium joined, two) and where it sits."""

    text: str
    size: float  # the font size of its first character, to one decimal
    page: int
    left: float  # its first character's left edge
    right: float  # its last character's right edge
    top: float  # its first character's bottom (PDF points, growing upwards)
    bottom: float  # its last character's bottom
    first_word: float  # the width of its first word
    body_left: float  # where its text starts after a bullet (else ``left``)
    bullet: int  # the characters of its bullet and the spaces after it (0: none)


def page_lines(textpage: pdfium.PdfTextPage, page: int) -> list[Line]:
    """Each line of the page in pdfium's reading order, measured.

    Four pdfium calls a line (three character boxes and a font size, a fifth after a bullet),
    bound once a page: a quarter less CPU than a closure per box took (docs/documents.md).
    """
    raw = textpage.raw
    text = textpage.get_text_range()
    rect = pdfium_c.FS_RECTF()
    # the loose box, from the font's ascent and descent: every glyph of a line has the same
    # bottom whatever its shape
    char_box = pdfium_c.FPDFText_GetLooseCharBox
    font_size = pdfium_c.FPDFText_GetFontSize
    ref = ctypes.byref(rect)
    bullets = BULLET_GLYPHS

    lines: list[Line] = []
    append = lines.append
    start = 0
    for part in text.split("\n"):
        stripped = part.strip()
        if stripped:
            first = start + part.find(stripped[0])
            last = first + len(stripped) - 1
            space = stripped.find(" ")
            word_end = first + (space if space > 0 else len(stripped)) - 1
            opens = 0
            if stripped[0] in bullets:
                bullet = BULLET.match(stripped)
                if bullet is not None and bullet.end() < len(stripped):
                    opens = bullet.end()
            char_box(raw, first, ref)
            first_left, first_bottom = rect.left, rect.bottom
            char_box(raw, last, ref)
            last_right, last_bottom = rect.right, rect.bottom
            char_box(raw, word_end, ref)
            word_width = rect.right - first_left
            if opens:
                char_box(raw, first + opens, ref)
                body_left = rect.left
            else:
                body_left = first_left
            append(
                Line(
                    stripped
                    if stripped.isprintable() and "  " not in stripped
                    else " ".join(stripped.split()),
                    round(font_size(raw, first), 1),
                    page,
                    first_left,
                    last_right,
                    first_bottom,
                    last_bottom,
                    word_width if word_width > 0.0 else 0.0,
                    body_left,
                    opens,
                )
            )
        start += len(part) + 1
    return lines


def line_steps(lines: list[Line]) -> dict[float, float]:
    """Font size -> the usual distance between the baselines of two lines of a paragraph: the
    lower quartile of the steps between consecutive lines of that size on a page."""
    steps: dict[float, list[float]] = {}
    for before, line in zip(lines, lines[1:], strict=False):
        if line.page == before.page and line.size == before.size:
            step = before.bottom - line.top
            if step > 0:
                steps.setdefault(line.size, []).append(step)
    usual: dict[float, float] = {}
    for size, found in steps.items():
        found.sort()
        usual[size] = found[len(found) // 4]
    return usual


def column_rights(lines: list[Line]) -> list[float]:
    """For each line, the right edge of its column: the furthest right the lines of its page
    and size reach among those that overlap it horizontally, one after the other (a column)."""
    rights = [0.0] * len(lines)
    groups: dict[tuple[int, float], list[int]] = {}
    for index, line in enumerate(lines):
        groups.setdefault((line.page, line.size), []).append(index)
    for members in groups.values():
        members.sort(key=lambda index: lines[index].left)
        column: list[int] = []
        reach = -1.0
        for index in members:
            line = lines[index]
            if column and line.left >= reach:  # clear of the column so far: a new one
                for member in column:
                    rights[member] = reach
                column = []
            column.append(index)
            reach = max(reach, line.right) if len(column) > 1 else line.right
        for member in column:
            rights[member] = reach
    return rights


def continues(
    before: Line,
    line: Line,
    before_column: float,
    step: float | None,
    heading: bool,
    text_left: float,
) -> bool:
    """Whether ``line`` goes on with the paragraph (or heading) ``before`` ends;
    ``text_left`` is where the text of ``before``'s block starts (after a bullet)."""
    if line.size != before.size:
        return False
    em = line.size or 1.0
    if line.page == before.page:
        gap = before.bottom - line.top
        if gap <= 0:  # above it: another column, or a header
            return False
        limit = em * HEADING_STEP_EMS if heading or step is None else step * STEP_RATIO
        if gap > limit:
            return False
        if line.left > text_left + em * INDENT_EMS:
            return False
    # a break the typesetter did not need: the next word would have fitted
    room = before_column - before.right
    return room < line.first_word + em * SHORT_EMS + em * 0.25


def join(text: str, more: str) -> str:
    """Two lines of one paragraph as one: a soft hyphen's break joins the word without it, the
    source's own hyphen at a line end (pdf_oxide's lines; pdfium joins those itself) with it."""
    if len(text) > 1 and text[-2].isalpha() and more[:1].isalpha():
        if text.endswith(ADDED_HYPHENS):
            return text[:-1] + more
        if text.endswith("-"):
            return text + more
    return f"{text} {more}"
