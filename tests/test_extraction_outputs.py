"""service.extraction.outputs: markdown, cleaned HTML and main-content text of a page."""

from __future__ import annotations

import time

import orjson
import pytest

from service.extraction import compile_tags, extract
from service.extraction.outputs import OutputOptions, extract_page
from service.extraction.selectors import InvalidSelector
from service.extraction.worker import FRAME_LENGTH as _LENGTH
from service.extraction.worker import answer, encode_request

PAGE = """<!doctype html><html><head><title>T</title><base href="/docs/">
<script>var s = "script text"</script><style>p { color: red }</style></head><body>
<nav class="menu"><a href="/">Home</a> <a href="/about">About us</a></nav>
<main><h1>The title</h1>
<p onclick="go()" onmouseover="x()">A paragraph long enough to be the body of the page, with a
<a href="guide.html">relative link</a>, an <em>emphasis</em> and an <img src="pic.png" alt="pic">
and <a href="javascript:void(0)">a script link</a>.</p>
<ul><li>first item of the list</li><li>second item of the list</li></ul>
<div hidden>hidden block</div><span style="display:none">invisible span</span>
<!-- a comment -->
<img srcset="a.png 1x, /b.png 2x" src="c.png" alt="set">
</main>
<footer class="site-footer">Footer words</footer>
</body></html>"""
URL = "http://example.com/section/page"


def outputs(**kwargs: object) -> dict[str, object]:
    return extract_page(PAGE, URL, None, OutputOptions(**kwargs))  # type: ignore[arg-type]


def test_html_is_cleaned_with_absolute_urls():
    html = outputs(formats=frozenset({"html"}))["html"]
    assert isinstance(html, str)
    for gone in ("<script", "<style", "onclick", "onmouseover", "hidden block", "invisible span"):
        assert gone not in html
    assert "a comment" not in html and "javascript:" not in html
    assert 'href="http://example.com/docs/guide.html"' in html
    assert 'src="http://example.com/docs/pic.png"' in html
    assert 'srcset="http://example.com/docs/a.png 1x, http://example.com/b.png 2x"' in html
    assert "Footer words" in html  # the whole page, without only_main_content


def test_markdown_is_github_flavoured_with_absolute_urls():
    markdown = outputs(formats=frozenset({"markdown"}))["markdown"]
    assert isinstance(markdown, str)
    assert "# The title" in markdown
    assert "[relative link](http://example.com/docs/guide.html)" in markdown
    assert "![pic](http://example.com/docs/pic.png)" in markdown
    assert "*emphasis*" in markdown
    assert "- first item of the list" in markdown
    assert "script text" not in markdown and "hidden block" not in markdown


@pytest.mark.parametrize("formats", [{"markdown"}, {"markdown", "html"}])
def test_links_and_images_keep_their_titles_but_not_empty_ones(formats):
    page = (
        '<main><p>Read <a href="/a" title="">the guide</a>, <a href="/b" title="Part B">part B</a>'
        ' and see <img src="/c.png" alt="a chart" title=""> for the figures of the year.</p></main>'
    )
    options = OutputOptions(frozenset(formats), only_main_content=True)
    markdown = extract_page(page, URL, None, options)["markdown"]
    assert "[the guide](http://example.com/a)" in markdown
    assert '[part B](http://example.com/b "Part B")' in markdown
    assert "![a chart](http://example.com/c.png)" in markdown


def test_only_main_content_drops_navigation_and_footer_from_text_markdown_and_html():
    page = outputs(formats=frozenset({"markdown", "html"}), only_main_content=True)
    for field in ("text", "markdown", "html"):
        value = page[field]
        assert isinstance(value, str)
        assert "A paragraph long enough" in value
        assert "About us" not in value and "Footer words" not in value
    # the standard fields stay those of the whole page
    assert page["title"] == "T"
    assert [link["href"] for link in page["links"]][:2] == [  # type: ignore[index]
        "http://example.com/",
        "http://example.com/about",
    ]
    assert "markdown" not in outputs(only_main_content=True)


def test_text_of_the_main_content_is_the_visible_text_walker_s():
    # Inline markup joins words as a reader sees them: "emphasis," not "emphasis ,".
    text = outputs(only_main_content=True)["text"]
    assert isinstance(text, str)
    assert "an emphasis and an and a script link." in text


def test_include_then_exclude_tags():
    page = outputs(
        formats=frozenset({"markdown"}), include_tags=("main", "footer"), exclude_tags=("ul",)
    )
    for field in ("text", "markdown"):
        value = page[field]
        assert isinstance(value, str)
        assert "A paragraph long enough" in value and "Footer words" in value
        assert "About us" not in value and "first item" not in value
    nothing = outputs(formats=frozenset({"markdown"}), include_tags=("article",))
    assert nothing["markdown"] == "" and nothing["text"] is None


def test_included_table_rows_and_cells_stay_a_table():
    page = """<html><body><p>intro</p><table>
    <tr class="keep"><th>Scheme</th><th>Capacity</th></tr>
    <tr class="keep"><td>Lagoon</td><td>320 MW</td></tr><tr><td>Barrage</td><td>8.6 GW</td></tr>
    </table><table><tr><td class="cell">lone cell</td></tr></table></body></html>"""
    options = OutputOptions(frozenset({"markdown", "html"}), include_tags=("tr.keep", "td.cell"))
    kept = extract_page(page, URL, None, options)
    assert "| Scheme | Capacity |" in kept["markdown"]
    assert "| Lagoon | 320 MW |" in kept["markdown"] and "Barrage" not in kept["markdown"]
    assert "<td>Lagoon</td>" in kept["html"] and '<td class="cell">lone cell</td>' in kept["html"]
    assert "intro" not in kept["text"]


def test_nested_include_matches_are_kept_once():
    text = outputs(include_tags=("main", "main p"))["text"]
    assert isinstance(text, str)
    assert text.count("A paragraph long enough") == 1


def test_without_options_the_fields_are_extract_s():
    assert extract_page(PAGE, URL, None, None) == extract(PAGE, URL, None)


def test_an_unparsable_page_gives_empty_outputs():
    page = extract_page("", URL, None, OutputOptions(frozenset({"markdown"}), True))
    assert page["markdown"] == "" and page["text"] is None


@pytest.mark.parametrize("bad", ["p[[", "", "a::text", "p::attr(href)", "a,", "p\\"])
def test_tags_that_are_not_plain_css_are_refused_naming_the_field_and_index(bad):
    with pytest.raises(InvalidSelector) as caught:
        compile_tags("exclude_tags", ["p", bad])
    assert str(caught.value) == f"invalid CSS selector for exclude_tags[1]: {bad!r}"


def test_options_travel_to_a_worker_and_back():
    options = OutputOptions(frozenset({"markdown"}), True, ("main",), (".ad",))
    frame = encode_request(PAGE, URL, None, options)
    reply = orjson.loads(answer(frame[_LENGTH.size :])[_LENGTH.size :])
    assert reply == extract_page(PAGE, URL, None, options)
    assert "A paragraph long enough" in reply["markdown"]
    plain = encode_request(PAGE, URL, None)
    assert b"outputs" not in plain.split(b"\0", 1)[0]


@pytest.mark.parametrize(
    "tag", ['<img/onerror="x()" src="a.png">', '<IMG\nOnError = "x()" src="a.png">']
)
def test_event_attributes_are_dropped_however_they_are_written(tag):
    html = extract_page(f"<body><p>{tag}</p></body>", URL, None, OutputOptions(frozenset({"html"})))
    assert "x()" not in html["html"] and 'src="http://example.com/section/a.png"' in html["html"]


def test_a_page_of_unclosed_tags_is_searched_for_event_attributes_in_linear_time():
    page = "<body>" + "<" * 200_000 + "</body>"
    started = time.perf_counter()
    extract_page(page, URL, None, OutputOptions(frozenset({"html"})))
    # about 10 ms here; quadratic would take minutes: the bound leaves room for a busy machine
    assert time.perf_counter() - started < 10
