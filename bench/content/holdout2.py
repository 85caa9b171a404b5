"""Six more layouts, written after ``lexbor_main`` was frozen again (commit d5180c6), to check it
blind once more: a donation appeal inside the article, Ghost, ``<br>``-separated text in divs,
utility classes only, MediaWiki, Discourse.
"""

# HTML templates: a tag split over lines reads worse than a long line.
# ruff: noqa: E501

from __future__ import annotations

import random

from bench.content import boilerplate as bp
from bench.content.prose import TOPIC_NAMES, Block, blocks_html, segments_html, sentence, title


def _dcr(rng: random.Random) -> str:
    return "dcr-" + bp.css_hash(rng)[4:]


def _cards(rng: random.Random, n: int, card: str, link_wraps_all: bool) -> str:
    out = []
    for i in range(n):
        topic = rng.choice(TOPIC_NAMES)
        t = title(rng, topic, rng.randint(5, 9))
        summary = bp.h(sentence(rng, topic))
        if link_wraps_all:
            out.append(
                f"<a class='{card}' href='/p/{i}'><h3 class='text-lg font-semibold'>{bp.h(t)}</h3><p class='mt-2 text-gray-600'>{summary}</p></a>"
            )
        else:
            out.append(
                f"<article class='{card}'><h3><a href='/p/{i}'>{bp.h(t)}</a></h3><p>{summary}</p></article>"
            )
    return "".join(out)


def guardian_like(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Hashed dcr- classes, rich-link asides in the body, a long donation appeal after it."""
    pc = _dcr(rng)
    parts = blocks_html(blocks, f"class='{pc}'")
    parts.insert(
        3,
        f"<aside data-component='rich-link' class='{_dcr(rng)}'><a href='/x'>{bp.h(title(rng, topic, 8))}</a></aside>",
    )
    appeal = (
        f"<div class='contributions__epic {_dcr(rng)}'><h2>I hope you appreciated this article.</h2>"
        "<p>Before you move on, I was hoping you would consider taking the step of supporting our "
        "journalism. We have no shareholders or billionaire owner, which means our reporting is free "
        "from commercial and political influence. Unlike many others, we keep our journalism open to "
        "all readers, regardless of where they live or what they can afford to pay. Every contribution, "
        "however big or small, powers our reporting and sustains our future.</p>"
        "<a href='/contribute'>Support us</a><a href='/contribute?monthly'>Remind me in May</a></div>"
    )
    most = "".join(
        f"<li><a href='/m/{i}'><span>{i}</span>{bp.h(title(rng, rng.choice(TOPIC_NAMES), 9))}</a></li>"
        for i in range(1, 11)
    )
    return (
        f"{bp.head(rng, t, url)}<body><div class='{_dcr(rng)}'>{bp.site_header(rng)}</div>"
        f"<main data-layout='StandardLayout'><div class='{_dcr(rng)}'><div class='{_dcr(rng)}'><h1 class='{_dcr(rng)}'>{bp.h(t)}</h1>"
        f"<div class='{_dcr(rng)}'><p>{bp.h(sentence(rng, topic, 20))}</p></div></div>"
        f"<div id='maincontent' class='{_dcr(rng)}'><div class='article-body-commercial-selector {_dcr(rng)}'>"
        f"{''.join(parts)}</div>{appeal}<div class='{_dcr(rng)}'><h2>Explore more on these topics</h2><ul>"
        + "".join(f"<li><a href='/{s.lower()}'>{s}</a></li>" for s in rng.sample(bp.SECTIONS, 5))
        + f"</ul></div></div><div id='most-viewed-right' class='{_dcr(rng)}'><h2>Most viewed</h2><ol>{most}</ol></div></div>"
        f"<section data-component='discussion' id='comments'>{bp.comments(rng, topic, 5, cls=_dcr(rng))}</section></main>"
        f"{bp.site_footer(rng)}</body></html>"
    )


def ghost_blog(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Ghost: gh-content body, a members call to action, read-next post cards."""
    cta = (
        "<section class='gh-cta'><h2 class='gh-cta-title'>This post is for paying subscribers only</h2>"
        "<p>Join the community to get every essay in your inbox, access the full archive and take "
        "part in the discussions.</p><a class='gh-btn' href='#/portal/signup'>Become a member</a></section>"
    )
    return (
        f"{bp.head(rng, t, url)}<body class='post-template'><div class='gh-site'><header id='gh-head' class='gh-head'>"
        f"{bp.nav_menu(rng, 'gh-head-menu', 24)}</header><main id='gh-main' class='gh-main'>"
        f"<article class='gh-article post'><header class='gh-article-header gh-canvas'><h1 class='gh-article-title'>{bp.h(t)}</h1>"
        f"<p class='gh-article-excerpt'>{bp.h(sentence(rng, topic, 18))}</p></header>"
        f"<section class='gh-content gh-canvas'>{''.join(blocks_html(blocks))}</section>{cta}</article>"
        f"<section class='gh-read-next gh-canvas'><h3>Read next</h3><div class='gh-feed'>{_cards(rng, 4, 'gh-card post', False)}</div></section>"
        f"<div class='gh-comments gh-canvas'>{bp.comments(rng, topic, 3)}</div></main>"
        f"<footer class='gh-foot'>{bp.site_footer(rng)}</footer></div></body></html>"
    )


def br_divs(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Old CMS: story text in a div, paragraphs separated by <br><br>; sidebars of text."""
    body = "<br><br>".join(
        segments_html(b.segs) if b.kind in ("p", "h2", "h3", "quote") else b.to_html()
        for b in blocks
        if b.kind != "figure"  # a caption without <figure> would be a paragraph
    )
    side = "".join(
        f"<div class='box'><b>{bp.h(title(rng, rng.choice(TOPIC_NAMES), 4))}</b><br>{bp.h(sentence(rng, rng.choice(TOPIC_NAMES)))} "
        f"<a href='/s/{i}'>more</a></div>"
        for i in range(6)
    )
    return (
        f"{bp.head(rng, t, url)}<body><div id='top'>{bp.nav_menu(rng, 'topmenu', 48)}</div>"
        f"<div id='wrapper'><div id='left'>{side}</div><div id='center'><div class='title'>{bp.h(t)}</div>"
        f"<div class='date'>Updated: {rng.randint(1, 28)}.03.2024 {rng.randint(10, 23)}:{rng.randint(10, 59)}</div>"
        f"<div id='story_body'>{body}</div><div class='links'><a href='/print'>Print</a> | "
        f"<a href='/mail'>E-mail</a></div></div><div id='right'>{bp.popular_list(rng, 10, 'box')}</div></div>"
        f"<div id='bottom'>{bp.site_footer(rng, 'divs')}</div></body></html>"
    )


def tailwind(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """Utility classes only: prose body, related cards where the link wraps the card, a signup box."""
    signup = (
        "<div class='mt-16 rounded-lg bg-gray-50 p-6'><h2 class='text-xl font-bold'>Stay in the loop</h2>"
        "<p class='mt-2 text-gray-600'>Get new posts about engineering, design and the craft of "
        "building products delivered to your inbox once a month. No spam, unsubscribe at any time.</p>"
        "<form class='mt-4 flex gap-2'><input type='email'><button>Join</button></form></div>"
    )
    return (
        f"{bp.head(rng, t, url)}<body class='bg-white antialiased'><div class='flex min-h-screen flex-col'>"
        f"<div class='sticky top-0 z-40 border-b'>{bp.nav_menu(rng, 'flex items-center gap-6 text-sm', 20)}</div>"
        f"<main class='flex-1'><article class='container relative max-w-3xl py-10'>"
        f"<div><p class='text-sm text-muted-foreground'>Published on March {rng.randint(1, 28)}, 2024</p>"
        f"<h1 class='mt-2 text-4xl font-bold'>{bp.h(t)}</h1></div>"
        f"<div class='prose prose-slate mt-8 max-w-none lg:prose-lg'>{''.join(blocks_html(blocks))}</div>"
        f"<hr class='mt-12'><div class='flex justify-center py-6'><a href='/blog' class='inline-flex'>See all posts</a></div>"
        f"</article><section class='container max-w-5xl py-12'><h2 class='text-2xl font-bold'>Keep reading</h2>"
        f"<div class='grid gap-6 md:grid-cols-3'>{_cards(rng, 3, 'rounded-lg border p-6 hover:shadow', True)}</div>"
        f"{signup}</section></main><div class='border-t py-6 text-sm'>Built by Northwind. The source code is "
        f"available on <a href='https://github.com/example'>GitHub</a>.</div></div></body></html>"
    )


def wiki_like(rng: random.Random, blocks: list[Block], topic: str, url: str, t: str) -> str:
    """MediaWiki: mw-parser-output body, edit links, a big navbox, left panel, a references list."""
    parts = []
    for b, html in zip(blocks, blocks_html(blocks), strict=True):
        if b.kind in ("h2", "h3"):
            html = f"<{b.kind}><span class='mw-headline'>{segments_html(b.segs)}</span><span class='mw-editsection'>[<a href='?action=edit'>edit</a>]</span></{b.kind}>"
        parts.append(html)
    navbox = "".join(
        f"<tr><th class='navbox-group'>{s}</th><td class='navbox-list'>"
        + " &middot; ".join(
            f"<a href='/wiki/{bp.slug(x)}'>{bp.h(x)}</a>"
            for x in (title(rng, topic, 2) for _ in range(12))
        )
        + "</td></tr>"
        for s in bp.SECTIONS[:6]
    )
    return (
        f"{bp.head(rng, t, url)}<body class='mediawiki skin-vector'><a class='mw-jump-link' href='#content'>Jump to content</a>"
        f"<div id='mw-page-base'></div><div id='content' class='mw-body' role='main'><h1 id='firstHeading'>{bp.h(t)}</h1>"
        f"<div id='bodyContent' class='vector-body'><div id='siteSub'>From Wikipedia, the free encyclopedia</div>"
        f"<div id='mw-content-text' class='mw-body-content'><div class='mw-parser-output'>{''.join(parts)}"
        f"<div role='navigation' class='navbox'><table class='nowraplinks'><tbody>{navbox}</tbody></table></div></div></div>"
        f"<div id='catlinks' class='catlinks'>Categories: <a href='/wiki/C1'>{topic.title()}</a></div></div></div>"
        f"<div id='mw-panel'><div class='portal'>{bp.nav_menu(rng, 'vector-menu', 30)}</div></div>"
        f"<div id='footer' role='contentinfo'><ul id='footer-info'><li>This page was last edited on 3 March 2024.</li>"
        f"<li>Text is available under the Creative Commons Attribution-ShareAlike License 4.0; additional terms may apply.</li></ul></div>"
        "</body></html>"
    )


def discourse(rng: random.Random, posts: list[list[Block]], topic: str, url: str, t: str) -> str:
    """Discourse: each post's div.cooked is the body; meta, menus and suggested topics are not."""
    items = "".join(
        f"<div class='topic-post clearfix'><article id='post_{i + 1}' class='boxed onscreen-post' role='region'>"
        f"<div class='row'><div class='topic-avatar'><img src='/a/{i}.png' alt=''></div><div class='topic-body clearfix'>"
        f"<div role='heading' class='topic-meta-data'><div class='names'><span class='first username'><a href='/u/{i}'>"
        f"{bp.h(title(rng, 'food', 1))}{i}</a></span></div><div class='post-info'>{rng.randint(1, 28)}d</div></div>"
        f"<div class='regular contents'><div class='cooked'>{''.join(blocks_html(post))}</div>"
        f"<section class='post-menu-area clearfix'><nav class='post-controls'><button>Like</button><button>Reply</button>"
        f"</nav></section></div></div></div></article></div>"
        for i, post in enumerate(posts)
    )
    suggested = "".join(
        f"<tr><td><a href='/t/{n}' class='title'>{bp.h(title(rng, topic, 7))}</a></td><td>{topic}</td>"
        f"<td>{rng.randint(1, 40)}</td><td>{rng.randint(10, 900)}</td><td>Mar {rng.randint(1, 28)}</td></tr>"
        for n in range(5)
    )
    return (
        f"{bp.head(rng, t, url)}<body class='crawler'><header class='d-header'>{bp.nav_menu(rng, 'd-header-icons', 18)}</header>"
        f"<div id='main-outlet' class='wrap'><div id='topic-title'><h1><a href='/t/1'>{bp.h(t)}</a></h1></div>"
        f"<div class='posts-wrapper'>{items}</div><div class='more-topics__container'><h3>Suggested Topics</h3>"
        f"<table class='topic-list'><thead><tr><th>Topic</th><th>Category</th><th>Replies</th><th>Views</th>"
        f"<th>Activity</th></tr></thead><tbody>{suggested}</tbody></table></div></div>"
        f"<footer class='noscript-footer-nav'><a href='/'>Home</a><a href='/categories'>Categories</a></footer></body></html>"
    )
