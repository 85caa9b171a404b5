"""``service.extraction.structured``: what the page publishes about itself, normalised, and what
a page's broken or hostile markup leaves of it."""

from __future__ import annotations

import orjson

from service.extraction.outputs import OutputOptions, extract_page
from service.extraction.structured import MAX_DEPTH, structured_data

URL = "http://shop.test/item/1"


def page(head: str = "", body: str = "") -> str:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


def ld(text: str) -> str:
    return f'<script type="application/ld+json">{text}</script>'


def test_a_jsonld_list_and_graph_are_spread_into_items_without_context() -> None:
    head = ld(
        '[{"@context": "http://schema.org", "@type": "Person", "name": "Ann"},'
        ' {"@type": ["Thing"], "name": "x"}, {"name": "no type"}]'
    ) + ld('{"@context": {"@vocab": "https://schema.org/"}, "@graph": [{"@type": "Place"}]}')
    items = structured_data(page(head), URL)["items"]
    assert items == [
        {"@type": "Person", "name": "Ann"},
        {"@type": "Thing", "name": "x"},
        {"@type": "Place"},
    ]


def test_a_broken_block_leaves_the_others_and_a_too_deep_item_is_left_out() -> None:
    deep = '{"@type": "Thing", "a": ' + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}"
    bottomless = "[" * 5000 + "]" * 5000
    head = ld("{ broken") + ld(deep) + ld(bottomless) + ld('{"@type": "Offer", "price": 3}')
    found = structured_data(page(head), URL)
    assert found["items"] == [{"@type": "Offer", "price": 3}]
    orjson.dumps(found)  # what the worker sends


def test_microdata_urls_are_absolute_and_types_short() -> None:
    body = (
        '<div itemscope itemtype="http://schema.org/Product"><a itemprop="url" href="/p/9">p</a>'
        '<img itemprop="image" src="img/9.png"><span itemprop="name"> Nine </span></div>'
    )
    assert structured_data(page(body=body), URL)["items"] == [
        {
            "@type": "Product",
            "url": "http://shop.test/p/9",
            "image": "http://shop.test/item/img/9.png",
            "name": "Nine",
        }
    ]


def test_opengraph_namespaces_and_twitter_by_property_too() -> None:
    head = (
        '<meta property="og:title" content="T"><meta property="article:author" content="Ann">'
        '<meta property="twitter:title" content="TT"><meta name="twitter:card" content="summary">'
    )
    found = structured_data(page(head), URL)
    assert found["opengraph"] == {"title": "T", "article:author": "Ann"}
    assert found["twitter"] == {"title": "TT", "card": "summary"}


def test_nothing_published_and_not_html_are_empty() -> None:
    empty = {"items": [], "opengraph": {}, "twitter": {}}
    assert structured_data(page(body="<p>itemscope is a word here</p>"), URL) == empty
    assert structured_data("", URL) == empty
    assert structured_data("\x00\x01 itemscope", URL) == empty


def test_made_from_the_page_as_received_whatever_else_is_asked() -> None:
    html = page(ld('{"@type": "Event"}'), "<main><p>hello there</p></main>")
    options = OutputOptions(frozenset({"structured_data", "markdown"}), True, ("main",))
    found = extract_page(html, URL, None, options)
    assert found["structured_data"]["items"] == [{"@type": "Event"}]
    assert "hello there" in found["markdown"]
    assert extract_page("", URL, None, options)["structured_data"]["items"] == []
