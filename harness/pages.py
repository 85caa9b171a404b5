"""Twenty article-like pages of about 33 KB: headings, ~170 links, images, paragraphs, a script
and a style, the shape the benchmark extracts from."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = (
    "scraping service engine crawler request response proxy browser render credit ledger "
    "balance hold capture release selector extract heading paragraph article link image "
    "network latency throughput reactor twisted asyncio pipeline middleware robots guard"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def article(index: int) -> str:
    rng = random.Random(index)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Article {index}: {sentence(rng, 6)}</title>",
        f"<meta name='description' content='{sentence(rng, 14)}'>",
        f"<meta property='og:title' content='Article {index}'>",
        "<style>body{font:16px/1.5 serif;max-width:42em;margin:auto} .nav a{margin:0 .3em}</style>",
        "<script>window.analytics = {page: location.pathname, t: Date.now()};</script>",
        "</head><body><nav class='nav'>",
    ]
    parts += [f"<a href='/section/{n}'>Section {n}</a>" for n in range(40)]
    parts.append(f"</nav><article><h1>{sentence(rng, 8)}</h1>")
    for section in range(8):
        parts.append(f"<h2>{sentence(rng, 5)}</h2>")
        for _ in range(5):
            links = " ".join(
                f"<a href='/articles/{rng.randrange(10_000)}.html'>{rng.choice(WORDS)}</a>"
                for _ in range(3)
            )
            parts.append(f"<p>{sentence(rng, 46)} {links} {sentence(rng, 30)}</p>")
        parts.append(f"<h3>{sentence(rng, 4)}</h3><img src='/img/{index}-{section}.jpg' alt=''>")
    parts.append("</article><footer>")
    parts += [f"<a href='https://example.org/ref/{n}'>ref {n}</a>" for n in range(10)]
    parts.append("</footer></body></html>")
    return "".join(parts)


# What a page that edits its DOM on `load` inserts: a js scrape that reads the page before
# `load` has run its listeners lacks it (bench/js_contenders.py checks every page it reads)
ON_LOAD_TEXT = "inserted on load"
# the paragraph as a DOM serialization (Playwright's content()) holds it; the text alone is no
# proof in HTML, where the script itself holds it
ON_LOAD_ELEMENT = f'<p id="loaded">{ON_LOAD_TEXT}</p>'
ON_LOAD_SCRIPT = (
    "<script>addEventListener('load', () => {const p = document.createElement('p'); "
    f"p.id = 'loaded'; p.textContent = '{ON_LOAD_TEXT}'; "
    "document.querySelector('article').append(p)})</script>"
)


def js_article(index: int) -> str:
    """``article(index)`` that appends a paragraph to its ``<article>`` on ``load``."""
    return article(index).replace("</head>", ON_LOAD_SCRIPT + "</head>", 1)


def write_pages(folder: Path, count: int = 20) -> list[str]:
    """The ``article-N.html`` pages (their names are returned) and beside them their
    ``js-article-N.html`` variants, ``robots.txt`` and the js engine's test pages."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for index in range(count):
        name = f"article-{index}.html"
        (folder / name).write_text(article(index), encoding="utf-8")
        (folder / f"js-{name}").write_text(js_article(index), encoding="utf-8")
        names.append(name)
    (folder / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (folder / "js.html").write_text(
        "<!doctype html><html><head><title>js</title></head><body><div id='app'></div><script>"
        "document.getElementById('app').innerHTML='<h1>Rendered</h1>'+"
        "'<p>made by javascript</p>'.repeat(20);</script></body></html>"
    )
    # js.html with something to click, type into and scroll: the five-step action script's page
    (folder / "actions.html").write_text(
        "<!doctype html><html><head><title>actions</title></head><body><div id='app'></div>"
        "<button id='more'>more</button><input id='q'><div style='height:3000px'></div><script>"
        "document.getElementById('app').innerHTML='<h1>Rendered</h1>'+"
        "'<p>made by javascript</p>'.repeat(20);"
        "document.getElementById('more').onclick=()=>{const p=document.createElement('p');"
        "p.id='added';p.textContent='added by a click';document.body.append(p);};"
        "</script></body></html>"
    )
    return names


def with_structured_data(index: int, rdfa: bool = False) -> str:
    """``article(index)`` publishing what a shop or news page does: a JSON-LD ``@graph``, a
    microdata item, Open Graph and Twitter card tags (and, with ``rdfa``, an RDFa item)."""
    head = (
        "<meta property='og:type' content='article'>"
        f"<meta property='og:image' content='/img/{index}-0.jpg'>"
        "<meta name='twitter:card' content='summary_large_image'>"
        "<meta name='twitter:site' content='@scrapespy'>"
        '<script type=\'application/ld+json\'>{"@context": "https://schema.org", "@graph": ['
        f'{{"@type": "NewsArticle", "headline": "Article {index}", "datePublished": '
        '"2026-11-26", "author": {"@type": "Person", "name": "A. Writer"}}, '
        '{"@type": "BreadcrumbList", "itemListElement": [{"@type": "ListItem", "position": 1, '
        '"name": "Articles", "item": "/articles/"}]}, '
        '{"@type": "Organization", "name": "scrapespy", "logo": "/logo.png"}]}</script>'
    )
    item = (
        "<div itemscope itemtype='https://schema.org/Product'><span itemprop='name'>Widget "
        f"{index}</span><div itemprop='offers' itemscope itemtype='https://schema.org/Offer'>"
        "<span itemprop='price'>9.99</span><meta itemprop='priceCurrency' content='EUR'>"
        "</div></div>"
    )
    if rdfa:
        item += (
            "<div vocab='https://schema.org/' typeof='Event'><span property='name'>Launch</span>"
            "<span property='startDate'>2026-12-01</span></div>"
        )
    return (
        article(index)
        .replace("</head>", head + "</head>", 1)
        .replace("<article>", "<article>" + item, 1)
    )
