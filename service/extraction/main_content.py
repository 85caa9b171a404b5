"""Main-content extraction on a lexbor tree, for ``only_main_content``.

The page is parsed once with lexbor (selectolax). ``strip_boilerplate`` removes what is never main
content: unrendered elements, hidden elements, forms, ``nav``/``aside``/``footer``/``header`` and
elements whose class or id names boilerplate (``comment``, ``share``, ``sidebar``, ``cookie``...),
unless that element holds most of the page's text. ``main_node`` then scores every ancestor of
the page's text (blocks: paragraphs, list items, cells, code, headings; and text outside any
block, as in ``<div>text<br><br>more</div>``) by the characters of its good text (long enough,
few links) minus those of its bad text (short or link-dense) and minus a fixed cost per teaser
title (a link that is or holds a heading, or a headline-long link that starts a card), and keeps
the best; ``prune`` drops link-dense lists and link-only headings inside it.

``extract_main(html, url)`` returns the title (first ``<h1>``, taken out of the body), the cleaned
body HTML with absolute URLs, its text, and its markdown (html-to-markdown on the body HTML).
The tree is changed in place: parse a tree of its own for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import urljoin

import html_to_markdown
from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = [
    "MainContent",
    "absolutize",
    "extract_main",
    "main_node",
    "main_tree",
    "node_text",
    "prune",
    "strip_boilerplate",
]

_UNRENDERED: Final = [
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed",
    "input", "button", "select", "textarea", "label", "dialog", "link", "meta",
]  # fmt: skip
# ASP.NET and some CMSs wrap the whole page in one <form>: forms are removed only when small.
_STRUCTURAL: Final = "nav, aside, footer, header, form, figcaption"
_HIDDEN: Final = (
    "[hidden], [aria-hidden=true], [style*='display:none' i], [style*='display: none' i], "
    "[style*='visibility:hidden' i], [style*='visibility: hidden' i], [role=dialog], "
    "[role=navigation], [role=complementary], [role=banner], [role=contentinfo], [role=search]"
)
_NAMED: Final = "[class], [id]"

# Class and id words that name boilerplate: a word matches when it equals one of _NEG_WORDS or
# contains one of _NEG_PARTS (``sphinxsidebar``, ``commentlist``, ``td-post-sharing``...).
_NEG_WORDS: Final = frozenset(
    """ad ads adv advert advertisement adslot rec gpt dfp sponsor sponsored promo promoted
    byline author bio meta tags tag tagcloud cc consent gdpr popular trending recommended
    more upsells crosssells reviews review rating toc toctree pager pagination
    actions action buttons btn print hidden postprofile profile signature jumpbox
    breadcrumb breadcrumbs skip subscribe newsletter masthead colophon secondary
    outbrain taboola disqus related share sharing social credit credits caption captions
    dateline timestamp date updated published
    lateral pie pied piede teilen autor auteur autore etiquetas tambem fecha datum""".split()
)
_NEG_PARTS: Final = (
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
_STRONG_NEG_PARTS: Final = (
    "comment", "related", "trending", "popular", "recommend", "share", "sharing", "social",
    "cookie", "consent", "newsletter", "subscribe", "advert", "sponsor", "promo", "outbrain",
    "taboola", "disqus", "breadcrumb", "comentario", "commentaire", "kommentar", "commento",
    "relacionad", "correlat", "publicidad", "publicidade", "werbung", "compartilh", "compartir",
)  # fmt: skip
_POS_WORDS: Final = frozenset(
    """content entry article post body story text main markdown prose typeset
    articlebody postbody rich blog
    conteudo materia noticia contenido articulo cuerpo corpo texto inhalt artikel haupttext
    contenu corps texte contenuto articolo testo""".split()
)
_MAX_ID_WORDS: Final = 3
_SLUG_WORDS: Final = frozenset("a an the with of to and in on for is how what why your".split())
_WORD_SPLIT: Final = re.compile(r"[\s_\-]+")

_BLOCKS: Final = "p, pre, li, td, th, dd, dt, blockquote, figcaption, h2, h3, h4, h5, h6"
_GOOD_MIN_CHARS: Final = 50
_MAX_GOOD_LINK_DENSITY: Final = 0.35
_BAD_WEIGHT: Final = 1.0
_POS_BONUS: Final = 0.15
# A sibling of the best element joins it when it scores this share of the best's score.
_SIBLING_SHARE: Final = 0.2
_SIBLING_MIN_SCORE: Final = 100.0
_SIBLING_MAX_LINK_DENSITY: Final = 0.25
_ANCESTOR_LIMIT: Final = 12
# A teaser's title is a link that is a heading, holds one, or stands outside any text block with
# a headline's length. A container pays this many characters for each, about a teaser's summary,
# so that a list of teasers does not join the article beside it.
_TEASER_TITLE_COST: Final = 200.0
_TEASER_TITLE_MIN_CHARS: Final = 25
# A microdata ``articleBody`` shorter than this is a summary or an empty shell filled by script.
_HINT_MIN_CHARS: Final = 200
_HEADING_TAGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_INLINE_TAGS: Final = frozenset(
    """a abbr b bdi bdo big br cite code data del dfn em font i ins kbd mark q s samp small
    span strike strong sub sup time tt u var wbr""".split()
)


def _words(node: LexborNode) -> list[str]:
    attrs = node.attributes
    words = [w for w in _WORD_SPLIT.split((attrs.get("class") or "").lower()) if w]
    # An id of many words, some of them function words, is a heading's slug
    # (``sharing-with-a-single-developer``), not a name.
    id_words = [w for w in _WORD_SPLIT.split((attrs.get("id") or "").lower()) if w]
    if len(id_words) <= _MAX_ID_WORDS or _SLUG_WORDS.isdisjoint(id_words):
        words.extend(id_words)
    return words


def _is_boilerplate_name(words: list[str]) -> bool:
    for w in words:
        if w in _NEG_WORDS or any(p in w for p in _NEG_PARTS):
            return True
    return False


def _long_enough(text: str) -> bool:
    """A sentence's length: in UTF-8 bytes, so that a CJK character (3 bytes) weighs about as
    much as a short word does in an alphabetic script."""
    return len(text) >= _GOOD_MIN_CHARS or len(text.encode()) >= _GOOD_MIN_CHARS


def _text_len(node: LexborNode) -> int:
    return len(node.text(deep=True, separator=" ", strip=True))


def _link_len(node: LexborNode) -> int:
    return sum(_text_len(a) for a in node.css("a"))


def _loose_text(body: LexborNode, block_ids: set[int]) -> dict[int, tuple[LexborNode, int, int]]:
    """Text outside every text block (``<div>text<br><br>more</div>``), by the element holding it.

    Returns, per element id: the element, its loose text length and how much of it is link text.
    """
    inside: dict[int, bool] = {}  # element id -> inside a text block (memo)

    def in_block(node: LexborNode) -> bool:
        path: list[int] = []
        found = False
        current: LexborNode | None = node
        while current is not None:
            cid = current.mem_id
            if cid in inside:
                found = inside[cid]
                break
            if cid in block_ids:
                found = True
                break
            path.append(cid)
            if cid == body_id:
                break
            current = current.parent
        for cid in path:
            inside[cid] = found
        return found

    body_id = body.mem_id
    loose: dict[int, tuple[LexborNode, int, int]] = {}
    for node in body.traverse(include_text=True):
        if not node.is_text_node:
            continue
        length = len((node.text_content or "").strip())
        if not length:
            continue
        holder = node.parent
        in_link = False
        while holder is not None and holder.tag in _INLINE_TAGS:
            in_link = in_link or holder.tag == "a"
            holder = holder.parent
        if holder is None or in_block(holder):
            continue
        hid = holder.mem_id
        _, total, linked = loose.get(hid, (holder, 0, 0))
        loose[hid] = (holder, total + length, linked + (length if in_link else 0))
    return loose


def _teaser_title(link: LexborNode, block_ids: set[int]) -> tuple[bool, int]:
    """Whether ``link`` is a teaser's title, and the id of the text block it starts (or 0).

    A teaser title is a heading that is a link, a link holding a heading, or a headline-long link
    that starts its block or stands outside any (a card: title link, then a summary)."""
    if link.css_first("h2, h3, h4, h5, h6") is not None:
        return True, 0
    parent = link.parent
    for _ in range(4):
        if parent is None:
            break
        if parent.mem_id in block_ids:
            if parent.tag in _HEADING_TAGS:
                return True, 0
            text = link.text(deep=True, separator=" ", strip=True)
            if len(text) < _TEASER_TITLE_MIN_CHARS:
                return False, 0
            if parent.text(deep=True, separator=" ", strip=True).startswith(text):
                return True, parent.mem_id
            return False, 0
        parent = parent.parent
    return _text_len(link) >= _TEASER_TITLE_MIN_CHARS, 0


def _is_wrapper(node: LexborNode, length: int, keep_above: float) -> bool:
    """Whether a boilerplate-looking element holds most of the page's prose (a page wrapper).

    A mega-menu can hold most of a short article's page text: it is mostly links."""
    return length >= keep_above and _link_len(node) < length * 0.5


def strip_boilerplate(tree: LexborHTMLParser) -> LexborNode | None:
    """Remove what is never main content from ``tree``; returns its body (None if it has none)."""
    body = tree.body
    if body is None:
        return None
    tree.strip_tags(_UNRENDERED)
    for node in body.css(_HIDDEN):
        node.remove()
    total = _text_len(body)
    # An element that holds most of the page (``<div class="page has-sidebar">``) is a wrapper.
    keep_above = total * 0.5
    for node in body.css(_STRUCTURAL):
        if node.parent is not None and not _is_wrapper(node, _text_len(node), keep_above):
            node.remove()
    # What the structural pass removed (a mega-menu) no longer counts in a content wrapper's share.
    total = _text_len(body)
    for node in body.css(_NAMED):
        if node.tag in ("html", "body", "main", "article"):
            continue
        words = _words(node)
        if not _is_boilerplate_name(words):
            continue
        length = _text_len(node)
        # ``field-name-body field-label-hidden``, ``l-sidebar-fixed l-article-body-segment``: a
        # content word, or the page's <h1>, beside a boilerplate word marks a wrapper.
        if _is_wrapper(node, length, keep_above) or node.css_first("h1") is not None:
            continue
        if (
            any(w in _POS_WORDS for w in words)
            and length >= total * 0.2
            and not any(p in w for w in words for p in _STRONG_NEG_PARTS)
        ):
            continue
        node.remove()
    return body


def _credit(
    start: LexborNode,
    amount: float,
    target: dict[int, float],
    nodes: dict[int, LexborNode],
    body_id: int,
) -> None:
    """Add ``amount`` to ``start`` and its ancestors, up to the body or the ancestor limit."""
    node: LexborNode | None = start
    for _ in range(_ANCESTOR_LIMIT):
        if node is None:
            return
        key = node.mem_id
        target[key] = target.get(key, 0.0) + amount
        nodes.setdefault(key, node)
        if key == body_id:
            return
        node = node.parent


def main_node(body: LexborNode) -> LexborNode:
    """The element that holds the main content of an already stripped body."""
    blocks = body.css(_BLOCKS)
    block_ids = {b.mem_id for b in blocks}
    good: dict[int, float] = {}
    bad: dict[int, float] = {}
    nodes: dict[int, LexborNode] = {}
    body_id = body.mem_id
    # A block that a teaser's title starts (a card in a list item) is not article text.
    teaser_blocks: set[int] = set()
    for link in body.css("a"):
        is_title, block_id = _teaser_title(link, block_ids)
        if not is_title:
            continue
        teaser_blocks.add(block_id)
        if link.parent is not None:
            _credit(link.parent, _TEASER_TITLE_COST, bad, nodes, body_id)
    for block in blocks:
        # A table cell of a table layout can be the whole article, so it competes too.
        ancestors: list[LexborNode] = [block] if block.tag in ("td", "th") else []
        nested = in_link = False
        parent = block.parent
        while parent is not None and len(ancestors) < _ANCESTOR_LIMIT:
            pid = parent.mem_id
            if pid in block_ids:
                nested = True
                break
            in_link = in_link or parent.tag == "a"
            ancestors.append(parent)
            if pid == body_id:
                break
            parent = parent.parent
        if nested:
            continue
        text = block.text(deep=True, separator=" ", strip=True)
        length = len(text)
        if not length:
            continue
        density = 1.0 if in_link else _link_len(block) / length
        is_good = (
            block.mem_id not in teaser_blocks
            and density < _MAX_GOOD_LINK_DENSITY
            and (_long_enough(text) or block.tag in ("pre", "td", "th", "h2", "h3", "h4"))
        )
        target = good if is_good else bad
        for node in ancestors:
            nid = node.mem_id
            target[nid] = target.get(nid, 0.0) + length
            nodes.setdefault(nid, node)
    # Text outside any block counts for the element that holds it and that element's ancestors.
    for holder, length, linked in _loose_text(body, block_ids).values():
        is_good = length >= _GOOD_MIN_CHARS and linked / length < _MAX_GOOD_LINK_DENSITY
        target = good if is_good else bad
        _credit(holder, length, target, nodes, body_id)
    best, best_score = body, float("-inf")
    for nid, candidate in nodes.items():
        g = good.get(nid, 0.0)
        if not g:
            continue
        score = g - _BAD_WEIGHT * bad.get(nid, 0.0)
        if any(w in _POS_WORDS for w in _words(candidate)) or candidate.tag in ("article", "main"):
            score += _POS_BONUS * g
        if score > best_score:
            best, best_score = candidate, score
    hinted = _article_body(body)
    if hinted is not None:
        return hinted
    titled = _titled_article(best)
    if titled is not best or best.mem_id == body_id:
        return titled
    return _merge_siblings(best, best_score, good, bad)


def _merge_siblings(
    best: LexborNode, best_score: float, good: dict[int, float], bad: dict[int, float]
) -> LexborNode:
    """``best`` or, when its siblings continue it, their parent without the other siblings.

    As readability does: a body split by an ad or a share bar into sibling blocks keeps the
    blocks that score at least a fifth of the best, with few links; the parent is returned
    with the siblings that do not (boilerplate between the parts) removed."""
    parent = best.parent
    if parent is None or parent.tag in ("body", "html"):
        return best
    threshold = max(_SIBLING_MIN_SCORE, best_score * _SIBLING_SHARE)
    keep: list[LexborNode] = []
    drop: list[LexborNode] = []
    for sibling in parent.iter():
        sid = sibling.mem_id
        if sid == best.mem_id:
            keep.append(sibling)
            continue
        g = good.get(sid, 0.0)
        if g and g - _BAD_WEIGHT * bad.get(sid, 0.0) >= threshold:
            length = _text_len(sibling)
            if length and _link_len(sibling) < length * _SIBLING_MAX_LINK_DENSITY:
                keep.append(sibling)
                continue
        drop.append(sibling)
    if len(keep) == 1:
        return best
    for sibling in drop:
        sibling.remove()
    return parent


def _article_body(body: LexborNode) -> LexborNode | None:
    """The page's own mark of its body: one ``itemprop="articleBody"`` element with prose."""
    marked = body.css("[itemprop=articleBody], [itemprop=articlebody]")
    if len(marked) != 1 or _text_len(marked[0]) < _HINT_MIN_CHARS:
        return None
    return marked[0]


def _titled_article(best: LexborNode) -> LexborNode:
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


def prune(node: LexborNode) -> None:
    """Drop link lists and link-only headings left inside the main content."""
    for child in node.css("ul, ol, div, section, table, h1, h2, h3, h4, h5, h6, p"):
        length = _text_len(child)
        if not length:
            if child.css_first("img, pre, video") is None:
                child.remove()
            continue
        density = _link_len(child) / length
        limit = 0.9 if (child.tag or "")[:1] in ("h", "p") else 0.5
        if density >= limit:
            child.remove()


def absolutize(node: LexborNode, base_url: str) -> None:
    """Rewrite ``href`` and ``src`` below ``node`` to absolute URLs."""
    for link in node.css("a[href]"):
        link.attrs["href"] = urljoin(base_url, link.attrs["href"] or "")
    for img in node.css("img[src]"):
        img.attrs["src"] = urljoin(base_url, img.attrs["src"] or "")


@dataclass(frozen=True, slots=True)
class MainContent:
    title: str
    html: str
    text: str
    markdown: str


_MARKDOWN_OPTIONS: Final = html_to_markdown.ConversionOptions(
    extract_metadata=False,
    heading_style="atx",
    code_block_style="backticks",
    autolinks=False,
    preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
)


def main_tree(html: str) -> tuple[str, LexborNode | None]:
    """Parse ``html``; returns the page title (first ``<h1>``) and the pruned main node."""
    tree = LexborHTMLParser(html)
    h1 = tree.css_first("h1")
    title = h1.text(separator=" ", strip=True) if h1 is not None else ""
    body = strip_boilerplate(tree)
    if body is None:
        return title, None
    node = main_node(body)
    for heading in node.css("h1"):
        heading.remove()
    prune(node)
    return title, node


def node_text(node: LexborNode) -> str:
    return " ".join(node.text(deep=True, separator=" ").split())


def extract_main(html: str, url: str = "", markdown: bool = True) -> MainContent:
    """The main content of a page: title, cleaned HTML, text and (optionally) markdown."""
    title, node = main_tree(html)
    if node is None:
        return MainContent(title, "", "", "")
    if url:
        absolutize(node, url)
    body_html = node.html or ""
    md = html_to_markdown.convert(body_html, _MARKDOWN_OPTIONS).content if markdown else ""
    return MainContent(title, body_html, node_text(node), md or "")
