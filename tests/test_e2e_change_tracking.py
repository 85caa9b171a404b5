"""End to end: the ``change_tracking`` format, through the real service and a local site whose
pages change between scrapes (a text edit, a reordering, a removal answering 404, a price in a
list), in ``POST /scrape``, in a batch job, in a crawl, through the Python client and through
firecrawl-py's v2 client. Runs on SQLite,
and on PostgreSQL with ``SCRAPESPY_TEST_DB=postgresql`` (the shared ``service`` and ``accounts``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from firecrawl import Firecrawl
from scrapespy import Scrapespy

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.test_e2e_batch import all_results, wait_finished

_paths = itertools.count(1)


class Page:
    """A page of the local site whose paragraphs, status and price list the test sets."""

    def __init__(self, site: TargetSite, name: str) -> None:
        self.path = f"/ct/{name}-{next(_paths)}"
        self.url = site.url(self.path)
        self.status = 200
        self.paragraphs = ["First paragraph.", "Second paragraph.", "Third paragraph."]
        self.prices: list[tuple[str, str]] = []
        site.routes[self.path] = self.route

    def route(self, _handler: Any) -> tuple[int, dict[str, str], bytes]:
        if self.status != 200:
            body = "<html><head><title>Gone</title></head><body><p>Not here.</p></body></html>"
            return self.status, {"Content-Type": "text/html; charset=utf-8"}, body.encode()
        items = "".join(
            f'<li class="item"><span class="name">{name}</span> '
            f'<span class="price">{price}</span></li>'
            for name, price in self.prices
        )
        paragraphs = "".join(f"<p>{text}</p>" for text in self.paragraphs)
        body = (
            "<html><head><title>Story</title></head><body><h1>Story</h1>"
            f"{paragraphs}<ul>{items}</ul></body></html>"
        )
        return 200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()


@pytest.fixture(scope="module")
def paying(accounts: Accounts) -> Callable[[], str]:
    def make() -> str:
        return accounts.create(credits=10_000)[1]

    return make


def scrape(service: ServiceProcess, key: str, url: str, **options: Any) -> dict[str, Any]:
    body = {"url": url, "formats": ["markdown", "change_tracking"], **options}
    reply = call("POST", service.url("/scrape"), body, key=key)
    assert reply.status == 200, reply.body
    answer: dict[str, Any] = reply.json
    return answer


def test_new_then_same_then_changed_by_a_reordering_then_removed(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "story")
    first = scrape(service, key, page.url)
    assert first["success"] and first["credits_charged"] == 1  # what a markdown scrape costs
    assert first["change_tracking"] == {
        "previous_scrape_at": None,
        "change_status": "new",
        "visibility": "visible",
    }
    assert "First paragraph." in first["markdown"]

    again = scrape(service, key, page.url)
    assert again["change_tracking"]["change_status"] == "same"
    assert again["change_tracking"]["previous_scrape_at"] is not None
    assert again["credits_charged"] == 1

    page.paragraphs = ["Third paragraph.", "First paragraph.", "Second paragraph."]
    reordered = scrape(service, key, page.url)
    assert reordered["change_tracking"]["change_status"] == "changed"
    assert (
        reordered["change_tracking"]["previous_scrape_at"]
        > (again["change_tracking"]["previous_scrape_at"])
    )

    page.status = 404
    gone = scrape(service, key, page.url)
    assert not gone["success"] and gone["credits_charged"] == 0
    assert gone["change_tracking"]["change_status"] == "removed"
    assert gone["change_tracking"]["previous_scrape_at"] is not None

    page.status = 200  # back as it was last seen: compared with its last version, not the 404
    back = scrape(service, key, page.url)
    assert back["change_tracking"]["change_status"] == "same"


def test_a_removal_answering_410_is_removed_and_markdown_is_not_needed_in_formats(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "gone")
    body = {"url": page.url, "formats": ["change_tracking"]}
    first = call("POST", service.url("/scrape"), body, key=key).json
    assert first["change_tracking"]["change_status"] == "new"
    assert "markdown" not in first  # compared, but not answered: it was not asked
    page.status = 410
    gone = call("POST", service.url("/scrape"), body, key=key).json
    assert gone["change_tracking"]["change_status"] == "removed"


def test_git_diff_gives_the_unified_diff_and_its_parsed_form(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "diff")
    options = {"change_tracking": {"modes": ["git-diff"]}}
    first = scrape(service, key, page.url, **options)
    assert first["change_tracking"]["diff"] is None  # nothing to compare with
    same = scrape(service, key, page.url, **options)
    assert same["change_tracking"]["diff"] is None

    page.paragraphs[1] = "Second paragraph, edited."
    edited = scrape(service, key, page.url, **options)
    tracking = edited["change_tracking"]
    assert tracking["change_status"] == "changed"
    lines = same["markdown"].strip("\n").split("\n")
    at = lines.index("Second paragraph.") + 1  # 1-based, in both versions
    diff = tracking["diff"]
    assert "-Second paragraph.\n+Second paragraph, edited.\n" in diff["text"]
    assert diff["text"].startswith("@@ -")
    [file] = diff["json"]["files"]
    assert file["from"] is None and file["to"] is None
    [chunk] = file["chunks"]
    assert chunk["content"] == diff["text"].split("\n")[0]
    changes = chunk["changes"]
    deleted = [c for c in changes if c["type"] == "del"]
    added = [c for c in changes if c["type"] == "add"]
    assert deleted == [{"type": "del", "del": True, "ln": at, "content": "-Second paragraph."}]
    assert added == [
        {"type": "add", "add": True, "ln": at, "content": "+Second paragraph, edited."}
    ]
    normal = [c for c in changes if c["type"] == "normal"]
    assert normal and all(c["normal"] and c["content"].startswith(" ") for c in normal)
    assert all(c["ln1"] == c["ln2"] for c in normal)  # an edit in place moves no line
    # the text is the chunk's header and its changes' lines
    assert diff["text"] == "\n".join([chunk["content"], *(c["content"] for c in changes)]) + "\n"


PRICES = {
    "baseSelector": "li.item",
    "fields": [
        {"name": "name", "selector": ".name", "type": "text"},
        {"name": "price", "selector": ".price", "type": "text"},
    ],
}


def test_json_mode_with_selectors_reports_the_price_that_changed(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "prices")
    page.prices = [("Tea", "$3"), ("Coffee", "$5"), ("Cake", "$4")]
    options = {"change_tracking": {"modes": ["json"], "selectors": PRICES}}
    first = scrape(service, key, page.url, **options)
    assert first["change_tracking"]["change_status"] == "new"
    assert first["change_tracking"]["json"] is None
    assert "json" not in first  # the records compared are not the answer's json
    same = scrape(service, key, page.url, **options)
    assert same["change_tracking"]["json"] == {}

    page.prices[1] = ("Coffee", "$6")
    changed = scrape(service, key, page.url, **options)
    assert changed["change_tracking"]["change_status"] == "changed"
    assert changed["change_tracking"]["json"] == {"1.price": {"previous": "$5", "current": "$6"}}
    assert changed["credits_charged"] == 1


def test_json_mode_reads_the_request_s_own_json_selectors(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "own-json")
    page.prices = [("Tea", "$3")]
    options = {
        "formats": ["json", "change_tracking"],
        "json": {"selectors": PRICES},
        "change_tracking": {"modes": ["json", "git-diff"]},
    }
    scrape(service, key, page.url, **options)
    page.prices = [("Tea", "$2"), ("Scone", "$1")]
    changed = scrape(service, key, page.url, **options)
    assert changed["json"] == [{"name": "Tea", "price": "$2"}, {"name": "Scone", "price": "$1"}]
    assert changed["change_tracking"]["json"] == {
        "0.price": {"previous": "$3", "current": "$2"},
        "1.name": {"previous": None, "current": "Scone"},
        "1.price": {"previous": None, "current": "$1"},
    }
    assert changed["change_tracking"]["diff"] is not None


def test_tags_keep_histories_apart_and_another_account_starts_new(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key, other = paying(), paying()
    page = Page(site, "tags")
    assert scrape(service, key, page.url)["change_tracking"]["change_status"] == "new"
    tagged = {"change_tracking": {"tag": "daily"}}
    assert scrape(service, key, page.url, **tagged)["change_tracking"]["change_status"] == "new"
    assert scrape(service, key, page.url, **tagged)["change_tracking"]["change_status"] == "same"
    page.paragraphs.append("A fourth paragraph.")
    weekly = {"change_tracking": {"tag": "weekly"}}
    assert scrape(service, key, page.url, **weekly)["change_tracking"]["change_status"] == "new"
    assert scrape(service, key, page.url)["change_tracking"]["change_status"] == "changed"
    # another account has no history of this page, whatever this one has
    assert scrape(service, other, page.url)["change_tracking"]["change_status"] == "new"
    again = scrape(service, other, page.url, **tagged)
    assert again["change_tracking"]["change_status"] == "new"


def test_a_change_tracking_scrape_is_never_a_kept_answer(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "cache")
    first = scrape(service, key, page.url, max_age=600)
    page.paragraphs[0] = "Edited."
    second = scrape(service, key, page.url, max_age=600)
    assert not second["cached"] and second["credits_charged"] == 1
    assert first["change_tracking"]["change_status"] == "new"
    assert second["change_tracking"]["change_status"] == "changed"


def test_cross_field_rules_are_400s_naming_the_field(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    url = site.url("/article")
    cases = [
        ({"url": url, "change_tracking": {"modes": ["git-diff"]}}, "'change_tracking'"),
        (
            {"url": url, "formats": ["change_tracking"], "change_tracking": {"modes": ["json"]}},
            "'change_tracking.modes'",
        ),
        (
            {
                "url": url,
                "formats": ["change_tracking"],
                "change_tracking": {"selectors": {"baseSelector": "li", "fields": [{}]}},
            },
            "'change_tracking.selectors",
        ),
        (
            {"url": url, "formats": ["change_tracking"], "change_tracking": {"modes": ["svn"]}},
            "change_tracking.modes",
        ),
    ]
    for body, named in cases:
        reply = call("POST", service.url("/scrape"), body, key=key)
        assert reply.status == 400, (body, reply.body)
        assert named in reply.json["error"], reply.json


def test_a_batch_job_tracks_each_page(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    pages = [Page(site, "batch") for _ in range(2)]
    body = {
        "urls": [page.url for page in pages],
        "formats": ["change_tracking"],
        "change_tracking": {"modes": ["git-diff"], "tag": "batch"},
    }

    def run() -> dict[str, dict[str, Any]]:
        reply = call("POST", service.url("/batch"), body, key=key)
        assert reply.status in (200, 201, 202), reply.body
        job_id = reply.json["id"]
        wait_finished(service, key, job_id)
        return {r["url"]: r["result"] for r in all_results(service, key, job_id)}

    first = run()
    assert {r["change_tracking"]["change_status"] for r in first.values()} == {"new"}
    pages[1].paragraphs[2] = "Third paragraph, edited."
    second = run()
    assert second[pages[0].url]["change_tracking"]["change_status"] == "same"
    changed = second[pages[1].url]["change_tracking"]
    assert changed["change_status"] == "changed"
    assert "+Third paragraph, edited." in changed["diff"]["text"]
    # the same page scraped alone, under the batch's tag, continues the batch's history
    alone = scrape(service, key, pages[1].url, change_tracking={"tag": "batch"})
    assert alone["change_tracking"]["change_status"] == "same"


def test_firecrawl_py_v2_change_tracking(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    page = Page(site, "firecrawl")
    app = Firecrawl(api_key=key, api_url=service.url(""), max_retries=1)
    formats: list[Any] = [
        "markdown",
        {"type": "changeTracking", "modes": ["git-diff"], "tag": "fc"},
    ]
    first = app.scrape(page.url, formats=formats)
    assert first.change_tracking == {
        "previousScrapeAt": None,
        "changeStatus": "new",
        "visibility": "visible",
    }
    assert first.markdown and "First paragraph." in first.markdown
    page.paragraphs[0] = "First paragraph, edited."
    second = app.scrape(page.url, formats=formats)  # the SDK's maxAge does not replay the first
    tracking = second.change_tracking
    assert tracking is not None
    assert tracking["changeStatus"] == "changed"
    assert tracking["previousScrapeAt"] is not None
    assert "+First paragraph, edited." in tracking["diff"]["text"]
    assert tracking["diff"]["json"]["files"][0]["chunks"]
    # the native history of the same tag is the same one, read here by the Python client
    native = Scrapespy(api_key=key, base_url=service.base).scrape(
        page.url, formats=["change_tracking"], change_tracking={"tag": "fc"}
    )
    assert native.change_tracking is not None
    assert native.change_tracking["change_status"] == "same"


def test_a_crawl_tracks_each_page_it_reaches(
    service: ServiceProcess, site: TargetSite, paying: Callable[[], str]
) -> None:
    key = paying()
    hub = f"/ct/hub-{next(_paths)}"
    children = [Page(site, "child") for _ in range(2)]
    links = "".join(f'<a href="{page.path}">{page.path}</a>' for page in children)
    site.page(hub, f"<html><head><title>Hub</title></head><body>{links}</body></html>")
    body = {
        "url": site.url(hub),
        "max_depth": 1,
        "include_paths": ["^/ct/"],
        "sitemap": "skip",
        "formats": ["change_tracking"],
        "change_tracking": {"modes": ["git-diff"], "tag": "crawl"},
    }

    def run() -> dict[str, dict[str, Any]]:
        reply = call("POST", service.url("/crawl"), body, key=key)
        assert reply.status == 202, reply.body
        wait_finished(service, key, reply.json["id"])
        results = all_results(service, key, reply.json["id"])
        return {r["url"].removeprefix(site.base): r["result"] for r in results}

    first = run()
    assert set(first) == {hub, *(page.path for page in children)}
    assert {r["change_tracking"]["change_status"] for r in first.values()} == {"new"}
    children[0].paragraphs.reverse()
    second = run()
    assert second[children[0].path]["change_tracking"]["change_status"] == "changed"
    assert second[children[1].path]["change_tracking"]["change_status"] == "same"
    assert second[hub]["change_tracking"]["visibility"] == "visible"
