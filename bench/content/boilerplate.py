"""The parts of a page around its main content: menus, sidebars, comments, banners, ads."""

# HTML templates: a tag split over lines reads worse than a long line.
# ruff: noqa: E501

from __future__ import annotations

import html
import random

from bench.content.prose import TOPIC_NAMES, paragraph_segments, segments_html, sentence, title


def h(s: str) -> str:
    return html.escape(s, quote=False)


def slug(s: str) -> str:
    return "-".join(w.strip(",.?!").lower() for w in s.split())[:60]


def css_hash(rng: random.Random) -> str:
    return "css-" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))


SECTIONS = (
    "World Politics Business Technology Science Health Sport Culture Travel Food Opinion "
    "Climate Education Books Music Film Style Money Property Cars Jobs Weather Podcasts Video"
).split()


def head(rng: random.Random, page_title: str, url: str, extra: str = "") -> str:
    css = "".join(
        f".{css_hash(rng)}{{margin:{rng.randint(0, 40)}px;padding:{rng.randint(0, 20)}px;"
        f"color:#{rng.randint(0, 0xFFFFFF):06x};display:flex}}"
        for _ in range(rng.randint(80, 250))
    )
    js = "".join(
        f"window.__d{n}=function(a,b){{return a.filter(function(x){{return x.k==='{slug(sentence(rng, 'tech', 3))}'}}).map(b)}};"
        for n in range(rng.randint(40, 160))
    )
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{h(page_title)} | {rng.choice(['The Daily Ledger', 'Northwind', 'Dev Notes'])}</title>"
        f"<link rel='canonical' href='{url}'>"
        f"<meta property='og:title' content='{html.escape(page_title)}'>"
        f'<script type=\'application/ld+json\'>{{"@type":"Article","headline":"{html.escape(page_title)}"}}</script>'
        f"<style>{css}</style><script>{js}</script>"
        f"<script async src='https://tags.example.net/gtm.js?id=GTM-{rng.randint(1000, 9999)}'></script>"
        f"{extra}</head>"
    )


def nav_menu(rng: random.Random, cls: str = "main-nav", links: int = 60) -> str:
    parts = [f"<nav class='{cls}' aria-label='Main'><ul class='menu'>"]
    for s in SECTIONS[: max(6, links // 6)]:
        subs = "".join(
            f"<li><a href='/{s.lower()}/{slug(title(rng, rng.choice(TOPIC_NAMES), 2))}'>"
            f"{h(title(rng, rng.choice(TOPIC_NAMES), 2))}</a></li>"
            for _ in range(rng.randint(3, 7))
        )
        parts.append(
            f"<li class='menu-item has-children'><a href='/{s.lower()}'>{s}</a>"
            f"<ul class='sub-menu'>{subs}</ul></li>"
        )
    parts.append("</ul></nav>")
    return "".join(parts)


def site_header(rng: random.Random, style: str = "semantic") -> str:
    logo = "<a class='logo' href='/'><svg viewBox='0 0 10 10'><path d='M0 0h10v10z'/></svg>Northwind</a>"
    search = "<form class='search' action='/search'><input name='q' placeholder='Search'><button>Search</button></form>"
    login = "<a href='/login'>Sign in</a> <a class='btn' href='/subscribe'>Subscribe</a>"
    if style == "semantic":
        return f"<header class='site-header'>{logo}{search}{login}{nav_menu(rng)}</header>"
    return (
        f"<div class='{css_hash(rng)}' id='masthead'>{logo}{search}{login}"
        f"{nav_menu(rng, css_hash(rng))}</div>"
    )


def site_footer(rng: random.Random, style: str = "semantic") -> str:
    cols = []
    for c in range(rng.randint(4, 6)):
        links = "".join(
            f"<li><a href='/{slug(w)}'>{h(w)}</a></li>"
            for w in (title(rng, rng.choice(TOPIC_NAMES), 2) for _ in range(rng.randint(5, 9)))
        )
        cols.append(f"<div class='footer-col'><h4>{SECTIONS[c]}</h4><ul>{links}</ul></div>")
    text = (
        f"<p>{h(sentence(rng, 'city', 22))} Registered office: 12 Harbour Street, Northwind.</p>"
        "<p>&copy; 2024 Northwind Media Ltd. All rights reserved. <a href='/privacy'>Privacy</a> "
        "<a href='/terms'>Terms</a> <a href='/cookies'>Cookie settings</a></p>"
    )
    tag = "footer" if style == "semantic" else "div"
    return f"<{tag} class='site-footer {css_hash(rng)}' id='colophon'>{''.join(cols)}{text}</{tag}>"


def cookie_banner(rng: random.Random) -> str:
    return (
        f"<div id='cookie-consent' class='cc-banner {css_hash(rng)}' role='dialog'>"
        "<p>We use cookies and similar technologies to improve your experience, measure "
        "audience and show personalised advertising. By clicking accept you agree to our use of "
        "cookies as described in our <a href='/cookies'>cookie policy</a>. You can change your "
        "preferences at any time.</p><button>Accept all</button><button>Reject</button>"
        "<button>Manage preferences</button></div>"
    )


def newsletter(rng: random.Random, cls: str = "newsletter-signup") -> str:
    return (
        f"<div class='{cls}'><h3>Get the morning briefing</h3><p>"
        f"{h(sentence(rng, 'city', 14))} Sign up for our free newsletter, delivered every "
        "weekday.</p><form action='/newsletter'><input type='email' placeholder='Email "
        "address'><button>Sign up</button></form></div>"
    )


def ad(rng: random.Random, cls: str = "ad-slot") -> str:
    return (
        f"<div class='{cls}' data-ad-unit='/{rng.randint(1000, 9999)}/article'>"
        "<span class='ad-label'>Advertisement</span><div id='div-gpt-ad-"
        f"{rng.randint(10**6, 10**7)}'></div></div>"
    )


def share(rng: random.Random, cls: str = "share-buttons") -> str:
    nets = ["Facebook", "Twitter", "LinkedIn", "WhatsApp", "Email", "Copy link"]
    links = "".join(
        f"<a href='https://share.example/{n.lower()}' class='share-{n.lower()}'>Share on {n}</a>"
        for n in nets
    )
    return f"<div class='{cls}'>{links}</div>"


def breadcrumbs(rng: random.Random, topic: str) -> str:
    return (
        "<nav class='breadcrumbs' aria-label='Breadcrumb'><a href='/'>Home</a> &rsaquo; "
        f"<a href='/{topic}'>{topic.title()}</a> &rsaquo; <a href='/{topic}/latest'>Latest</a></nav>"
    )


def teaser_cards(
    rng: random.Random,
    n: int,
    heading: str,
    card_tag: str = "div",
    summary: bool = True,
    cls: str = "related-posts",
) -> str:
    cards = []
    for _ in range(n):
        topic = rng.choice(TOPIC_NAMES)
        t = title(rng, topic, rng.randint(5, 9))
        summ = f"<p>{h(sentence(rng, topic))} {h(sentence(rng, topic))}</p>" if summary else ""
        cards.append(
            f"<{card_tag} class='card'><a href='/{topic}/{slug(t)}'><img src='/thumbs/{slug(t)[:12]}.jpg' alt=''>"
            f"<h3>{h(t)}</h3></a>{summ}<time>{rng.randint(1, 28)} March 2024</time></{card_tag}>"
        )
    return f"<section class='{cls}'><h2>{heading}</h2>{''.join(cards)}</section>"


def popular_list(rng: random.Random, n: int = 8, cls: str = "widget popular") -> str:
    items = "".join(
        f"<li><a href='/{slug(t)}'>{h(t)}</a></li>"
        for t in (title(rng, rng.choice(TOPIC_NAMES), rng.randint(5, 9)) for _ in range(n))
    )
    return f"<div class='{cls}'><h3>Most read</h3><ol>{items}</ol></div>"


def about_widget(rng: random.Random, paragraphs: int = 2) -> str:
    text = "".join(
        f"<p>{segments_html(paragraph_segments(rng, rng.choice(TOPIC_NAMES), 4, 0.1))}</p>"
        for _ in range(paragraphs)
    )
    return (
        f"<div class='widget widget_text'><h3 class='widget-title'>About this blog</h3>{text}</div>"
    )


def tag_cloud(rng: random.Random) -> str:
    tags = "".join(f"<a href='/tag/{w}' class='tag'>{w}</a> " for w in rng.sample(SECTIONS, 14))
    return f"<div class='widget tagcloud'><h3>Tags</h3>{tags}</div>"


def comments(
    rng: random.Random, topic: str, n: int, cls: str = "comments-area", long: bool = False
) -> str:
    items = []
    for i in range(n):
        paras = "".join(
            f"<p>{segments_html(paragraph_segments(rng, topic, rng.randint(1, 4 if long else 2), 0.1))}</p>"
            for _ in range(rng.randint(1, 3 if long else 1))
        )
        items.append(
            f"<li class='comment' id='comment-{i}'><div class='comment-meta'><img class='avatar' "
            f"src='/avatar/{i}.png' alt=''><b class='fn'>{h(title(rng, 'food', 2))}</b> "
            f"<time>{rng.randint(1, 28)} March 2024 at {rng.randint(1, 12)}:{rng.randint(10, 59)} pm</time>"
            f"</div><div class='comment-content'>{paras}</div><a class='comment-reply-link' "
            f"href='#respond'>Reply</a></li>"
        )
    form = (
        "<div id='respond'><h3>Leave a Reply</h3><form><textarea name='comment'></textarea>"
        "<p>Your email address will not be published. Required fields are marked *</p>"
        "<button>Post Comment</button></form></div>"
    )
    return (
        f"<div id='comments' class='{cls}'><h2 class='comments-title'>{n} thoughts on this story"
        f"</h2><ol class='comment-list'>{''.join(items)}</ol>{form}</div>"
    )


def author_bio(rng: random.Random) -> str:
    return (
        f"<div class='author-bio'><img src='/authors/1.jpg' alt=''><h4>About the author</h4><p>"
        f"{h(title(rng, 'food', 2))} is a senior correspondent. {h(sentence(rng, 'city', 14))}</p>"
        "<a href='/authors/1'>More articles</a></div>"
    )


def tags_line(rng: random.Random) -> str:
    tags = "".join(f"<a rel='tag' href='/tag/{w.lower()}'>{w}</a>" for w in rng.sample(SECTIONS, 4))
    return f"<div class='post-tags'>Tags: {tags}</div>"


def hidden_bits(rng: random.Random) -> str:
    """Content a reader never sees: modal, hidden attributes, display:none."""
    return (
        f"<div class='modal' hidden><h2>Sign in to continue</h2><p>{h(sentence(rng, 'tech', 20))}"
        "</p><form><input name='user'><input type='password'></form></div>"
        f"<div style='display:none' class='print-only'>{h(sentence(rng, 'city', 18))}</div>"
        f"<div aria-hidden='true' class='visually-hidden'>{h(sentence(rng, 'science', 12))}</div>"
    )


def byline(rng: random.Random) -> str:
    return (
        f"<div class='byline'>By <a rel='author' href='/authors/2'>{h(title(rng, 'food', 2))}</a>"
        f" &middot; <time datetime='2024-03-{rng.randint(10, 28)}'>March {rng.randint(10, 28)}, "
        f"2024</time> &middot; {rng.randint(3, 12)} min read</div>"
    )
