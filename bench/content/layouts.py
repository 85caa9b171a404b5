"""Ten site layouts that wrap a main-content body in the boilerplate real sites carry.

Each layout takes the body's blocks and returns the whole page. No single rule finds every body:
some pages have ``<article>`` around the body and its comments, some use ``<article>`` for teaser
cards only, some have no semantic element at all, and on some the sidebar out-talks the body.
"""

# HTML templates: a tag split over lines reads worse than a long line.
# ruff: noqa: E501

from __future__ import annotations

import random
from collections.abc import Callable

from bench.content import boilerplate as bp
from bench.content.prose import TOPIC_NAMES, Block, blocks_html, sentence

Layout = Callable[[random.Random, list[Block], str, str, str], str]


def interleave(rng: random.Random, parts: list[str], inserts: list[str]) -> str:
    """Put each insert between two body blocks (never first)."""
    out = list(parts)
    for ins in inserts:
        out.insert(rng.randint(1, max(1, len(out) - 1)), ins)
    return "".join(out)


def h1(t: str, cls: str = "entry-title") -> str:
    return f"<h1 class='{cls}'>{bp.h(t)}</h1>"


def news_semantic(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """<main><article> with share bar, inline ads and the comments inside the article."""
    body = interleave(rng, blocks_html(blocks), [bp.ad(rng), bp.newsletter(rng)])
    article = (
        f"<article class='story'><header>{bp.breadcrumbs(rng, topic)}{h1(t)}{bp.byline(rng)}"
        f"{bp.share(rng)}</header><div class='article-body'>{body}</div>{bp.tags_line(rng)}"
        f"{bp.author_bio(rng)}{bp.comments(rng, topic, rng.randint(4, 9), long=True)}</article>"
    )
    aside = f"<aside class='sidebar'>{bp.popular_list(rng)}{bp.ad(rng, 'ad-slot mpu')}{bp.newsletter(rng)}</aside>"
    return (
        f"{bp.head(rng, t, url)}<body class='article-page'>{bp.site_header(rng)}"
        f"<main id='main'>{article}{aside}</main>"
        f"{bp.teaser_cards(rng, 6, 'More from Northwind')}{bp.site_footer(rng)}"
        f"{bp.cookie_banner(rng)}{bp.hidden_bits(rng)}</body></html>"
    )


def news_hashed(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Divs with hashed class names only; teaser cards are the only <article> elements."""
    pc = bp.css_hash(rng)
    parts = [
        f"<div class='{bp.css_hash(rng)}'>{b}</div>" for b in blocks_html(blocks, f"class='{pc}'")
    ]
    body = interleave(rng, parts, [bp.ad(rng, bp.css_hash(rng)), bp.ad(rng, bp.css_hash(rng))])
    cards = bp.teaser_cards(rng, 8, "Related coverage", card_tag="article", cls=bp.css_hash(rng))
    return (
        f"{bp.head(rng, t, url)}<body><div id='app'><div class='{bp.css_hash(rng)}'>"
        f"{bp.site_header(rng, 'divs')}<div class='{bp.css_hash(rng)}'>"
        f"<div class='{bp.css_hash(rng)}'><h1 class='{bp.css_hash(rng)}'>{bp.h(t)}</h1>"
        f"{bp.byline(rng)}{bp.share(rng, bp.css_hash(rng))}</div>"
        f"<div class='{bp.css_hash(rng)}'>{body}</div>"
        f"<div class='{bp.css_hash(rng)}'>{bp.popular_list(rng, 10, bp.css_hash(rng))}</div></div>"
        f"{cards}{bp.site_footer(rng, 'divs')}</div></div>{bp.cookie_banner(rng)}"
        f"{bp.hidden_bits(rng)}</body></html>"
    )


def blog_wp(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """WordPress: entry-content, widget sidebar with an about text, long comment threads."""
    body = "".join(blocks_html(blocks))
    article = (
        f"<article id='post-{rng.randint(100, 999)}' class='post type-post status-publish hentry'>"
        f"<header class='entry-header'>{h1(t)}<div class='entry-meta'>Posted on "
        f"<time>March {rng.randint(1, 28)}, 2024</time> by <a href='/author/jo'>jo</a></div></header>"
        f"<div class='entry-content'>{body}{bp.share(rng, 'sharedaddy sd-sharing')}</div>"
        f"<footer class='entry-footer'>{bp.tags_line(rng)}</footer></article>"
    )
    nav = "<nav class='post-navigation'><a rel='prev' href='/prev'>Previous post</a><a rel='next' href='/next'>Next post</a></nav>"
    sidebar = (
        f"<aside id='secondary' class='widget-area'>{bp.about_widget(rng, 3)}"
        f"{bp.popular_list(rng, 6, 'widget widget_recent_entries')}{bp.tag_cloud(rng)}"
        f"{bp.newsletter(rng, 'widget widget_newsletter')}</aside>"
    )
    return (
        f"{bp.head(rng, t, url)}<body class='post-template-default single'><div id='page' class='site'>"
        f"{bp.site_header(rng)}<div id='content' class='site-content'><div id='primary' "
        f"class='content-area'><main id='main' class='site-main'>{article}{nav}"
        f"{bp.comments(rng, topic, rng.randint(6, 12), long=True)}</main></div>{sidebar}</div>"
        f"{bp.site_footer(rng)}</div>{bp.cookie_banner(rng)}</body></html>"
    )


def news_td(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Newspaper theme: td-post-content, td-a-rec ads, related row inside the post."""
    body = interleave(
        rng,
        blocks_html(blocks),
        [
            bp.ad(rng, "td-a-rec td-a-rec-id-content_inline"),
            bp.newsletter(rng, "td-block-newsletter"),
        ],
    )
    related = bp.teaser_cards(
        rng, 6, "Related Posts", summary=False, cls="td_block_related_posts td-related-row"
    )
    return (
        f"{bp.head(rng, t, url)}<body class='td-standard-pack'><div class='td-container'>"
        f"{bp.site_header(rng)}<div class='td-pb-row'><div class='td-pb-span8 td-main-content' role='main'>"
        f"<div class='td-ss-main-content'><article class='post'><div class='td-post-header'>"
        f"<ul class='td-category'><li><a href='/{topic}'>{topic}</a></li></ul>"
        f"<header class='td-post-title'>{h1(t, 'entry-title')}{bp.byline(rng)}</header></div>"
        f"{bp.share(rng, 'td-post-sharing td-post-sharing-top')}"
        f"<div class='td-post-content tagdiv-type'>{body}</div>"
        f"<footer>{bp.share(rng, 'td-post-sharing-bottom')}{bp.tags_line(rng)}</footer></article>"
        f"{related}{bp.comments(rng, topic, rng.randint(2, 5))}</div></div>"
        f"<div class='td-pb-span4 td-main-sidebar' role='complementary'>{bp.popular_list(rng, 10)}"
        f"{bp.ad(rng, 'td-a-rec td-a-rec-id-sidebar')}{bp.teaser_cards(rng, 4, 'Popular', cls='td_block_widget')}"
        f"</div></div>{bp.site_footer(rng)}</div>{bp.cookie_banner(rng)}{bp.hidden_bits(rng)}</body></html>"
    )


def docs_sphinx(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Sphinx: div.body[role=main], a long sphinxsidebar toctree, related bars above and below."""
    toc = "".join(
        f"<li class='toctree-l1'><a class='reference internal' href='{bp.slug(x)}.html'>{bp.h(x)}</a>"
        f"<ul>{''.join(f'<li class=toctree-l2><a href=#{n}>{bp.h(sentence(rng, topic, 3))}</a></li>' for n in range(rng.randint(2, 6)))}</ul></li>"
        for x in (bp.title(rng, topic, 3) for _ in range(rng.randint(15, 30)))
    )
    related = (
        "<div class='related' role='navigation'><h3>Navigation</h3><ul><li class='right'>"
        "<a href='genindex.html'>index</a></li><li class='right'><a href='py-modindex.html'>"
        "modules</a> |</li><li><a href='index.html'>widgetlib 2.4 documentation</a> &raquo;</li></ul></div>"
    )
    return (
        f"{bp.head(rng, t, url)}<body>{related}<div class='document'><div class='documentwrapper'>"
        f"<div class='bodywrapper'><div class='body' role='main'><section id='{bp.slug(t)}'>"
        f"<h1>{bp.h(t)}<a class='headerlink' href='#{bp.slug(t)}' title='Link to this heading'>¶</a></h1>"
        f"{''.join(blocks_html(blocks))}</section></div></div></div>"
        f"<div class='sphinxsidebar' role='navigation'><div class='sphinxsidebarwrapper'>"
        f"<h3><a href='index.html'>Table of Contents</a></h3><ul>{toc}</ul>"
        f"<div id='searchbox' role='search'><h3>Quick search</h3><form><input name='q'>"
        f"<input type='submit' value='Go'></form></div></div></div></div>{related}"
        f"<div class='footer'>&copy; Copyright 2024, the widgetlib authors. Created using "
        f"<a href='https://www.sphinx-doc.org/'>Sphinx</a> 7.2.6.</div></body></html>"
    )


def docs_mkdocs(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """MkDocs Material: left nav and right toc inside <main>, body in article.md-typeset."""
    nav = "".join(
        f"<li class='md-nav__item'><a class='md-nav__link' href='/{bp.slug(x)}/'>{bp.h(x)}</a></li>"
        for x in (bp.title(rng, topic, rng.randint(2, 4)) for _ in range(rng.randint(30, 50)))
    )
    toc = "".join(
        f"<li class='md-nav__item'><a class='md-nav__link' href='#{bp.slug(b.to_text())}'>{bp.h(b.to_text())}</a></li>"
        for b in blocks
        if b.kind in ("h2", "h3")
    )
    body_html = "".join(blocks_html(blocks))
    return (
        f"{bp.head(rng, t, url)}<body dir='ltr'><header class='md-header'><nav class='md-header__inner'>"
        f"<a href='/' class='md-logo'>widgetlib</a><div class='md-search'><input placeholder='Search'>"
        f"</div><a href='https://github.com/example/widgetlib'>example/widgetlib</a></nav></header>"
        f"<div class='md-container'><main class='md-main'><div class='md-main__inner md-grid'>"
        f"<div class='md-sidebar md-sidebar--primary'><nav class='md-nav md-nav--primary'><ul>{nav}</ul></nav></div>"
        f"<div class='md-sidebar md-sidebar--secondary'><nav class='md-nav md-nav--secondary'>"
        f"<label>Table of contents</label><ul>{toc}</ul></nav></div>"
        f"<div class='md-content'><article class='md-content__inner md-typeset'>"
        f"<a href='https://github.com/example/widgetlib/edit/main/docs/x.md' class='md-content__button md-icon' "
        f"title='Edit this page'>Edit this page</a><h1>{bp.h(t)}</h1>{body_html}"
        f"<aside class='md-source-file'>Last update: March {rng.randint(1, 28)}, 2024</aside></article></div>"
        f"</div></main><footer class='md-footer'><nav class='md-footer__inner'><a href='/prev/' rel='prev'>"
        f"Previous {bp.h(bp.title(rng, topic, 2))}</a><a href='/next/' rel='next'>Next {bp.h(bp.title(rng, topic, 2))}"
        f"</a></nav><div class='md-copyright'>Made with Material for MkDocs</div></footer></div></body></html>"
    )


def product(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Shop page: gallery and buy box, description tab is the body, reviews and carousels not."""
    reviews = "".join(
        f"<div class='review' data-hook='review'><span class='stars'>{rng.randint(1, 5)} out of 5 stars</span>"
        f"<b>{bp.h(bp.title(rng, topic, 4))}</b><p>{bp.h(sentence(rng, topic))} {bp.h(sentence(rng, topic))}</p>"
        f"<a href='#'>Helpful</a> <a href='#'>Report</a></div>"
        for _ in range(rng.randint(3, 7))
    )
    return (
        f"{bp.head(rng, t, url)}<body class='product-page'>{bp.site_header(rng)}"
        f"{bp.breadcrumbs(rng, topic)}<div id='product-{rng.randint(1000, 9999)}' class='product'>"
        f"<div class='product-gallery'><img src='/p/1.jpg' alt='front'><img src='/p/2.jpg' alt='side'></div>"
        f"<div class='product-summary'><h1 class='product_title'>{bp.h(t)}</h1>"
        f"<p class='price'><span class='amount'>${rng.randint(10, 300)}.{rng.randint(10, 99)}</span></p>"
        f"<form class='cart'><input type='number' value='1'><button>Add to basket</button></form>"
        f"<div class='product_meta'>SKU: W-{rng.randint(1000, 9999)} Category: <a href='/c/{topic}'>{topic}</a></div>"
        f"{bp.share(rng)}</div><div class='woocommerce-tabs'><ul class='tabs'><li><a href='#tab-description'>"
        f"Description</a></li><li><a href='#tab-reviews'>Reviews</a></li></ul>"
        f"<div class='panel entry-content' id='tab-description'>{''.join(blocks_html(blocks))}</div>"
        f"<div class='panel' id='tab-reviews'><h2>Reviews</h2>{reviews}</div></div></div>"
        f"{bp.teaser_cards(rng, 8, 'Customers also bought', summary=False, cls='upsells products')}"
        f"{bp.site_footer(rng)}{bp.cookie_banner(rng)}</body></html>"
    )


def brief(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Short brief in a div; <main> wraps a sidebar of teasers that out-talks the body."""
    body = "".join(blocks_html(blocks))
    trending = bp.teaser_cards(rng, 7, "Trending now", cls="content-list trending")
    return (
        f"{bp.head(rng, t, url)}<body>{bp.site_header(rng, rng.choice(['semantic', 'divs']))}"
        f"<main class='main'><div class='content'><div class='headline'><h1>{bp.h(t)}</h1>"
        f"{bp.byline(rng)}</div><div class='text'>{body}</div>{bp.share(rng)}</div>"
        f"<div class='rail'>{trending}{bp.popular_list(rng, 10)}</div></main>"
        f"{bp.site_footer(rng)}{bp.cookie_banner(rng)}</body></html>"
    )


def medium(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Article of nested hashed divs; responses and "more from" cards after it."""
    pc = bp.css_hash(rng)
    parts = "".join(
        f"<div class='{bp.css_hash(rng)}'><div class='{bp.css_hash(rng)}'>{b}</div></div>"
        for b in blocks_html(blocks, f"class='pw-post-body-paragraph {pc}'")
    )
    responses = bp.comments(rng, topic, rng.randint(3, 6), cls=bp.css_hash(rng))
    more = bp.teaser_cards(rng, 4, "More from the author", cls=bp.css_hash(rng))
    return (
        f"{bp.head(rng, t, url)}<body><div id='root'><div class='{bp.css_hash(rng)}'>"
        f"{bp.site_header(rng, 'divs')}<article><div class='{bp.css_hash(rng)}'><section>"
        f"<div class='{bp.css_hash(rng)}'><h1 class='pw-post-title'>{bp.h(t)}</h1>{bp.byline(rng)}"
        f"<div class='{bp.css_hash(rng)}'>{rng.randint(10, 900)} claps &middot; "
        f"{rng.randint(2, 40)} responses</div>{parts}</div></section></div></article>"
        f"<div class='{bp.css_hash(rng)}'>{bp.tags_line(rng)}{bp.share(rng, bp.css_hash(rng))}</div>"
        f"{responses}{more}{bp.site_footer(rng, 'divs')}</div></div>{bp.hidden_bits(rng)}</body></html>"
    )


def forum(rng: random.Random, posts: list[list[Block]], topic: str, url: str, t: str) -> str:
    """phpBB-like thread: every post's content is the body, user panels and signatures are not."""
    items = []
    for i, post in enumerate(posts):
        sig = f"<div class='signature'>{bp.h(sentence(rng, rng.choice(TOPIC_NAMES), 10))}</div>"
        items.append(
            f"<div id='p{i}' class='post bg{i % 2 + 1}'><div class='inner'><dl class='postprofile'>"
            f"<dt><a href='/u/{i}' class='username'>{bp.h(bp.title(rng, 'food', 1))}{i}</a></dt>"
            f"<dd class='profile-rank'>Regular</dd><dd><strong>Posts:</strong> {rng.randint(5, 3000)}</dd>"
            f"<dd><strong>Joined:</strong> {rng.choice(['Jan', 'Jun', 'Oct'])} 20{rng.randint(10, 23)}</dd>"
            f"</dl><div class='postbody'><h3><a href='#p{i}'>Re: {bp.h(t)}</a></h3>"
            f"<p class='author'>by <a href='/u/{i}'>user{i}</a> &raquo; {rng.randint(1, 28)} Mar 2024</p>"
            f"<div class='content'>{''.join(blocks_html(post))}</div>{sig}</div>"
            f"<ul class='post-buttons'><li><a href='#'>Quote</a></li><li><a href='#'>Report</a></li></ul>"
            f"</div></div>"
        )
    forums = "".join(
        f"<li><a href='/viewforum.php?f={n}'>{bp.h(bp.title(rng, rng.choice(TOPIC_NAMES), 3))}</a></li>"
        for n in range(20)
    )
    return (
        f"{bp.head(rng, t, url)}<body id='phpbb' class='section-viewtopic'><div id='wrap'>"
        f"<div class='headerbar'>{bp.site_header(rng, 'divs')}</div><div class='navbar'><ul class='linklist'>"
        f"<li><a href='/faq'>FAQ</a></li><li><a href='/register'>Register</a></li><li><a href='/login'>Login</a>"
        f"</li></ul></div><div id='page-body'><h2 class='topic-title'><a href='#'>{bp.h(t)}</a></h2>"
        f"<div class='action-bar'><a class='button' href='/posting'>Post Reply</a><div class='pagination'>"
        f"{len(posts)} posts &bull; Page <strong>1</strong> of 1</div></div>{''.join(items)}"
        f"<div class='jumpbox'><ul>{forums}</ul></div></div>"
        f"<div class='footer'><a href='/'>Board index</a> Powered by phpBB&reg; Forum Software</div>"
        f"</div>{bp.cookie_banner(rng)}</body></html>"
    )
