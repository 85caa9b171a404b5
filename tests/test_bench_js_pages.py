"""The js contenders' bench pages (issue 37, bench/js_contenders.py) really edit their DOM on
``load``: the service's js engine returns the paragraph they insert, a static scrape of the
same page (the page as served) does not, so the bench's check tells the two apart."""

from __future__ import annotations

import pytest

from harness.pages import ON_LOAD_ELEMENT, ON_LOAD_TEXT, js_article
from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite

pytestmark = pytest.mark.browser


def test_the_served_page_lacks_the_paragraph_that_load_inserts() -> None:
    served = js_article(3)
    assert ON_LOAD_ELEMENT not in served
    assert "addEventListener('load'" in served


def test_the_js_engine_reads_the_paragraph_a_static_scrape_lacks(
    service: ServiceProcess, site: TargetSite, accounts: Accounts
) -> None:
    site.page("/bench-js-article-3.html", js_article(3))
    _, key = accounts.create(credits=100)
    asked = {"url": site.url("/bench-js-article-3.html"), "formats": ["markdown"]}
    asked["only_main_content"] = True
    rendered = service.scrape(key, {**asked, "engine": "js", "timeout": 20})
    served = service.scrape(key, {**asked, "engine": "static"})
    assert rendered.status == 200, rendered.body
    assert served.status == 200, served.body
    assert ON_LOAD_TEXT in rendered.json["markdown"]
    assert ON_LOAD_TEXT not in served.json["markdown"]
