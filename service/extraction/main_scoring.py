"""The measures behind ``main_content``: class and id words, text and link lengths, teaser
titles, and the choices made after scoring (the page's ``articleBody``, the article holding the
``<h1>``, continuing siblings).

Split from ``main_content`` to keep each module short; nothing here is used elsewhere.
"""

from __future__ import annotations

import re
from typing import Final

from selectolax.lexbor import LexborHTMLParser, LexborNode

# Class and id words that name boilerplate: a word matches when it equals one of NEG_WORDS or
# contains one of NEG_PARTS (``sphinxsidebar``, ``commentlist``, ``td-post-sharing``...).
NEG_WORDS: Final = frozenset(
    """ad ads adv advert advertisement adslot rec gpt dfp sponsor sponsored promo promoted
    byline author bio meta tags tag tagcloud cc consent gdpr popular trending recommended
    more upsells crosssells reviews review rating toc toctree pager pagination
    actions action buttons btn print hidden postprofile profile signature jumpbox
    breadcrumb breadcrumbs skip subscribe newsletter masthead colophon secondary
    outbrain taboola disqus related share sharing social credit credits caption captions
    dateline timestamp date updated published
    lateral pie pied piede teilen autor auteur autore etiquetas tambem fecha datum""".split()
)
NEG_PARTS: Final = (
    "sidebar", "comment", "share", "social", "cookie", "newsletter", "banner", "breadcrumb",
    "related", "advert", "widget", "footer", "header", "menu", "navbar", "nav", "popup", "modal",
    "signature", "sponsor", "subscribe", "pagination", "respond", "overlay", "sr-only",
    # pt, es, fr, de, it: footer, header, comments, related, ads, sharing, sidebar.
    "rodape", "cabecalho", "comentario", "commentaire", "kommentar", "commento", "relacionad",
    "correlat", "publicidad", "publicidade", "pubblicita", "werbung", "anuncio", "patrocin",
    "compartilh", "compartir", "partage", "condivid", "seitenleiste", "fusszeile", "kopfzeile",
)  # fmt: skip
# Words that a wrapper of the article never carries (``content-list trending``), unlike
# ``sidebar`` or ``hidden`` (``l-sidebar-fixed l-article-body-segment``).
STRONG_NEG_PARTS: Final = (
    "comment", "related", "trending", "popular", "recommend", "share", "sharing", "social",
    "cookie", "consent", "newsletter", "subscribe", "advert", "sponsor", "promo", "outbrain",
    "taboola", "disqus", "breadcrumb", "comentario", "commentaire", "kommentar", "commento",
    "relacionad", "correlat", "publicidad", "publicidade", "werbung", "compartilh", "compartir",
)  # fmt: skip
# One search on the joined words instead of a test per word and part (no part holds a space).
NEG_PART_RE: Final = re.compile("|".join(map(re.escape, NEG_PARTS)))
STRONG_NEG_PART_RE: Final = re.compile("|".join(map(re.escape, STRONG_NEG_PARTS)))
POS_WORDS: Final = frozenset(
    """content entry article post body story text main markdown prose typeset
    articlebody postbody rich blog
    conteudo materia noticia contenido articulo cuerpo corpo texto inhalt artikel haupttext
    contenu corps texte contenuto articolo testo""".split()
)
MAX_ID_WORDS: Final = 3
SLUG_WORDS: Final = frozenset("a an the with of to and in on for is how what why your".split())
WORD_SPLIT: Final = re.compile(r"[\s_\-]+")

BLOCKS: Final = "p, pre, li, td, th, dd, dt, blockquote, figcaption, h2, h3, h4, h5, h6"
GOOD_MIN_CHARS: Final = 50
MAX_GOOD_LINK_DENSITY: Final = 0.35
BAD_WEIGHT: Final = 1.0
POS_BONUS: Final = 0.15
# A sibling of the best element joins it when it scores this share of the best's score.
SIBLING_SHARE: Final = 0.2
SIBLING_MIN_SCORE: Final = 100.0
SIBLING_MAX_LINK_DENSITY: Final = 0.25
ANCESTOR_LIMIT: Final = 12
# A teaser's title is a link that is a heading, holds one, or stands outside any text block with
# a headline's length. A container pays this many characters for each, about a teaser's summary,
# so that a list of teasers does not join the article beside it.
TEASER_TITLE_COST: Final = 200.0
TEASER_TITLE_MIN_CHARS: Final = 25
# A microdata ``articleBody`` shorter than this is a summary or an empty shell filled by script.
HINT_MIN_CHARS: Final = 200
MAX_TITLE_CANDIDATES: Final = 5
HEADING_TAGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
INLINE_TAGS: Final = frozenset(
    """a abbr b bdi bdo big br cite code data del dfn em font i ins kbd mark q s samp small
    span strike strong sub sup time tt u var wbr""".split()
)


def words(node: LexborNode) -> list[str]:
    attrs = node.attributes
    words = [w for w in WORD_SPLIT.split((attrs.get("class") or "").lower()) if w]
    # An id of many words, some of them function words, is a heading's slug
    # (``sharing-with-a-single-developer``), not a name.
    id_words = [w for w in WORD_SPLIT.split((attrs.get("id") or "").lower()) if w]
    if len(id_words) <= MAX_ID_WORDS or SLUG_WORDS.isdisjoint(id_words):
        words.extend(id_words)
    return words


def is_boilerplate_name(words: list[str]) -> bool:
    return any(w in NEG_WORDS for w in words) or NEG_PART_RE.search(" ".join(words)) is not None


def has_strong_boilerplate_name(words: list[str]) -> bool:
    return STRONG_NEG_PART_RE.search(" ".join(words)) is not None


def long_enough(text: str) -> bool:
    """A sentence's length: in UTF-8 bytes, so that a CJK character (3 bytes) weighs about as
    much as a short word does in an alphabetic script."""
    return len(text) >= GOOD_MIN_CHARS or len(text.encode()) >= GOOD_MIN_CHARS


def text_len(node: LexborNode) -> int:
    return len(node.text(deep=True, separator=" ", strip=True))


def link_len(node: LexborNode) -> int:
    return sum(text_len(a) for a in node.css("a"))


def link_lengths(root: LexborNode) -> dict[int, int]:
    """``link_len`` of ``root`` and of every element below it that holds a link, by element id,
    in one query: each link's text length is added to the link and its ancestors up to
    ``root``."""
    root_id = root.mem_id
    lengths: dict[int, int] = {}
    for link in root.css("a"):
        length = text_len(link)
        if not length:
            continue
        node: LexborNode | None = link
        while node is not None:
            nid = node.mem_id
            lengths[nid] = lengths.get(nid, 0) + length
            if nid == root_id:
                break
            node = node.parent
    return lengths


def loose_text(body: LexborNode, block_ids: set[int]) -> dict[int, tuple[LexborNode, int, int]]:
    """Text outside every text block (``<div>text<br><br>more</div>``), by the element holding it.

    Returns, per element id: the element, its loose text length and how much of it is link text.
    The walk never enters a block (most of a page's nodes are inside one); a text node's holder
    is its nearest ancestor that is not an inline element. Explicit stack: garbage pages can
    nest thousands of levels deep.
    """
    loose: dict[int, tuple[LexborNode, int, int]] = {}
    # (children still to see, the element holding their text, whether they are inside a link)
    stack = [(body.iter(include_text=True), body, False)]
    while stack:
        children, holder, in_link = stack[-1]
        for node in children:
            if node.is_text_node:
                length = len((node.text_content or "").strip())
                if length:
                    hid = holder.mem_id
                    _, total, linked = loose.get(hid, (holder, 0, 0))
                    loose[hid] = (holder, total + length, linked + (length if in_link else 0))
                continue
            if node.mem_id in block_ids:
                continue
            tag = node.tag
            if tag in INLINE_TAGS:
                stack.append((node.iter(include_text=True), holder, in_link or tag == "a"))
            else:
                stack.append((node.iter(include_text=True), node, False))
            break
        else:
            stack.pop()
    return loose


def links_holding_headings(body: LexborNode) -> set[int]:
    """The ids of the links under ``body`` that hold a heading: one query for the whole page."""
    held: set[int] = set()
    for heading in body.css("a h2, a h3, a h4, a h5, a h6"):
        node = heading.parent
        while node is not None:
            if node.tag == "a":
                held.add(node.mem_id)
            node = node.parent
    return held


def teaser_title(
    link: LexborNode, block_ids: set[int], holds_heading: bool, text: str
) -> tuple[bool, int]:
    """Whether ``link`` (whose text is ``text``) is a teaser's title, and the id of the text block
    it starts (or 0).

    A teaser title is a heading that is a link, a link holding a heading, or a headline-long link
    that starts its block or stands outside any (a card: title link, then a summary)."""
    if holds_heading:
        return True, 0
    parent = link.parent
    for _ in range(4):
        if parent is None:
            break
        if parent.mem_id in block_ids:
            if parent.tag in HEADING_TAGS:
                return True, 0
            if len(text) < TEASER_TITLE_MIN_CHARS:
                return False, 0
            if parent.text(deep=True, separator=" ", strip=True).startswith(text):
                return True, parent.mem_id
            return False, 0
        parent = parent.parent
    return len(text) >= TEASER_TITLE_MIN_CHARS, 0


def is_wrapper(node: LexborNode, length: int, keep_above: float) -> bool:
    """Whether a boilerplate-looking element holds most of the page's prose (a page wrapper).

    A mega-menu can hold most of a short article's page text: it is mostly links."""
    return length >= keep_above and link_len(node) < length * 0.5


def credit(
    start: LexborNode,
    amount: float,
    target: dict[int, float],
    nodes: dict[int, LexborNode],
    body_id: int,
) -> None:
    """Add ``amount`` to ``start`` and its ancestors, up to the body or the ancestor limit."""
    node: LexborNode | None = start
    for _ in range(ANCESTOR_LIMIT):
        if node is None:
            return
        key = node.mem_id
        target[key] = target.get(key, 0.0) + amount
        nodes.setdefault(key, node)
        if key == body_id:
            return
        node = node.parent


def merge_siblings(
    best: LexborNode, best_score: float, good: dict[int, float], bad: dict[int, float]
) -> LexborNode:
    """``best`` or, when its siblings continue it, their parent without the other siblings.

    As readability does: a body split by an ad or a share bar into sibling blocks keeps the
    blocks that score at least a fifth of the best, with few links; the parent is returned
    with the siblings that do not (boilerplate between the parts) removed."""
    parent = best.parent
    if parent is None or parent.tag in ("body", "html"):
        return best
    threshold = max(SIBLING_MIN_SCORE, best_score * SIBLING_SHARE)
    keep: list[LexborNode] = []
    drop: list[LexborNode] = []
    for sibling in parent.iter():
        sid = sibling.mem_id
        if sid == best.mem_id:
            keep.append(sibling)
            continue
        g = good.get(sid, 0.0)
        if g and g - BAD_WEIGHT * bad.get(sid, 0.0) >= threshold:
            length = text_len(sibling)
            if length and link_len(sibling) < length * SIBLING_MAX_LINK_DENSITY:
                keep.append(sibling)
                continue
        drop.append(sibling)
    if len(keep) == 1:
        return best
    for sibling in drop:
        sibling.remove()
    return parent


def article_body(body: LexborNode) -> LexborNode | None:
    """The page's own mark of its body: one ``itemprop="articleBody"`` element with prose."""
    marked = body.css("[itemprop=articleBody], [itemprop=articlebody]")
    if len(marked) != 1 or text_len(marked[0]) < HINT_MIN_CHARS:
        return None
    return marked[0]


def titled_article(best: LexborNode) -> LexborNode:
    """The one ``<article>`` inside ``best`` that holds the page's ``<h1>``, if others are cards.

    A post followed by "you may also like" posts, each an ``<article>`` with a summary, makes
    their common parent win; the article that carries the title is the page's own."""
    articles = best.css("article")
    if len(articles) < 2:
        return best
    titled = [a for a in articles if a.css_first("h1") is not None]
    # (``css`` matches the element itself too.)
    if len(titled) != 1 or len(titled[0].css("article")) > 1:
        return best
    return titled[0]


def page_title(tree: LexborHTMLParser) -> str:
    """The article's title: the longest ``<h1>`` that ``og:title`` or ``<title>`` contains (a
    logo's ``<h1>`` comes first on some pages), else the first ``<h1>``, else ``og:title``, else
    ``<title>``."""
    meta = tree.css_first("meta[property='og:title'][content]")
    hint = (meta.attributes.get("content") or "").strip() if meta is not None else ""
    if not hint:
        head_title = tree.css_first("title")
        hint = head_title.text(strip=True) if head_title is not None else ""
    texts = [" ".join(h1.text(separator=" ").split()) for h1 in tree.css("h1")]
    texts = [t for t in texts[:MAX_TITLE_CANDIDATES] if t]
    # The longest one: "Daily River" is in "Flood closes the towpath | Daily River" too.
    named = [t for t in texts if t.lower() in hint.lower()]
    if named:
        return max(named, key=len)
    return texts[0] if texts else " ".join(hint.split())
