"""Main-content extraction on a lexbor tree, for ``only_main_content``.

The page is parsed once with lexbor (selectolax). ``strip_boilerplate`` removes what is never main
content: unrendered elements, hidden elements, forms, ``nav``/``aside``/``footer``/``header`` and
elements whose class or id names boilerplate (``comment``, ``share``, ``sidebar``, ``cookie``...),
unless that element holds most of the page's text. ``main_node`` then scores every ancestor of
the page's text (blocks: paragraphs, list items, cells, code, headings; and text outside any
block, as in ``<div>text<br><br>more</div>``) by the characters of its good text (long enough,
few links) minus those of its bad text (short or link-dense) and minus a fixed cost per teaser
title (a link that is or holds a heading, or a headline-long link that starts a card), and keeps
the best. The page's own mark wins over the scores: one ``itemprop="articleBody"`` element with
prose. Among several ``<article>`` elements the best holds, the one with the ``<h1>`` is the
page's (the others are cards); siblings of the best that score a fifth of it with few links
continue it and join it (readability's sibling merge). ``prune`` drops link-dense lists and
link-only headings inside the result. Class words are English, Portuguese, Spanish, French,
German and Italian (``main_scoring``).

``extract_main(html, url)`` returns the title (the ``<h1>`` that ``<title>`` or ``og:title``
names, else the first; taken out of the body), the cleaned
body HTML with absolute URLs, its text, and its markdown (html-to-markdown on the body HTML).
The tree is changed in place: parse a tree of its own for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import urljoin

import html_to_markdown
from selectolax.lexbor import LexborHTMLParser, LexborNode

from service.extraction import main_scoring as scoring

__all__ = [
    "MARKDOWN_OPTIONS",
    "MainContent",
    "absolutize",
    "extract_main",
    "main_node",
    "main_of",
    "main_tree",
    "node_text",
    "prune",
    "strip_boilerplate",
]

UNRENDERED: Final = [
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed",
    "input", "button", "select", "textarea", "label", "dialog", "link", "meta",
]  # fmt: skip
# ASP.NET and some CMSs wrap the whole page in one <form>: forms are removed only when small.
_STRUCTURAL: Final = "nav, aside, footer, header, form, figcaption"
HIDDEN: Final = (
    "[hidden], [aria-hidden=true], [style*='display:none' i], [style*='display: none' i], "
    "[style*='visibility:hidden' i], [style*='visibility: hidden' i], [role=dialog], "
    "[role=navigation], [role=complementary], [role=banner], [role=contentinfo], [role=search]"
)
_NAMED: Final = "[class], [id]"


def strip_boilerplate(tree: LexborHTMLParser) -> LexborNode | None:
    """Remove what is never main content from ``tree``; returns its body (None if it has none)."""
    body = tree.body
    if body is None:
        return None
    tree.strip_tags(UNRENDERED)
    for node in body.css(HIDDEN):
        node.remove()
    total = scoring.text_len(body)
    # An element that holds most of the page (``<div class="page has-sidebar">``) is a wrapper.
    keep_above = total * 0.5
    for node in body.css(_STRUCTURAL):
        if node.parent is not None and not scoring.is_wrapper(
            node, scoring.text_len(node), keep_above
        ):
            node.remove()
    # What the structural pass removed (a mega-menu) no longer counts in a content wrapper's share.
    total = scoring.text_len(body)
    for node in body.css(_NAMED):
        if node.tag in ("html", "body", "main", "article"):
            continue
        words = scoring.words(node)
        if not scoring.is_boilerplate_name(words):
            continue
        length = scoring.text_len(node)
        # ``field-name-body field-label-hidden``, ``l-sidebar-fixed l-article-body-segment``: a
        # content word, or the page's <h1>, beside a boilerplate word marks a wrapper.
        if scoring.is_wrapper(node, length, keep_above) or node.css_first("h1") is not None:
            continue
        if (
            any(w in scoring.POS_WORDS for w in words)
            and length >= total * 0.2
            and not scoring.has_strong_boilerplate_name(words)
        ):
            continue
        node.remove()
    return body


def main_node(body: LexborNode) -> LexborNode:
    """The element that holds the main content of an already stripped body."""
    blocks = body.css(scoring.BLOCKS)
    block_ids = {b.mem_id for b in blocks}
    good: dict[int, float] = {}
    bad: dict[int, float] = {}
    nodes: dict[int, LexborNode] = {}
    link_chars, teaser_blocks = _links_of_blocks(body, block_ids, bad, nodes)
    _score_blocks(body, blocks, block_ids, link_chars, teaser_blocks, good, bad, nodes)
    # Text outside any block counts for the element that holds it and that element's ancestors.
    for holder, length, linked in scoring.loose_text(body, block_ids).values():
        is_good = (
            length >= scoring.GOOD_MIN_CHARS and linked / length < scoring.MAX_GOOD_LINK_DENSITY
        )
        target = good if is_good else bad
        scoring.credit(holder, length, target, nodes, body.mem_id)
    best, best_score = _best(body, nodes, good, bad)
    hinted = scoring.article_body(body)
    if hinted is not None:
        return hinted
    titled = scoring.titled_article(best)
    if titled is not best or best.mem_id == body.mem_id:
        return titled
    return scoring.merge_siblings(best, best_score, good, bad)


def _links_of_blocks(
    body: LexborNode, block_ids: set[int], bad: dict[int, float], nodes: dict[int, LexborNode]
) -> tuple[dict[int, int], set[int]]:
    """Each block's link text, summed once from the links up (as ``scoring.link_len`` would),
    and the blocks that a teaser's title starts (a card in a list item: not article text),
    whose titles' holders are charged in ``bad``."""
    body_id = body.mem_id
    teaser_blocks: set[int] = set()
    link_chars: dict[int, int] = {}
    headed = scoring.links_holding_headings(body)
    for link in body.css("a"):
        text = link.text(deep=True, separator=" ", strip=True)
        if text:
            holder = link.parent
            while holder is not None:
                hid = holder.mem_id
                if hid in block_ids:
                    link_chars[hid] = link_chars.get(hid, 0) + len(text)
                if hid == body_id:
                    break
                holder = holder.parent
        is_title, block_id = scoring.teaser_title(link, block_ids, link.mem_id in headed, text)
        if not is_title:
            continue
        teaser_blocks.add(block_id)
        if link.parent is not None:
            scoring.credit(link.parent, scoring.TEASER_TITLE_COST, bad, nodes, body_id)
    return link_chars, teaser_blocks


def _score_blocks(
    body: LexborNode,
    blocks: list[LexborNode],
    block_ids: set[int],
    link_chars: dict[int, int],
    teaser_blocks: set[int],
    good: dict[int, float],
    bad: dict[int, float],
    nodes: dict[int, LexborNode],
) -> None:
    """Credits each outermost block's text to its ancestors, as good text or bad."""
    body_id = body.mem_id
    for block in blocks:
        # A table cell of a table layout can be the whole article, so it competes too.
        ancestors: list[LexborNode] = [block] if block.tag in ("td", "th") else []
        nested = in_link = False
        parent = block.parent
        while parent is not None and len(ancestors) < scoring.ANCESTOR_LIMIT:
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
        density = 1.0 if in_link else link_chars.get(block.mem_id, 0) / length
        is_good = (
            block.mem_id not in teaser_blocks
            and density < scoring.MAX_GOOD_LINK_DENSITY
            and (scoring.long_enough(text) or block.tag in ("pre", "td", "th", "h2", "h3", "h4"))
        )
        target = good if is_good else bad
        for node in ancestors:
            nid = node.mem_id
            target[nid] = target.get(nid, 0.0) + length
            nodes.setdefault(nid, node)


def _best(
    body: LexborNode,
    nodes: dict[int, LexborNode],
    good: dict[int, float],
    bad: dict[int, float],
) -> tuple[LexborNode, float]:
    """The candidate of the highest score (the body when none has good text), and its score."""
    best, best_score = body, float("-inf")
    for nid, candidate in nodes.items():
        g = good.get(nid, 0.0)
        if not g:
            continue
        score = g - scoring.BAD_WEIGHT * bad.get(nid, 0.0)
        if any(w in scoring.POS_WORDS for w in scoring.words(candidate)) or candidate.tag in (
            "article",
            "main",
        ):
            score += scoring.POS_BONUS * g
        if score > best_score:
            best, best_score = candidate, score
    return best, best_score


def prune(node: LexborNode) -> None:
    """Drop link lists and link-only headings left inside the main content."""
    # Each element's link text (``scoring.link_len``), summed once from the links up. The
    # elements come in document order, so none has lost a descendant when its turn comes.
    linked = scoring.link_lengths(node)
    for child in node.css("ul, ol, div, section, table, h1, h2, h3, h4, h5, h6, p"):
        length = scoring.text_len(child)
        if not length:
            if child.css_first("img, pre, video") is None:
                child.remove()
            continue
        density = linked.get(child.mem_id, 0) / length
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


# html-to-markdown's single-pass scanner (tier 1; it hands what it cannot convert to tier 2) takes
# half of tier 2's time. On 744 pages and main contents it differed from tier 2 on 15, only in
# what renders alike or better (docs/content.md), once empty ``title`` attributes are dropped.
# Every enumerated option is given as the library's own value: its ``convert`` turns strings
# into them on every call, 32 us a page.
_md = html_to_markdown
MARKDOWN_OPTIONS: Final = _md.ConversionOptions(
    extract_metadata=False,
    heading_style=_md.HeadingStyle.ATX,
    code_block_style=_md.CodeBlockStyle.BACKTICKS,
    autolinks=False,
    preprocessing=_md.PreprocessingOptions(enabled=False, preset=_md.PreprocessingPreset.STANDARD),
    tier_strategy=_md.TierStrategy.TIER1,
    list_indent_type=_md.ListIndentType.SPACES,
    highlight_style=_md.HighlightStyle.DOUBLE_EQUAL,
    whitespace_mode=_md.WhitespaceMode.NORMALIZED,
    newline_style=_md.NewlineStyle.SPACES,
    inline_data_media=_md.InlineDataMedia.KEEP,
    hidden_content=_md.HiddenContent.DROP,
    url_escape_style=_md.UrlEscapeStyle.ANGLE,
    link_style=_md.LinkStyle.INLINE,
    output_format=_md.OutputFormat.MARKDOWN,
)


def main_tree(html: str) -> tuple[str, LexborNode | None]:
    """Parse ``html``; returns the page title (see ``page_title``) and the pruned main node."""
    return main_of(LexborHTMLParser(html))


def main_of(tree: LexborHTMLParser) -> tuple[str, LexborNode | None]:
    """:func:`main_tree` of a page already parsed; ``tree`` is changed in place."""
    title = scoring.page_title(tree)
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
    md = html_to_markdown.convert(body_html, MARKDOWN_OPTIONS).content if markdown else ""
    return MainContent(title, body_html, node_text(node), md or "")
