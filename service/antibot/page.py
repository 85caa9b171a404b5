"""The shape of a page: how much visible text, how many links and input fields it has.

A block or challenge page is small: a vendor's marker on a page full of text and links is an
ordinary page that happens to load the vendor's script. The shape is measured with regular
expressions (no DOM), and only once a rule's markers have been seen on the page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

#: Statuses that anti-bot systems answer challenges and blocks with.
CHALLENGE_STATUSES = frozenset({202, 401, 403, 405, 406, 429, 503})
#: Page shape of a vendor block page.
SMALL_WORDS = 80
SMALL_WORDS_ON_CHALLENGE_STATUS = 200
MAX_LINKS_BLOCK_PAGE = 20
#: Page shape of a generic CAPTCHA wall.
WALL_WORDS = 60
WALL_WORDS_WITH_PHRASE = 250
WALL_MAX_LINKS = 5
#: Average bytes per word used to bound the visible text of unspaced scripts (CJK).
_BYTES_PER_WORD = 12

_INVISIBLE_RE = re.compile(
    rb"<(script|style|noscript|template|svg|head|iframe|object)\b.*?</\1\s*>|<!--.*?-->",
    re.S,
)
_TAG_RE = re.compile(rb"<[^>]*>")
_ENTITY_RE = re.compile(rb"&#?[a-z0-9]{1,8};")
_WORD_RE = re.compile(rb"[a-z0-9\x80-\xff]+")
_LINK_RE = re.compile(rb"<a\s[^>]*\bhref\s*=")
_FIELD_RE = re.compile(rb"<(input|textarea|select)\b([^>]*)>")
_INPUT_TYPE_RE = re.compile(rb"\btype\s*=\s*[\"']?([a-z-]+)")
_NON_USER_INPUT_TYPES = frozenset(
    {b"hidden", b"submit", b"button", b"image", b"reset", b"checkbox", b"radio"}
)
_WALL_PHRASES = (
    b"unusual traffic",
    b"not a robot",
    b"are you a robot",
    b"are you human",
    b"verify you are human",
    b"verify that you are human",
    b"verify you are a human",
    b"prove you are human",
    b"human verification",
    b"security check",
    b"automated requests",
    b"complete the captcha",
    b"solve the captcha",
)


class Shape:
    """Visible-text estimate of a page (regex based, no DOM)."""

    __slots__ = ("markup", "words", "chars", "links", "user_inputs")

    def __init__(self, low: bytes) -> None:
        #: the page without scripts, styles, comments, ... (tags and attributes kept)
        self.markup = stripped = _INVISIBLE_RE.sub(b" ", low)
        self.links = len(_LINK_RE.findall(stripped))
        self.user_inputs = 0
        for match in _FIELD_RE.finditer(stripped):
            attrs = match.group(2)
            if b"captcha" in attrs or b"turnstile" in attrs:
                continue  # the widget's own response field
            if match.group(1) == b"input":
                type_match = _INPUT_TYPE_RE.search(attrs)
                if type_match and type_match.group(1) in _NON_USER_INPUT_TYPES:
                    continue
            self.user_inputs += 1
        text = _ENTITY_RE.sub(b" ", _TAG_RE.sub(b" ", stripped))
        words = _WORD_RE.findall(text)
        self.words = len(words)
        self.chars = sum(map(len, words))


class Page:
    """An HTML response as the rules see it: status, lower-cased body, normalized headers."""

    __slots__ = ("status", "low", "headers", "_shape")

    def __init__(self, status: int, low: bytes, headers: Mapping[str, str]) -> None:
        self.status = status
        self.low = low
        self.headers = headers
        self._shape: Shape | None = None

    @property
    def shape(self) -> Shape:
        if self._shape is None:
            self._shape = Shape(self.low)
        return self._shape

    def has(self, *needles: bytes) -> bool:
        low = self.low
        return any(needle in low for needle in needles)


def block_page(p: Page) -> bool:
    """Shape of a vendor block page: little visible text and few links."""
    shape = p.shape
    if shape.links > MAX_LINKS_BLOCK_PAGE:
        return False
    limit = SMALL_WORDS
    if p.status in CHALLENGE_STATUSES:
        limit = SMALL_WORDS_ON_CHALLENGE_STATUS
    return shape.words <= limit and shape.chars <= limit * _BYTES_PER_WORD


def captcha_wall(container: bytes, render_call: bytes) -> Callable[[Page], bool]:
    """Shape of a page that is nothing but the CAPTCHA widget of ``container``.

    The widget must be on the page itself (its container element outside scripts, or an
    explicit render call), not a string in some inline script or JSON; the page must have no
    input field of the user's own (a login or contact form with a CAPTCHA is not a wall), few
    links and little text, or somewhat more text with a "verify you are human"-style phrase
    on a challenge status.
    """

    def wall(p: Page) -> bool:
        shape = p.shape
        if not (container in shape.markup or render_call in p.low):
            return False
        if shape.user_inputs or shape.links > WALL_MAX_LINKS:
            return False
        if shape.words <= WALL_WORDS and shape.chars <= WALL_WORDS * _BYTES_PER_WORD:
            return True
        return (
            p.status in CHALLENGE_STATUSES
            and shape.words <= WALL_WORDS_WITH_PHRASE
            and shape.chars <= WALL_WORDS_WITH_PHRASE * _BYTES_PER_WORD
            and p.has(*_WALL_PHRASES)
        )

    return wall
