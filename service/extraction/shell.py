"""Whether a page as received is a JavaScript shell: an app that shows nothing until it runs.

``engine: "auto"`` renders such a page with the ``js`` engine (middlewares.escalation). The
check reads the raw body with a few linear regular expressions, not a parse: it runs on the
reactor thread, and a parse of a hostile page (deep nesting) could take seconds there.

A page is a shell when its visible text (the body without scripts, styles, ``noscript``,
``template``, comments and tags; white space not counted) is under :data:`LITTLE_TEXT`
characters and one of these holds:

* an empty app root: ``<div id="root">``, ``"app"``, ``"__next"``, ``"__nuxt"``,
  ``"___gatsby"``, ``"q-app"`` or ``"svelte"``, or ``<app-root>``, with nothing inside;
* a ``<noscript>`` that asks for JavaScript ("enable JavaScript", "JavaScript is required" ...);
* the text is all but empty (under :data:`NO_TEXT`) while the page has scripts: an external
  one, or inline code of :data:`SCRIPT_WEIGHT` bytes or more (content that lives in a script).

Only the first :data:`MAX_SCAN` bytes are read: a shell puts its root and notice up front.

A page with real text is never a shell, whatever scripts it carries, so a server-rendered app
stays ``static``; an empty page without scripts is not one either (rendering it gains nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

LITTLE_TEXT: Final = 200
NO_TEXT: Final = 20
SCRIPT_WEIGHT: Final = 500
MAX_SCAN: Final = 512 * 1024  # bytes of the body looked at
_SLICE = 2048  # bytes of text counted at a time

# Every pattern is linear in the body: tags are matched up to the next "<" or ">" only, and
# blocks are cut with bytes.find, so no input makes the check quadratic.
_BLOCK = re.compile(rb"<(script|style|noscript|template|title|svg|head)\b|<!--")  # on lower()
_SRC = re.compile(rb"\bsrc\s*=", re.IGNORECASE)
_TAG = re.compile(rb"<[^<>]*>")
_WHITE_SPACE = b" \t\n\r\x0b\x0c"
_ENTITY = re.compile(rb"&#?\w{1,32};")
_EMPTY_ROOT = re.compile(
    rb"<div\b[^<>]*?\bid\s*=\s*[\"']?(?:root|app|__next|__nuxt|___gatsby|q-app|svelte)[\"'\s>]"
    rb"[^<>]*>\s*</div\s*>|<app-root\b[^<>]*>\s*</app-root\s*>",
    re.IGNORECASE,
)
_ASKS_FOR_JS = re.compile(
    rb"(?:enable|turn on|switch on|activate|allow)\w{0,3}\s+(?:your\s+)?javascript"
    rb"|javascript\s+(?:is\s+)?(?:required|disabled|needs to be enabled|must be enabled)"
    rb"|(?:requires?|needs?)\s+javascript",
    re.IGNORECASE,
)


class _Page:
    """The body cut into what a reader would see (:meth:`pieces`), its scripts and notices."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.rest: list[bytes] = []
        self.script_bytes = 0
        self.external_scripts = 0
        self.noscripts: list[bytes] = []

    def pieces(self) -> Iterator[bytes]:
        """What lies between the blocks, in order; the blocks' content is counted meanwhile, so
        a caller that stops early has not scanned the rest of the page."""
        body = self.body
        lower = body.lower()
        at = 0
        while (found := _BLOCK.search(lower, at)) is not None:
            yield self._kept(body[at : found.start()])
            name = found.group(1)
            if name is None:  # a comment
                end = lower.find(b"-->", found.end())
                at = len(body) if end < 0 else end + 3
                continue
            open_end = lower.find(b">", found.end())
            if open_end < 0:
                return
            close = lower.find(b"</" + name, open_end)
            inner = body[open_end + 1 : len(body) if close < 0 else close]
            if name == b"script":
                self.script_bytes += len(inner.strip())
                if _SRC.search(lower, found.end(), open_end):
                    self.external_scripts += 1
            elif name == b"noscript":
                self.noscripts.append(inner)
            if close < 0:
                return
            close_end = lower.find(b">", close)
            at = len(body) if close_end < 0 else close_end + 1
        yield self._kept(body[at:])

    def _kept(self, piece: bytes) -> bytes:
        self.rest.append(piece)
        return piece


def _text_length(piece: bytes, enough: int) -> int:
    """The visible characters of ``piece`` (white space not counted), counted in slices cut
    before a ``<`` (so no tag is cut) until there are ``enough``."""
    total, at = 0, 0
    while at < len(piece) and total < enough:
        end = piece.find(b"<", at + _SLICE) if at + _SLICE < len(piece) else -1
        end = len(piece) if end < 0 else end
        text = _ENTITY.sub(b"x", _TAG.sub(b"", piece[at:end]))
        total += len(text.translate(None, _WHITE_SPACE))
        at = end
    return total


def is_js_shell(body: bytes) -> bool:
    """True when ``body`` (an HTML document as received) needs JavaScript to show its content."""
    page = _Page(body[:MAX_SCAN])
    text = 0
    for piece in page.pieces():
        text += _text_length(piece, LITTLE_TEXT - text)
        if text >= LITTLE_TEXT:  # most pages: known after their first few kilobytes
            return False
    rest = b" ".join(page.rest)
    if _EMPTY_ROOT.search(rest):
        return True
    if any(_ASKS_FOR_JS.search(notice) for notice in page.noscripts):
        return True
    if text >= NO_TEXT:
        return False
    return page.external_scripts > 0 or page.script_bytes >= SCRIPT_WEIGHT
