"""Recent answers of ``POST /scrape`` kept for ``max_age`` (docs/api.md), in this process.

An answer is kept under its account and its request's options (every field but ``max_age``),
only when the request asked for ``max_age`` and the scrape succeeded and was not blocked; a
later request of the same account with the same options and a ``max_age`` it is young enough
for gets it back with ``cached: true`` and ``credits_charged: 0``. Nothing is shared between
accounts: another account's request misses, and scrapes (and pays) for itself.

The account of a key is known only once the database has looked the key up: the cache notes
the account of each key it has seen (:meth:`AnswerCache.note_key`), so that a miss costs
nothing more than a request without ``max_age`` once a key is known, and a hit still has its
key looked up (service.scrape.scraper). Each process has its own cache (``--workers``), bounded by
``SCRAPESPY_CACHE_MAX_ENTRIES``, ``SCRAPESPY_CACHE_MAX_BYTES`` (the answers' JSON) and
``SCRAPESPY_CACHE_MAX_AGE_SECONDS``; the oldest answers go first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import orjson

if TYPE_CHECKING:
    from service.core.schemas import ScrapeRequest
    from service.scrape.results import ScrapeResult


def options_of(request: ScrapeRequest) -> bytes:
    """What makes two requests the same for the cache: all of it but ``max_age``."""
    return orjson.dumps(request.model_dump(exclude={"max_age"}), option=orjson.OPT_SORT_KEYS)


class _Kept(NamedTuple):
    stored: float  # time.monotonic()
    size: int
    result: ScrapeResult


class AnswerCache:
    def __init__(self, max_entries: int, max_bytes: int, max_age_seconds: float) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_age = max_age_seconds
        self.bytes = 0
        # oldest first: an answer kept again moves to the end
        self._kept: OrderedDict[tuple[int, bytes], _Kept] = OrderedDict()
        self._accounts: OrderedDict[str, int] = OrderedDict()  # key hash -> account

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_bytes > 0 and self.max_age > 0

    def __len__(self) -> int:
        return len(self._kept)

    def account_of(self, key_hash: str) -> int | None:
        """The account of a key this cache has seen (:meth:`note_key`)."""
        return self._accounts.get(key_hash)

    def note_key(self, key_hash: str, account_id: int) -> None:
        """``key_hash`` is a key of ``account_id``, as the database said."""
        self._accounts.pop(key_hash, None)
        self._accounts[key_hash] = account_id
        while len(self._accounts) > max(self.max_entries, 1):
            self._accounts.popitem(last=False)

    def find(self, account_id: int, options: bytes, max_age: int) -> ScrapeResult | None:
        """The account's answer to ``options`` if one is at most ``max_age`` seconds old."""
        self._expire()
        kept = self._kept.get((account_id, options))
        if kept is None or time.monotonic() - kept.stored > max_age:
            return None
        return kept.result

    def keep(self, account_id: int, options: bytes, result: ScrapeResult) -> None:
        """Keep ``result``, the answer to ``options`` for ``account_id``, if it may be."""
        if not self.enabled or not result.success or result.blocked:
            return
        answer = replace(result, cached=True, credits_charged=0)
        size = len(orjson.dumps(answer))
        if size > self.max_bytes:
            return
        key = (account_id, options)
        old = self._kept.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self._kept[key] = _Kept(time.monotonic(), size, answer)
        self.bytes += size
        while len(self._kept) > self.max_entries or self.bytes > self.max_bytes:
            self._drop_oldest()
        self._expire()

    def _expire(self) -> None:
        oldest = time.monotonic() - self.max_age
        while self._kept and next(iter(self._kept.values())).stored < oldest:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, kept = self._kept.popitem(last=False)
        self.bytes -= kept.size
