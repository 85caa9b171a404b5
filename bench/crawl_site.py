"""The crawl benchmark's site: ``pages`` article pages linked as a tree from ``index.html``.

Page 0 is ``/index.html``; page ``i > 0`` is ``/p/{i}.html``, child ``j`` (1 to ``BRANCHING``)
of page ``(i - 1) // BRANCHING``, so a breadth-first crawl from the index reaches every page
within ``depth(pages - 1)`` hops (5 for 10,000 pages at 7 children a page). Each page has the
shape of harness.pages.article (title, meta description and og:title, a style, a script,
headings, paragraphs, images) and 10 to 20 links: its children, its parent and the index in its
nav, a few cross links to random pages, a link repeated (its first child, or the index, twice),
and two external links (``http://example.org/...``, never fetched: both crawlers keep to the
host). robots.txt allows everything but ``/private/``, which no page links to.
"""

from __future__ import annotations

import random
from pathlib import Path

from harness.pages import sentence

BRANCHING = 7
CROSS_LINKS = 4
SECTIONS = 6
PARAGRAPHS = 3


def path_of(index: int) -> str:
    return "/index.html" if index == 0 else f"/p/{index}.html"


def depth(index: int) -> int:
    hops = 0
    while index > 0:
        index = (index - 1) // BRANCHING
        hops += 1
    return hops


def page(index: int, pages: int) -> str:
    rng = random.Random(index)
    children = [c for c in range(index * BRANCHING + 1, index * BRANCHING + 1 + BRANCHING)]
    children = [c for c in children if c < pages]
    cross = [rng.randrange(pages) for _ in range(CROSS_LINKS + (2 if not children else 0))]
    repeated = children[0] if children else 0
    # the body's links, spread over its paragraphs: children, cross links, one repeated
    body_links = [*children, *cross, repeated]
    rng.shuffle(body_links)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Page {index}: {sentence(rng, 6)}</title>",
        f"<meta name='description' content='{sentence(rng, 14)}'>",
        f"<meta property='og:title' content='Page {index}'>",
        "<style>body{font:16px/1.5 serif;max-width:42em;margin:auto} .nav a{margin:0 .3em}</style>",
        "<script>window.analytics = {page: location.pathname, t: Date.now()};</script>",
        "</head><body><nav class='nav'><a href='/index.html'>Home</a>",
    ]
    if index:
        parts.append(f"<a href='{path_of((index - 1) // BRANCHING)}'>Up</a>")
    parts.append(f"</nav><article><h1>{sentence(rng, 8)}</h1>")
    slots = SECTIONS * PARAGRAPHS
    for section in range(SECTIONS):
        parts.append(f"<h2>{sentence(rng, 5)}</h2>")
        for paragraph in range(PARAGRAPHS):
            slot = section * PARAGRAPHS + paragraph
            links = " ".join(
                f"<a href='{path_of(target)}'>{sentence(rng, 2)[:-1]}</a>"
                for target in body_links[slot::slots]
            )
            parts.append(f"<p>{sentence(rng, 40)} {links} {sentence(rng, 24)}</p>")
        parts.append(f"<h3>{sentence(rng, 4)}</h3><img src='/img/{index}-{section}.jpg' alt=''>")
    parts.append("</article><footer>")
    parts += [f"<a href='http://example.org/ref/{index}/{n}'>ref {n}</a>" for n in range(2)]
    parts.append("</footer></body></html>")
    return "".join(parts)


def write_site(folder: Path, pages: int) -> str:
    """Writes the site into ``folder``; answers the start page's path."""
    (folder / "p").mkdir(parents=True, exist_ok=True)
    for index in range(pages):
        (folder / path_of(index).lstrip("/")).write_text(page(index, pages), encoding="utf-8")
    (folder / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    return path_of(0)
