"""Eight more layouts, written after ``lexbor_main`` was frozen (commit 54cdd90), to check it
on names and structures it was not tuned on: CSS-module and BEM class names, a ``<br>``-separated
table layout, a Q&A page, a recipe card, Read the Docs, a Shopify product page.
"""

# HTML templates: a tag split over lines reads worse than a long line.
# ruff: noqa: E501

from __future__ import annotations

import random

from bench.content import boilerplate as bp
from bench.content.prose import TOPIC_NAMES, Block, blocks_html, segments_html, sentence, title


def _mod(rng: random.Random, name: str) -> str:
    """A CSS-modules class name: ``article-body__content__17Yit``."""
    return f"{name}__{''.join(rng.choice('abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789') for _ in range(5))}"


def _story_cards(rng: random.Random, n: int, cls: str, heading: str) -> str:
    cards = []
    for _ in range(n):
        topic = rng.choice(TOPIC_NAMES)
        t = title(rng, topic, rng.randint(6, 10))
        cards.append(
            f"<li class='{_mod(rng, 'story-card')}'><div class='{_mod(rng, 'media-story-card__body')}'>"
            f"<a href='/{topic}/{bp.slug(t)}' data-testid='Heading'>{bp.h(t)}</a>"
            f"<p data-testid='Body'>{bp.h(sentence(rng, topic))} {bp.h(sentence(rng, topic))}</p>"
            f"<time>{rng.randint(1, 23)} hours ago</time></div></li>"
        )
    return f"<div class='{cls}'><h2>{heading}</h2><ul>{''.join(cards)}</ul></div>"


def reuters_like(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """CSS-module names everywhere, paragraphs as div > p[data-testid], read-next story cards."""
    pcls = _mod(rng, "text__text")
    paras = "".join(
        f"<div class='{_mod(rng, 'article-body__element')}'>{b}</div>"
        for b in blocks_html(blocks, f"class='{pcls}' data-testid='paragraph'")
    )
    signup = (
        f"<div class='{_mod(rng, 'article-body__element')}'><p class='{pcls}'>"
        "<a href='/newsletters/'>Sign up here.</a></p></div>"
    )
    return (
        f"{bp.head(rng, t, url)}<body><div id='__next'><div class='{_mod(rng, 'regular-article-layout')}'>"
        f"<div class='{_mod(rng, 'site-header')}'>{bp.nav_menu(rng, _mod(rng, 'nav-bar'), 72)}</div>"
        f"<div class='{_mod(rng, 'article-header')}'><h1 data-testid='Heading'>{bp.h(t)}</h1>"
        f"{bp.byline(rng)}</div><div class='{_mod(rng, 'article-body__container')}'>"
        f"<div class='{_mod(rng, 'article-body__content')}'>{paras}{signup}</div>"
        f"<p class='{_mod(rng, 'trust-badge')}'>Our Standards: <a href='/principles'>The Trust Principles.</a></p>"
        f"<div class='{_mod(rng, 'article-body__recirc')}'>{_story_cards(rng, 6, _mod(rng, 'read-next'), 'Read Next')}</div>"
        f"</div>{_story_cards(rng, 5, _mod(rng, 'more-from'), 'More from Reuters')}"
        f"<div class='{_mod(rng, 'site-footer')}'>{bp.site_footer(rng, 'divs')}</div></div></div>"
        f"<div id='onetrust-consent-sdk'><div id='onetrust-banner-sdk' class='otFlat'>{bp.cookie_banner(rng)}</div></div>"
        "</body></html>"
    )


def bbc_like(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """<main> with an <article> of data-component blocks; topic list and links block after."""

    def block(kind: str, inner: str) -> str:
        return f"<div data-component='{kind}' class='ssrcss-{bp.css_hash(rng)[4:]}-RichTextComponentWrapper'>{inner}</div>"

    parts = [
        block("subheadline-block" if b.kind.startswith("h") else "text-block", html)
        for b, html in zip(blocks, blocks_html(blocks), strict=True)
    ]
    topics = "".join(
        f"<li><a href='/topics/{s.lower()}'>{s}</a></li>" for s in rng.sample(bp.SECTIONS, 5)
    )
    most_read = "".join(
        f"<li><span>{i}</span><a href='/news/{i}'>{bp.h(title(rng, rng.choice(TOPIC_NAMES), 8))}</a></li>"
        for i in range(1, 11)
    )
    return (
        f"{bp.head(rng, t, url)}<body><div id='orb-header'>{bp.nav_menu(rng, 'orbit-header-links', 40)}</div>"
        f"<div class='ssrcss-1ocoo3l-Wrap'><main id='main-content' class='ssrcss-1d6jcn4-Main'><article>"
        f"<header class='ssrcss-1eqcsb1-HeadingWrapper'><h1 id='main-heading'>{bp.h(t)}</h1></header>"
        f"<div data-component='byline-block'>{bp.byline(rng)}</div>{''.join(parts)}"
        f"<div data-component='topic-list'><h2>Related Topics</h2><ul>{topics}</ul></div></article>"
        f"<div class='ssrcss-sotf8f-StyledRightColumn'><div data-component='mostRead'><h2>Most Read</h2>"
        f"<ol>{most_read}</ol></div></div></main>"
        f"<section data-component='links-block'>{_story_cards(rng, 6, 'ssrcss-promo-grid', 'More on this story')}</section></div>"
        f"{bp.site_footer(rng)}</body></html>"
    )


def legacy_table(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """A 2003 page: table layout, body text in a td as <font> with <br><br> between paragraphs."""
    body = "<br><br>\n".join(
        f"<b>{segments_html(b.segs)}</b>"
        if b.kind.startswith("h")
        else b.to_html()
        if b.kind in ("ul", "ol", "table", "pre")
        else segments_html(b.segs)
        for b in blocks
        if b.kind != "figure"  # a caption without <figure> would be a paragraph
    )
    left = "<br>".join(
        f"<a href='/{s.lower()}.htm'>{s}</a>" for s in bp.SECTIONS[: rng.randint(12, 20)]
    )
    right = "".join(
        f"<p><a href='/links/{n}.htm'><b>{bp.h(title(rng, rng.choice(TOPIC_NAMES), 5))}</b></a><br>"
        f"<font size='1'>{bp.h(sentence(rng, rng.choice(TOPIC_NAMES)))}</font></p>"
        for n in range(rng.randint(5, 8))
    )
    return (
        f"<html><head><title>{bp.h(t)}</title></head><body bgcolor='#ffffff'>"
        f"<table width='100%' border='0' cellpadding='4'><tr><td colspan='3'><img src='/logo.gif'> "
        f"<font size='5'>Northwind Gazette</font></td></tr><tr><td width='150' valign='top' bgcolor='#eeeeee'>"
        f"{left}</td><td valign='top'><font face='Verdana' size='2'><font size='4'><b>{bp.h(t)}</b></font>"
        f"<br><i>Posted {rng.randint(1, 28)}/03/2004</i><br><br>\n{body}<br><br></font></td>"
        f"<td width='200' valign='top'><b>Links of the week</b>{right}</td></tr>"
        f"<tr><td colspan='3' align='center'><font size='1'>Copyright 2004 Northwind Gazette. "
        f"<a href='/contact.htm'>Contact</a> | <a href='/advertise.htm'>Advertise</a></font></td></tr></table>"
        "</body></html>"
    )


def qa_like(rng: random.Random, posts: list[list[Block]], topic: str, url: str, t: str) -> str:
    """Q&A page: question and answers are the body; votes, user cards, comments, sidebars not."""

    def post(i: int, post_blocks: list[Block]) -> str:
        comments = "".join(
            f"<li class='comment'><span class='comment-copy'>{bp.h(sentence(rng, topic, 12))}</span> &ndash; "
            f"<a class='comment-user' href='/users/{n}'>user{n}</a></li>"
            for n in range(rng.randint(0, 3))
        )
        kind = "question" if i == 0 else "answer"
        return (
            f"<div id='{kind}-{i}' class='{kind} js-{kind}'><div class='post-layout'><div class='votecell'>"
            f"<div class='js-vote-count'>{rng.randint(-2, 300)}</div></div><div class='postcell post-layout--right'>"
            f"<div class='s-prose js-post-body' itemprop='text'>{''.join(blocks_html(post_blocks))}</div>"
            f"<div class='mt24'><div class='post-signature'><div class='user-info'><div class='user-details'>"
            f"<a href='/users/{i}'>{bp.h(title(rng, 'food', 2))}</a><span class='reputation-score'>"
            f"{rng.randint(1, 90)},{rng.randint(100, 999)}</span></div></div></div></div>"
            f"<div class='comments js-comments-container'><ul class='comments-list'>{comments}</ul></div>"
            f"</div></div></div>"
        )

    hot = "".join(
        f"<li><a href='/q/{n}'>{bp.h(title(rng, rng.choice(TOPIC_NAMES), 9))}</a></li>"
        for n in range(15)
    )
    return (
        f"{bp.head(rng, t, url)}<body class='question-page'><header class='s-topbar'>{bp.nav_menu(rng, 's-navigation', 30)}</header>"
        f"<div class='container'><div id='left-sidebar'>{bp.nav_menu(rng, 'left-sidebar--sticky-container', 12)}</div>"
        f"<div id='content'><div id='question-header'><h1 itemprop='name'><a href='/q/1'>{bp.h(t)}</a></h1></div>"
        f"<div id='mainbar' role='main'>{post(0, posts[0])}<div id='answers'><h2>{len(posts) - 1} Answers</h2>"
        f"{''.join(post(i, p) for i, p in enumerate(posts[1:], 1))}</div></div>"
        f"<div id='sidebar'><div class='s-sidebarwidget'><h4>Linked</h4><ul>{hot[:600]}</ul></div>"
        f"<div id='hot-network-questions'><h4>Hot Network Questions</h4><ul>{hot}</ul></div></div></div></div>"
        f"{bp.site_footer(rng)}</body></html>"
    )


def recipe_blog(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Food blog: story, ads between paragraphs, a recipe card (the last five blocks) inside the
    post, related posts."""
    ad = "<div class='adthrive-ad adthrive-content' data-google-query-id='x'></div>"
    story = blocks_html(blocks[:-5])
    for n in range(2, len(story), 3):
        story[n] += ad
    name, ing_h, ing, ins_h, ins = blocks_html(blocks[-5:])
    card = (
        f"<div class='wprm-recipe-container'><div class='wprm-recipe'>{name}"
        f"<div class='wprm-recipe-ingredients-container'>{ing_h}{ing}</div>"
        f"<div class='wprm-recipe-instructions-container'>{ins_h}{ins}</div></div></div>"
    )
    related = "".join(
        f"<div class='yarpp-thumbnail'><a href='/r/{n}'><img src='/r/{n}.jpg'><span>{bp.h(title(rng, 'food', 4))}</span></a>"
        f"<p>{bp.h(sentence(rng, 'food'))}</p></div>"
        for n in range(6)
    )
    return (
        f"{bp.head(rng, t, url)}<body class='single-post'>{bp.site_header(rng)}"
        f"<div class='site-inner'><div class='content-sidebar-wrap'><main class='content'><article class='post entry'>"
        f"<header class='entry-header'><h1 class='entry-title'>{bp.h(t)}</h1></header>"
        f"<a class='wprm-recipe-jump' href='#recipe'>Jump to Recipe</a>"
        f"<div class='entry-content'>{''.join(story)}<div id='recipe'>{card}</div>"
        f"<div class='yarpp yarpp-related'><h3>You may also like</h3>{related}</div></div></article></main>"
        f"<div class='sidebar sidebar-primary'>{bp.about_widget(rng, 2)}{bp.popular_list(rng, 6)}</div></div></div>"
        f"{bp.site_footer(rng)}</body></html>"
    )


def docs_rtd(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Read the Docs theme: wy-nav-side, breadcrumbs, itemprop=articleBody, footer buttons."""
    nav = "".join(
        f"<li class='toctree-l1'><a class='reference internal' href='{bp.slug(x)}.html'>{bp.h(x)}</a></li>"
        for x in (title(rng, topic, 3) for _ in range(rng.randint(20, 35)))
    )
    return (
        f"{bp.head(rng, t, url)}<body class='wy-body-for-nav'><div class='wy-grid-for-nav'>"
        f"<nav data-toggle='wy-nav-shift' class='wy-nav-side'><div class='wy-side-scroll'><div class='wy-menu wy-menu-vertical'>"
        f"<ul>{nav}</ul></div></div></nav><section class='wy-nav-content-wrap'><div class='wy-nav-content'>"
        f"<div class='rst-content'><div role='navigation' aria-label='Page navigation'><ul class='wy-breadcrumbs'>"
        f"<li><a href='index.html'>Docs</a> &raquo;</li><li>{bp.h(t)}</li><li class='wy-breadcrumbs-aside'>"
        f"<a href='_sources/x.rst.txt'>View page source</a></li></ul><hr></div>"
        f"<div role='main' class='document' itemscope='itemscope'><div itemprop='articleBody'>"
        f"<section><h1>{bp.h(t)}</h1>{''.join(blocks_html(blocks))}</section></div></div>"
        f"<footer><div class='rst-footer-buttons' role='navigation'><a href='prev.html' class='btn btn-neutral float-left'>Previous</a>"
        f"<a href='next.html' class='btn btn-neutral float-right'>Next</a></div><hr><div role='contentinfo'>"
        f"<p>&copy; Copyright 2024.</p></div>Built with <a href='https://www.sphinx-doc.org/'>Sphinx</a> using a theme provided by "
        f"<a href='https://readthedocs.org'>Read the Docs</a>.</footer></div></div></section></div></body></html>"
    )


def shopify(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Shopify Dawn theme: custom elements, description in .product__description.rte."""
    recs = "".join(
        f"<li class='grid__item'><div class='card-wrapper'><a href='/products/{n}' class='full-unstyled-link'>"
        f"{bp.h(title(rng, topic, 3))}</a><span class='price-item'>${rng.randint(9, 99)}.00</span></div></li>"
        for n in range(8)
    )
    accordion = "".join(
        f"<details class='accordion'><summary><h2>{name}</h2></summary><div class='accordion__content rte'>"
        f"<p>{bp.h(sentence(rng, 'city', 20))}</p></div></details>"
        for name in ("Shipping &amp; Returns", "Care instructions")
    )
    return (
        f"{bp.head(rng, t, url)}<body class='gradient'><div id='shopify-section-announcement-bar'>"
        f"<p class='announcement-bar__message'>Free shipping on orders over $50</p></div>"
        f"<sticky-header class='header-wrapper'>{bp.site_header(rng)}</sticky-header>"
        f"<main id='MainContent' class='content-for-layout' role='main'><section class='shopify-section section'>"
        f"<div class='product product--large grid'><div class='product__media-wrapper grid__item'>"
        f"<media-gallery><img src='/cdn/p1.jpg' alt='{bp.h(t)}'></media-gallery></div>"
        f"<div class='product__info-wrapper grid__item'><div class='product__info-container'>"
        f"<h1 class='product__title'>{bp.h(t)}</h1><div class='price'>${rng.randint(20, 200)}.00</div>"
        f"<product-form class='product-form'><form><button>Add to cart</button></form></product-form>"
        f"<div class='product__description rte'>{''.join(blocks_html(blocks))}</div>{accordion}"
        f"<share-button class='share-button'><button>Share</button></share-button></div></div></div></section>"
        f"<product-recommendations class='related-products'><h2>You may also like</h2><ul class='grid'>{recs}</ul>"
        f"</product-recommendations></main>{bp.site_footer(rng)}</body></html>"
    )


LAYOUTS = {
    "reuters_like": ("news", reuters_like),
    "bbc_like": ("news", bbc_like),
    "legacy_table": ("brief", legacy_table),
    "qa_like": ("forum", qa_like),
    "recipe_blog": ("blog", recipe_blog),
    "docs_rtd": ("docs", docs_rtd),
    "shopify": ("product", shopify),
}
