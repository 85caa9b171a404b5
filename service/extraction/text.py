"""The text of an element as a reader sees it.

Script, style, noscript, template and similar content is left out, and block boundaries
become spaces while inline markup does not (``Hello <b>you</b>!`` gives ``Hello you!``). CSS
is not evaluated, so ``display: none`` content is included.
"""

from __future__ import annotations

from typing import Final

from selectolax.lexbor import LexborNode

# Elements whose content a browser does not render as text (title inside <svg> is a tooltip).
_NOT_RENDERED: Final = frozenset(
    {
        "head",
        "title",
        "script",
        "style",
        "noscript",
        "template",
        "iframe",
        "noembed",
        "noframes",
        "-comment",
    }
)

# Phrasing elements that do not break a line; anything else, including unknown and custom
# elements, is taken as a boundary, because a stray space harms less than two glued words.
_INLINE: Final = frozenset(
    {
        "a",
        "abbr",
        "acronym",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "img",
        "ins",
        "kbd",
        "label",
        "mark",
        "nobr",
        "q",
        "rb",
        "ruby",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
        "wbr",
    }
)

#: The tag selectolax gives text nodes.
TEXT_NODE: Final = "-text"


def normalise(text: str) -> str:
    """``text`` with its runs of whitespace made single spaces, and stripped."""
    return " ".join(text.split())


def visible_text(root: LexborNode | None) -> str:
    """Whitespace-normalised text below ``root``, leaving out content that is not rendered."""
    if root is None:
        return ""
    parts: list[str] = []
    append = parts.append
    # Explicit stack rather than recursion: garbage pages can nest thousands of levels deep.
    stack = [(root.iter(include_text=True), False)]
    while stack:
        children, is_block = stack[-1]
        for node in children:
            tag = node.tag
            if tag == TEXT_NODE:
                append(node.text_content or "")
            elif tag in _NOT_RENDERED:
                continue
            elif tag in _INLINE:
                stack.append((node.iter(include_text=True), False))
                break
            else:
                append(" ")
                stack.append((node.iter(include_text=True), True))
                break
        else:
            stack.pop()
            if is_block:
                append(" ")
    return normalise("".join(parts))
