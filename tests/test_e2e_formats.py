"""End to end: ``formats``, ``only_main_content`` and the tags, through the real service."""

from __future__ import annotations

import re

import pytest

from harness.service import Accounts
from harness.site import TargetSite

pytestmark = pytest.mark.engine

ARTICLE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Tidal power in the Severn</title>
<base href="/blog/posts/">
<style>.x { color: red }</style>
<script>var tracker = "tracking script body";</script>
</head><body>
<header class="site-header"><div class="logo">Riverside Gazette masthead</div>
<nav><a href="/">Home</a> <a href="/world">World desk</a> <a href="/sport">Sport desk</a></nav>
</header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your visit.
<button onclick="accept()">Accept all cookies</button></div>
<div class="layout">
<aside class="sidebar"><h3>Most read this week</h3><ul>
<li><a href="/a">Sidebar story about ferries</a></li>
<li><a href="/b">Sidebar story about bridges</a></li>
</ul></aside>
<article>
<h1>Tidal power comes to the Severn estuary</h1>
<p>The estuary has the second highest tidal range in the world, and engineers have argued for
decades about how to harvest it without drowning the mudflats that wading birds depend upon.</p>
<h2>The lagoon design</h2>
<p onclick="track(this)">Unlike a barrage, a lagoon encloses only part of the estuary behind a
low wall of rock, so the river keeps most of its natural flow and the turbines sit in one housing.
Read the <a href="../reports/lagoon.html">full engineering report</a> for the numbers.</p>
<p>Critics say the cost per megawatt hour is still far above offshore wind, although the output is
as predictable as the moon, which grid operators value more than the headline price suggests.</p>
<img src="images/lagoon.png" alt="Lagoon wall at low tide">
<table><tr><th>Scheme</th><th>Capacity</th></tr>
<tr><td>Barrage</td><td>8.6 GW</td></tr><tr><td>Lagoon</td><td>320 MW</td></tr></table>
<pre><code class="language-python">def tidal_energy(area, head):
    return 0.5 * 1025 * 9.81 * area * head ** 2
</code></pre>
<p style="display: none">Invisible teaser line that no reader sees.</p>
<!-- editor note: do not publish -->
</article>
<section id="comments" class="comments"><h3>Comments</h3>
<div class="comment">First commenter says the birds will adapt quickly enough.</div>
<div class="comment">Second commenter worries about the shipping lanes near Cardiff.</div>
</section>
<div class="related-posts"><h3>Related</h3><ul>
<li><a href="/r1">Related link about wave farms in Orkney</a></li>
<li><a href="/r2">Related link about solar roads in France</a></li></ul></div>
</div>
<footer class="site-footer">Footer copyright Riverside Gazette Ltd and its licensors.</footer>
</body></html>
"""

BODY = (
    "second highest tidal range in the world",
    "Unlike a barrage, a lagoon encloses only part of the estuary",
    "as predictable as the moon",
)
BOILERPLATE = {
    "header": "Riverside Gazette masthead",
    "nav": "World desk",
    "cookie banner": "We use cookies",
    "sidebar": "Sidebar story about ferries",
    "comments": "First commenter says",
    "related": "Related link about wave farms",
    "footer": "Footer copyright",
    "script": "tracking script body",
    "hidden": "Invisible teaser line",
}


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


@pytest.fixture(scope="module")
def article(site: TargetSite) -> str:
    site.page("/blog/posts/tidal", ARTICLE)
    return site.url("/blog/posts/tidal")


def balance(accounts: Accounts, account_id: int) -> tuple[int, int]:
    summary = accounts.summary(account_id)
    return summary["balance"], summary["held"]


def scrape(service, key: str, body: dict) -> dict:
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    result = reply.json
    assert result["success"] is True, result
    return result


def test_main_content_markdown_html_and_text_hold_the_body_only(
    service, site, accounts, paying, article
):
    _, key = paying
    result = scrape(
        service,
        key,
        {"url": article, "formats": ["markdown", "html"], "only_main_content": True},
    )
    for field in ("markdown", "html", "text"):
        for sentence in BODY:
            assert sentence in result[field], (field, sentence)
        for block, marker in BOILERPLATE.items():
            assert marker not in result[field], (field, block)
    base = site.url("/blog/")
    markdown = result["markdown"]
    # the headline opens markdown and html; text is the body alone, as article bodies are scored
    assert markdown.startswith("# Tidal power comes to the Severn estuary\n")
    assert result["html"].startswith("<h1>Tidal power comes to the Severn estuary</h1>")
    assert "Tidal power comes to the Severn estuary" not in result["text"]
    assert "## The lagoon design" in markdown
    assert f"[full engineering report]({base}reports/lagoon.html)" in markdown
    assert f"![Lagoon wall at low tide]({base}posts/images/lagoon.png)" in markdown
    assert re.search(
        r"\| Scheme +\| Capacity +\|\n\| -+ \| -+ \|\n\| Barrage +\| 8\.6 GW +\|", markdown
    )
    assert "```python\ndef tidal_energy(area, head):\n" in markdown
    html = result["html"]
    assert "<script" not in html and "<style" not in html and "onclick" not in html
    assert "editor note" not in html
    assert f'href="{base}reports/lagoon.html"' in html
    # the fields that only_main_content leaves alone
    assert result["title"] == "Tidal power in the Severn"
    assert "Sidebar story about ferries" in [link["text"] for link in result["links"]]
    assert result["headings"]["h1"] == ["Tidal power comes to the Severn estuary"]


def test_whole_page_markdown_keeps_the_page_but_no_script_or_hidden_element(
    service, site, accounts, paying, article
):
    _, key = paying
    result = scrape(service, key, {"url": article, "formats": ["markdown", "html"]})
    assert "# Tidal power comes to the Severn estuary" in result["markdown"]
    assert "Sidebar story about ferries" in result["markdown"]
    assert "Footer copyright" in result["markdown"]
    for field in ("markdown", "html"):
        assert "tracking script body" not in result[field]
        assert "Invisible teaser line" not in result[field]
        assert "editor note" not in result[field]
    assert "onclick" not in result["html"]
    # text without only_main_content is the whole page's, as without formats
    assert "Footer copyright" in result["text"]


def test_raw_html_is_the_page_as_served(service, site, accounts, paying, article):
    _, key = paying
    result = scrape(service, key, {"url": article, "formats": ["raw_html"]})
    assert result["raw_html"] == ARTICLE
    assert "markdown" not in result and "html" not in result and "screenshot" not in result


def test_include_and_exclude_tags(service, site, accounts, paying, article):
    _, key = paying
    result = scrape(
        service,
        key,
        {
            "url": article,
            "formats": ["markdown"],
            "include_tags": ["article", "footer"],
            "exclude_tags": ["table", "pre"],
        },
    )
    markdown, text = result["markdown"], result["text"]
    for output in (markdown, text):
        assert BODY[0] in output and "Footer copyright" in output
        assert "Sidebar story" not in output and "We use cookies" not in output
        assert "8.6 GW" not in output and "tidal_energy" not in output
    assert "Riverside Gazette masthead" in scrape(service, key, {"url": article})["text"]


def test_without_the_new_fields_the_answer_is_unchanged(service, site, accounts, paying, article):
    _, key = paying
    plain = service.scrape(key, {"url": article}).json
    explicit = service.scrape(
        key,
        {
            "url": article,
            "formats": [],
            "only_main_content": False,
            "include_tags": [],
            "exclude_tags": [],
            "screenshot_full_page": False,
        },
    ).json
    for result in (plain, explicit):
        assert list(result) == [
            "url", "final_url", "status_code", "success", "engine", "elapsed_ms", "error",
            "blocked", "proxy_used", "title", "meta", "headings", "links", "images", "text",
            "extracted", "error_code", "tier_used", "credits_charged", "cached", "timings",
            "language",
        ]  # fmt: skip
    for result in (plain, explicit):  # the clock's figures differ from one scrape to the next
        result.pop("elapsed_ms"), result.pop("timings")
    assert plain == explicit
    assert "Footer copyright" in plain["text"] and "We use cookies" in plain["text"]


def test_formats_cost_the_same_as_a_plain_scrape(service, site, accounts, paying, article):
    account_id, key = paying
    scrape(service, key, {"url": article})
    assert balance(accounts, account_id) == (99, 0)
    scrape(
        service,
        key,
        {"url": article, "formats": ["markdown", "html", "raw_html"], "only_main_content": True},
    )
    assert balance(accounts, account_id) == (98, 0)


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"formats": ["pdf"]}, "formats"),
        ({"formats": "markdown"}, "formats"),
        ({"formats": ["screenshot"]}, "js engine"),
        ({"formats": ["screenshot"], "engine": "static"}, "js engine"),
        ({"screenshot_full_page": True, "engine": "js"}, "screenshot_full_page"),
        ({"only_main_content": "yes"}, "only_main_content"),
        ({"include_tags": "article"}, "include_tags"),
        ({"exclude_tags": [1]}, "exclude_tags"),
        ({"include_tags": ["article", "p[["]}, "include_tags[1]: 'p[['"),
        ({"exclude_tags": ["p::text"]}, "exclude_tags[0]: 'p::text'"),
        ({"exclude_tags": ["p"] * 51}, "exclude_tags"),
    ],
)
def test_bad_inputs_are_400_naming_the_field_with_nothing_fetched_or_held(
    service, site, accounts, paying, article, body, names
):
    account_id, key = paying
    before = site.count("/blog/posts/tidal")
    reply = service.scrape(key, {"url": article, **body})
    assert reply.status == 400, reply.body
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert list(reply.json) == ["error"]
    assert names in reply.json["error"]
    assert site.count("/blog/posts/tidal") == before
    assert balance(accounts, account_id) == (100, 0)


def test_raw_html_past_the_cap_is_a_clear_unbilled_failure(service, site, accounts, paying):
    account_id, key = paying
    big = "<html><body>" + "<p>filler paragraph</p>" * 100_000 + "</body></html>"  # 2.3 MB
    site.page("/big", big)
    reply = service.scrape(key, {"url": site.url("/big"), "formats": ["raw_html"]})
    result = reply.json
    assert reply.status == 200
    assert result["success"] is False
    assert "2097152-byte limit" in result["error"]
    assert "SCRAPESPY_MAX_RAW_HTML_BYTES" in result["error"]
    assert result["raw_html"] is None
    assert balance(accounts, account_id) == (100, 0)
    # the same page without raw_html is an ordinary scrape
    assert scrape(service, key, {"url": site.url("/big")})["title"] is None
    assert balance(accounts, account_id) == (99, 0)
