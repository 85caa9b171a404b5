"""Tests for service.extraction: page fields, user selectors, decoding and garbage input."""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.extraction import CompiledSelectors, InvalidSelector, compile_selectors, extract

PAGE_URL = "https://shop.example/catalog/widgets?page=2"

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>
     Acme   Widgets
     | Shop
  </title>
  <base href="/static/">
  <meta name="description" content="The best widgets in town.">
  <meta property="og:title" content="Acme Widgets">
  <meta name="description" content="A later duplicate that must be ignored.">
  <meta name="twitter:card" property="og:type" content="summary">
  <meta http-equiv="refresh" content="30">
  <meta charset="utf-8">
  <style>body { color: red; }</style>
  <script>var tracking = "SCRIPT-SECRET";</script>
</head>
<body>
  <header>
    <h1>Widgets <small>2024</small></h1>
    <nav>
      <a href="items/blue.html">Blue <b>widget</b></a>
      <a href="  https://partner.example/deal  ">Partner   deal</a>
      <a href=" JavaScript:void(0)">Menu</a>
      <a href="">Nowhere</a>
      <a href="mailto:sales@shop.example">Email us</a>
      <a href="/about">About</a>
      <a>No href</a>
    </nav>
  </header>
  <main>
    <h2>Blue</h2>
    <h2>   </h2>
    <h2>Red&nbsp;and
        green</h2>
    <h3>Details</h3>
    <p class="lead">Hello <b>world</b>! Buy <a href="#buy">now</a>.</p>
    <img src="img/blue.png" alt="Blue">
    <img data-src="https://cdn.example/lazy.jpg" alt="Lazy">
    <img src="" data-src="img/empty-src.png">
    <img alt="no source">
    <ul id="prices"><li data-sku="b1">10 EUR</li><li data-sku="r2">12 EUR</li></ul>
    <noscript>NOSCRIPT-MESSAGE <img src="pixel.gif"></noscript>
    <template><p>TEMPLATE-CONTENT</p></template>
    <style>.hidden { display: none; }</style>
    <script type="application/json">{"SCRIPT-JSON": true}</script>
  </main>
</body>
</html>
"""


def _page(selectors: dict[str, str] | None = None) -> dict[str, Any]:
    return extract(PAGE, PAGE_URL, compile_selectors(selectors))


def test_result_has_exactly_the_documented_keys() -> None:
    assert set(_page()) == {
        "title",
        "language",
        "meta",
        "headings",
        "links",
        "images",
        "text",
        "extracted",
    }


def test_the_language_is_the_html_elements_lang() -> None:
    assert _page()["language"] == "en"
    assert extract('<html lang=" pt-BR "><p>x</p></html>', PAGE_URL)["language"] == "pt-BR"
    assert extract("<html><p>x</p></html>", PAGE_URL)["language"] is None
    assert extract('<html lang=""><p>x</p></html>', PAGE_URL)["language"] is None
    assert extract('<html lang="' + "x" * 500 + '">', PAGE_URL)["language"] == "x" * 64


def test_title_is_whitespace_normalised() -> None:
    assert _page()["title"] == "Acme Widgets | Shop"


@pytest.mark.parametrize(
    "html", ["<p>no title</p>", "<title>   </title><p>x</p>", "<svg><title>icon</title></svg>"]
)
def test_title_is_none_when_missing_or_empty(html: str) -> None:
    assert extract(html, PAGE_URL)["title"] is None


def test_svg_title_is_not_taken_for_the_page_title() -> None:
    html = "<body><svg><title>Cart icon</title></svg><title>Real title</title></body>"
    assert extract(html, PAGE_URL)["title"] == "Real title"


def test_meta_by_name_or_property_first_occurrence_wins() -> None:
    assert _page()["meta"] == {
        "description": "The best widgets in town.",
        "og:title": "Acme Widgets",
        "twitter:card": "summary",
        "refresh": "30",
    }


def test_headings_by_level_in_document_order_skipping_empty() -> None:
    assert _page()["headings"] == {
        "h1": ["Widgets 2024"],
        "h2": ["Blue", "Red and green"],
        "h3": ["Details"],
    }


def test_links_resolved_against_base_href_and_filtered() -> None:
    assert _page()["links"] == [
        {"text": "Blue widget", "href": "https://shop.example/static/items/blue.html"},
        {"text": "Partner deal", "href": "https://partner.example/deal"},
        {"text": "Email us", "href": "mailto:sales@shop.example"},
        {"text": "About", "href": "https://shop.example/about"},
        {"text": "now", "href": "https://shop.example/static/#buy"},
    ]


def test_links_resolve_against_base_url_without_base_href() -> None:
    html = '<a href="../other?x=1">Up</a><a href="#top">Top</a><a href="//cdn.example/f">F</a>'
    assert extract(html, "https://site.example/a/b/page.html")["links"] == [
        {"text": "Up", "href": "https://site.example/a/other?x=1"},
        {"text": "Top", "href": "https://site.example/a/b/page.html#top"},
        {"text": "F", "href": "https://cdn.example/f"},
    ]


def test_javascript_link_hidden_by_tab_or_newline_is_dropped() -> None:
    html = (
        '<a href="java&#9;script:alert(1)">a</a><a href="\njavascript:x()">b</a><a href="ok">c</a>'
    )
    assert extract(html, "https://site.example/")["links"] == [
        {"text": "c", "href": "https://site.example/ok"}
    ]


def test_link_text_separates_block_content() -> None:
    html = '<a href="/p/1"><div>Card title</div><div>Card <em>summary</em></div></a>'
    assert extract(html, "https://site.example/")["links"] == [
        {"text": "Card title Card summary", "href": "https://site.example/p/1"}
    ]


def test_javascript_base_href_falls_back_to_base_url() -> None:
    html = '<base href="javascript:alert(1)"><a href="next">Next</a>'
    assert extract(html, "https://site.example/dir/")["links"] == [
        {"text": "Next", "href": "https://site.example/dir/next"}
    ]


def test_unresolvable_href_is_kept_as_written() -> None:
    html = '<a href="http://[::1/broken">Broken</a>'
    assert extract(html, "https://site.example/")["links"] == [
        {"text": "Broken", "href": "http://[::1/broken"}
    ]


def test_images_use_src_then_data_src() -> None:
    assert _page()["images"] == [
        "https://shop.example/static/img/blue.png",
        "https://cdn.example/lazy.jpg",
        "https://shop.example/static/img/empty-src.png",
    ]


def test_text_is_visible_body_text_only() -> None:
    assert _page()["text"] == (
        "Widgets 2024 Blue widget Partner deal Menu Nowhere Email us About No href "
        "Blue Red and green Details Hello world! Buy now. 10 EUR 12 EUR"
    )


@pytest.mark.parametrize(
    "hidden", ["SCRIPT-SECRET", "SCRIPT-JSON", "color: red", "display: none", "NOSCRIPT-MESSAGE"]
)
def test_text_leaves_out_non_rendered_content(hidden: str) -> None:
    text = _page()["text"]
    assert isinstance(text, str)
    assert hidden not in text
    assert "TEMPLATE-CONTENT" not in text


def test_text_joins_inline_markup_and_separates_blocks() -> None:
    html = "<div><p>Hello <b>wor</b>ld!</p><p>Second</p>Tail<br>After<ul><li>a</li><li>b</li></ul>"
    assert extract(html, PAGE_URL)["text"] == "Hello world! Second Tail After a b"


def test_selectors_none_gives_empty_extracted() -> None:
    assert compile_selectors(None) is None
    assert _page()["extracted"] == {}


def test_plain_selector_gives_text_of_each_match() -> None:
    extracted = _page({"h2": "main h2", "lead": "p.lead"})["extracted"]
    assert extracted == {"h2": ["Blue", "", "Red and green"], "lead": ["Hello world! Buy now."]}


def test_text_pseudo_element_gives_own_text_of_each_match() -> None:
    extracted = _page({"h1": "h1::text", "lead": "p.lead::text"})["extracted"]
    assert extracted == {"h1": ["Widgets"], "lead": ["Hello ! Buy ."]}


def test_descendant_text_pseudo_element_gives_each_text_node() -> None:
    extracted = _page({"lead": "p.lead ::text"})["extracted"]
    assert extracted == {"lead": ["Hello", "world", "! Buy", "now", "."]}


def test_attr_pseudo_element_gives_attribute_of_matches_that_have_it() -> None:
    extracted = _page(
        {
            "hrefs": "nav a::attr(href)",
            "skus": "#prices li::attr(data-sku)",
            "upper": "#prices li::attr(DATA-SKU)",
            "quoted": '#prices li::attr("data-sku")',
        }
    )["extracted"]
    assert extracted == {
        "hrefs": [
            "items/blue.html",
            "  https://partner.example/deal  ",
            " JavaScript:void(0)",
            "",
            "mailto:sales@shop.example",
            "/about",
        ],
        "skus": ["b1", "r2"],
        "upper": ["b1", "r2"],
        "quoted": ["b1", "r2"],
    }


def test_descendant_attr_includes_the_match_itself_once() -> None:
    html = '<div href="/d"><div><a href="/a">A</a></div></div><p><a href="/b">B</a></p>'
    compiled = compile_selectors({"hrefs": "div ::attr(href)"})
    assert extract(html, PAGE_URL, compiled)["extracted"] == {"hrefs": ["/d", "/a"]}


def test_group_of_selectors_with_the_same_pseudo_element() -> None:
    extracted = _page({"titles": "h3::text, h1::text"})["extracted"]
    assert extracted == {"titles": ["Widgets", "Details"]}


def test_selector_without_match_gives_empty_list() -> None:
    extracted = _page({"missing": ".does-not-exist", "attr": "h1::attr(title)"})["extracted"]
    assert extracted == {"missing": [], "attr": []}


def test_selector_can_read_script_and_head_content() -> None:
    extracted = _page(
        {"json": 'script[type="application/json"]::text', "og": 'meta[property="og:title"]'}
    )["extracted"]
    assert extracted == {"json": ['{"SCRIPT-JSON": true}'], "og": [""]}


@pytest.mark.parametrize(
    "selector",
    [
        "",
        "   ",
        "p[",
        "[data-x='unclosed",
        "a[href",
        "div:not(.x",
        "p\\",
        "p:nosuchpseudo",
        "p >> a",
        "> p",
        "p,",
        "::text",
        "p::before",
        "p::text::text",
        "p::text span",
        "p::attr()",
        "p::attr(a b)",
        "h1::text, h2",
    ],
)
def test_invalid_selector_names_the_selector(selector: str) -> None:
    with pytest.raises(InvalidSelector) as caught:
        compile_selectors({"ok": "h1", "broken": selector, "later": "p["})
    assert caught.value.name == "broken"
    assert caught.value.selector == selector
    assert str(caught.value) == f"invalid CSS selector for selectors['broken']: {selector!r}"


@pytest.mark.parametrize(
    "selector",
    [
        "li:not(.a, .b)",
        "li:nth-child(2n+1 of .x)",
        "ul:has(> li)",
        ":is(h1, h2)::text",
        '[data-x=","]::text',
        "a[href^='https']::attr(href)",
        "P::TEXT",
    ],
)
def test_valid_selectors_compile(selector: str) -> None:
    assert isinstance(compile_selectors({"x": selector}), CompiledSelectors)


def test_invalid_selector_is_a_value_error_and_pickles() -> None:
    error = InvalidSelector("price", "span[")
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.name, copy.selector, str(copy)) == ("price", "span[", str(error))


def test_bytes_are_decoded_by_meta_charset() -> None:
    html = '<meta charset="windows-1251"><title>Привет, мир</title><p>Цена</p>'.encode("cp1251")
    result = extract(html, PAGE_URL)
    assert result["title"] == "Привет, мир"
    assert result["text"] == "Цена"


def test_bytes_are_decoded_by_http_equiv_charset() -> None:
    html = (
        '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        "<h1>Café crème</h1>"
    ).encode("latin-1")
    assert extract(html, PAGE_URL)["headings"] == {"h1": ["Café crème"]}


def test_bytes_are_decoded_by_bom() -> None:
    html = "\ufeff<title>Grüße</title>".encode("utf-16-le")
    assert extract(html, PAGE_URL)["title"] == "Grüße"


def test_undeclared_bytes_are_utf8_with_replacement() -> None:
    assert extract(b"<p>caf\xc3\xa9 and caf\xe9</p>", PAGE_URL)["text"] == "café and caf\ufffd"


def test_str_with_bom_is_not_shown_in_text() -> None:
    assert extract("\ufeff<p>Hello</p>", PAGE_URL)["text"] == "Hello"


EMPTY: dict[str, object] = {
    "title": None,
    "language": None,
    "meta": {},
    "headings": {},
    "links": [],
    "images": [],
    "text": None,
    "extracted": {"price": []},
}


@pytest.mark.parametrize("html", ["", b"", "   \n ", "<!-- only a comment -->", "<!doctype html>"])
def test_empty_input_gives_empty_fields(html: str | bytes) -> None:
    assert extract(html, PAGE_URL, compile_selectors({"price": ".price"})) == EMPTY


def test_binary_junk_does_not_raise() -> None:
    junk = random.Random(7).randbytes(4096)
    compiled = compile_selectors({"price": ".price", "t": "p::text", "h": "a ::attr(href)"})
    result = extract(junk, "not a url", compiled)
    assert set(result) == set(EMPTY)
    assert result["extracted"] == {"price": [], "t": [], "h": []}
    assert result["title"] is None and result["links"] == [] and result["images"] == []


def test_unclosed_tags_still_give_fields() -> None:
    html = "<title>Broken<h1>Head<p>Para <b>bold <a href='x'>link <img src=i.png"
    result = extract(html, "https://site.example/")
    assert result["title"] == "Broken<h1>Head<p>Para <b>bold <a href='x'>link <img src=i.png"
    assert result["text"] is None


def test_unclosed_body_tags_still_give_fields() -> None:
    html = "<h1>Head<p>Para <b>bold <a href='x'>link <img src=i.png> after"
    result = extract(html, "https://site.example/")
    assert result["headings"] == {"h1": ["Head Para bold link after"]}
    assert result["links"] == [{"text": "link after", "href": "https://site.example/x"}]
    assert result["images"] == ["https://site.example/i.png"]
    assert result["text"] == "Head Para bold link after"


def test_deeply_nested_document_does_not_raise() -> None:
    html = "<div>" * 5_000 + "deep" + "</div>" * 10
    compiled = compile_selectors({"div": "body > div::text"})
    result = extract(html, PAGE_URL, compiled)
    assert result["text"] == "deep"
    assert result["extracted"] == {"div": []}


_SELECTOR_PIECES = st.sampled_from(
    [*"pa ,.#[]=()'\"\\:>~+*", "::text", "::attr(", "not(", "has(", "\ud800", "\x00", "é"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SELECTOR_PIECES, max_size=10).map("".join) | st.text(max_size=20))
def test_any_selector_string_compiles_or_raises_invalid_selector(selector: str) -> None:
    try:
        compiled = compile_selectors({"s": selector})
    except InvalidSelector as error:
        assert error.name == "s"
        return
    result = extract("<div><p class=x>a <a href=1>b</a></p></div>", PAGE_URL, compiled)
    assert isinstance(result["extracted"]["s"], list)


_MARKUP_PIECES = st.sampled_from(
    [
        "<div>",
        "</div>",
        "<p>",
        "<a href='x'>",
        "<a href=' javascript:x'>",
        "</a>",
        "<img src=y>",
        "<img data-src=z>",
        "<title>",
        "<base href='http://[::1'>",
        "<meta name=a content=b>",
        "<h2>",
        "<script>",
        "<svg>",
        "<template>",
        "<noscript>",
        "<!--",
        "<table><td>",
        "<frameset>",
        "<![CDATA[",
        "&nbsp;",
        "\x00",
        "\ud800",
        "text ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_MARKUP_PIECES | st.text(max_size=4), max_size=30).map("".join)
    | st.binary(max_size=200),
    st.sampled_from([PAGE_URL, "", "not a url", "http://[::1/"]),
)
def test_any_markup_gives_every_field(html: str | bytes, base_url: str) -> None:
    compiled = compile_selectors(
        {"p": "p", "own": "a::text", "nodes": "div ::text", "src": "img::attr(src)"}
    )
    result = extract(html, base_url, compiled)
    assert set(result) == set(EMPTY)
    assert set(result["extracted"]) == {"p", "own", "nodes", "src"}
    assert result["text"] is None or result["text"] == " ".join(result["text"].split())


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from service.extraction.fields import UrlResolver  # noqa: E402

_URL_ALPHABET = "ab/.?#;:%=&-_ ~"


@settings(max_examples=2000)
@given(
    base=st.sampled_from(
        ["http://h:1/docs/x.html", "https://example.org/", "http://[::1]:8/a/b", "http://h"]
    ),
    tail=st.text(alphabet=_URL_ALPHABET, max_size=12),
    prefix=st.sampled_from(["", "/", "//", "http://", "https://", "http://x.org/", "./", "../"]),
)
def test_fast_url_paths_agree_with_urljoin(base, tail, prefix):
    from urllib.parse import urljoin

    url = (prefix + tail).strip()
    if not url:
        return
    try:
        expected = urljoin(base, url)
    except ValueError:
        expected = url
    assert UrlResolver(base)(url) == expected


def test_nesting_depth_counts_what_nests_and_not_what_closes_itself() -> None:
    from service.extraction.bounds import nesting_depth

    assert nesting_depth("<div>" * 3000 + "x" + "</div>" * 3000) == 3000
    assert nesting_depth("<div>" * 3000, stop=10) == 11  # stops counting past the bound
    # void elements and elements whose end tag may be left out do not nest what follows
    flat = "<ul>" + "<li><p>item<br><img src=x>" * 5000 + "</ul>" + "<div></div>" * 5000
    assert nesting_depth(flat) == 1
    # a stray end tag does not make the page shallower than it is
    assert nesting_depth("</div>" * 10 + "<section>" * 20) == 20
