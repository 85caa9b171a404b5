"""End to end: what a ``js`` page loads depends on what the scrape asks for.

Images, web fonts and media change nothing in the DOM the service reads: they are not fetched
(``SCRAPESPY_BLOCK_HEAVY_RESOURCES``, on by default) unless a screenshot is asked, which loads
the images (and actions, whose layout may depend on them). Stylesheets and scripts always load.
The result's ``images`` come from the DOM either way. Counted at the local target server.
"""

from __future__ import annotations

import pytest

from harness.service import Accounts
from harness.site import TargetSite

pytestmark = [pytest.mark.browser, pytest.mark.engine]

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def page(prefix: str) -> str:
    return f"""<!doctype html><html><head><title>Pictures</title>
<link rel="stylesheet" href="{prefix}/style.css">
<style>@font-face {{font-family: F; src: url({prefix}/font.woff2);}} h1 {{font-family: F;}}</style>
<script src="{prefix}/app.js"></script></head><body>
<h1>Pictures</h1><p id="made"></p>
<img src="{prefix}/one.png" alt="one"><img src="{prefix}/two.png" alt="two">
<img src="{prefix}/three" alt="three">
</body></html>"""


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    for prefix in ("/res/plain", "/res/shot", "/res/steps"):
        site.page(f"{prefix}/page", page(prefix))
        site.page(f"{prefix}/style.css", "p { color: red; }", **{"Content-Type": "text/css"})
        site.page(
            f"{prefix}/app.js",
            "addEventListener('DOMContentLoaded', () => "
            "{ document.getElementById('made').textContent = 'script ran'; });",
            **{"Content-Type": "text/javascript"},
        )
        site.page(f"{prefix}/font.woff2", b"wOF2", **{"Content-Type": "font/woff2"})
        for name in ("one.png", "two.png", "three"):
            site.page(f"{prefix}/{name}", PNG, **{"Content-Type": "image/png"})
    # an HTML page at an address an image would have
    site.page(
        "/res/odd/photo.jpg", "<html><body><p>a page at a picture's address</p></body></html>"
    )
    return site


@pytest.fixture
def key(accounts: Accounts) -> str:
    return accounts.create(credits=100)[1]


def fetched(site: TargetSite, prefix: str) -> dict[str, int]:
    names = ("page", "style.css", "app.js", "font.woff2", "one.png", "two.png", "three")
    return {name: site.count(f"{prefix}/{name}") for name in names}


def scrape(service, key: str, url: str, **fields):  # type: ignore[no-untyped-def]
    result = service.scrape(key, {"url": url, "engine": "js", **fields})
    assert result.status == 200, result.body
    body = result.json
    assert body["success"] is True, body["error"]
    return body


def test_images_and_fonts_are_not_fetched_without_a_screenshot(service, pages, key):
    body = scrape(service, key, pages.url("/res/plain/page"))
    assert body["images"] == [
        pages.url("/res/plain/one.png"),
        pages.url("/res/plain/two.png"),
        pages.url("/res/plain/three"),
    ]
    assert "script ran" in body["text"]
    assert fetched(pages, "/res/plain") == {
        "page": 1,
        "style.css": 1,
        "app.js": 1,
        "font.woff2": 0,
        "one.png": 0,  # failed in the browser by its address's extension
        "two.png": 0,
        "three": 0,  # no extension: paused and failed by its type
    }


def test_a_screenshot_loads_the_images_and_the_result_is_the_same(service, pages, key):
    body = scrape(service, key, pages.url("/res/shot/page"), formats=["screenshot"])
    assert body["screenshot"]
    assert body["images"] == [
        pages.url("/res/shot/one.png"),
        pages.url("/res/shot/two.png"),
        pages.url("/res/shot/three"),
    ]
    assert "script ran" in body["text"]
    assert fetched(pages, "/res/shot") == {
        "page": 1,
        "style.css": 1,
        "app.js": 1,
        "font.woff2": 0,
        "one.png": 1,
        "two.png": 1,
        "three": 1,
    }


def test_actions_load_the_images(service, pages, key):
    steps = [{"type": "scroll", "direction": "down", "amount": 100}]
    body = scrape(service, key, pages.url("/res/steps/page"), actions=steps)
    assert body["images"] == [
        pages.url("/res/steps/one.png"),
        pages.url("/res/steps/two.png"),
        pages.url("/res/steps/three"),
    ]
    assert fetched(pages, "/res/steps")["one.png"] == 1


def test_a_page_at_an_address_with_an_images_extension_is_still_read(service, pages, key):
    # what is skipped by extension is a sub-resource; the page's own navigation never is
    body = scrape(service, key, pages.url("/res/odd/photo.jpg"))
    assert "a page at a picture's address" in body["text"]
    assert pages.count("/res/odd/photo.jpg") == 1
