"""The js contenders' bench pages (issue 37) really edit their DOM on ``load``, and the bench's
check tells a page read after ``load`` from one read as served."""

from __future__ import annotations

import pytest

from bench.js_contenders import Worker, chromium_path
from harness.pages import ON_LOAD_ELEMENT, js_article
from harness.site import TargetSite


def test_the_served_page_lacks_the_paragraph_that_load_inserts() -> None:
    served = js_article(3)
    assert ON_LOAD_ELEMENT not in served
    assert "addEventListener('load'" in served


@pytest.mark.parametrize("contender", ["playwright", "scrapy_playwright"])
def test_a_browser_contender_reads_the_page_after_load(contender: str) -> None:
    site = TargetSite()
    site.page("/js-article-3.html", js_article(3))
    site.start()
    worker = Worker(contender, [site.url("/js-article-3.html")], chromium_path())
    try:
        figures = worker.turn(1, 1.0)
    finally:
        worker.stop()
        site.stop()
    assert figures["pages"] >= 1
    assert figures["errors"] == 0
    assert figures["failed_checks"] == 0
