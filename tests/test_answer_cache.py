"""``service.scrape.answer_cache``: what is kept, for whom, and its bounds (entries, bytes, age).
The end-to-end tests (test_e2e_cost) show it through the service."""

from __future__ import annotations

from types import SimpleNamespace

import orjson

from service.core.schemas import checked_scrape
from service.extraction import empty_fields
from service.scrape import answer_cache
from service.scrape.answer_cache import AnswerCache, options_of
from service.scrape.order import ScrapeOrder, new_result
from service.scrape.results import ScrapeResult


def answer(
    url: str = "http://example.com/", *, error: str | None = None, text: str = ""
) -> ScrapeResult:
    order = ScrapeOrder(url=url)
    result = new_result(
        order, {**empty_fields(None), "text": text}, final_url=url, status_code=200, error=error
    )
    result.credits_charged = 1
    return result


def options(body: dict[str, object]) -> bytes:
    return options_of(checked_scrape(body)[0])


def test_the_same_request_is_every_field_but_max_age_in_any_order():
    url = "http://example.com/"
    plain = options({"url": url, "max_age": 5, "headers": {"A": "1", "B": "2"}})
    assert plain == options({"headers": {"B": "2", "A": "1"}, "max_age": 600, "url": url})
    assert plain != options({"url": url, "headers": {"A": "1", "B": "2"}, "engine": "js"})
    assert plain != options({"url": url, "headers": {"A": "1", "B": "3"}})


def test_a_kept_answer_is_free_marked_cached_and_only_its_accounts():
    cache = AnswerCache(10, 1 << 20, 60)
    kept = answer(text="hello")
    cache.keep(7, b"o", kept)
    found = cache.find(7, b"o", 60)
    assert found is not None and found is not kept  # a copy: the original answer is unchanged
    assert (found.cached, found.credits_charged, found.text) == (True, 0, "hello")
    assert (kept.cached, kept.credits_charged) == (False, 1)
    assert cache.find(8, b"o", 60) is None  # another account
    assert cache.find(7, b"other", 60) is None


def test_failures_and_blocked_pages_are_not_kept():
    cache = AnswerCache(10, 1 << 20, 60)
    cache.keep(7, b"failed", answer(error="the target answered HTTP 404"))
    blocked = answer()
    blocked.blocked = True
    cache.keep(7, b"blocked", blocked)
    assert len(cache) == 0


def test_bounded_by_entries_and_bytes_the_oldest_first():
    cache = AnswerCache(2, 1 << 20, 60)
    for n in range(3):
        cache.keep(7, b"%d" % n, answer())
    assert (cache.find(7, b"0", 60), len(cache)) == (None, 2)
    assert cache.find(7, b"2", 60) is not None

    one = len(orjson.dumps(cache.find(7, b"2", 60)))
    by_bytes = AnswerCache(100, 2 * one + one // 2, 60)
    for n in range(3):
        by_bytes.keep(7, b"%d" % n, answer())
    assert len(by_bytes) == 2 and by_bytes.bytes <= by_bytes.max_bytes
    assert by_bytes.find(7, b"0", 60) is None
    by_bytes.keep(7, b"big", answer(text="x" * 3 * one))  # larger than the whole cache
    assert by_bytes.find(7, b"big", 60) is None and len(by_bytes) == 2


def test_bounded_in_age_whatever_max_age_asks(monkeypatch):
    # the cache's clock is the test's: the answer's age is what the test says, however busy
    # the machine (on the real clock, a slow moment between keep and find aged it past 0.2 s)
    now = [1000.0]
    monkeypatch.setattr(answer_cache, "time", SimpleNamespace(monotonic=lambda: now[0]))
    cache = AnswerCache(10, 1 << 20, 0.2)
    cache.keep(7, b"o", answer())
    now[0] += 0.1
    assert cache.find(7, b"o", 0) is None  # younger than asked for: no
    assert cache.find(7, b"o", 3600) is not None
    now[0] += 0.15
    assert cache.find(7, b"o", 3600) is None and len(cache) == 0 and cache.bytes == 0


def test_off_when_any_bound_is_zero():
    for bounds in ((0, 1 << 20, 60), (10, 0, 60), (10, 1 << 20, 0)):
        cache = AnswerCache(*bounds)
        cache.keep(7, b"o", answer())
        assert not cache.enabled and len(cache) == 0


def test_keys_are_remembered_within_the_bound():
    cache = AnswerCache(2, 1 << 20, 60)
    for n in range(3):
        cache.note_key(f"hash{n}", n)
    assert cache.account_of("hash0") is None
    assert (cache.account_of("hash1"), cache.account_of("hash2")) == (1, 2)
