"""``GET /account``, ``/usage``, ``/ledger`` and ``/sessions``: what a key's owner can read of
their account (and ``DELETE /sessions/{id}``, which ends one of its sessions).

Each read is one transaction: the key lookup and the read together, on a database thread, so a
figure and the rows always come from the same state of the ledger. The listings walk the
account's rows newest first by ``(created_at, id)`` on the index of that order (migration
0006), a page at a time; the cursor is the last row's pair, so a walk sees every row that
existed when it began exactly once, however many rows are written meanwhile, and a page costs
the same at any depth. Every query filters on the key's own account.

Reads have a rate-limit bucket of their own, at the scrape limit's rate: a client polling its
balance never takes a scrape's turn, and a client walking its usage is still bounded.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, DateTime, Integer, Select, literal, select, tuple_

from service.billing import answers, keys
from service.billing.answers import MAX_LIMIT
from service.billing.ratelimit import RateLimiter, retry_after_seconds
from service.core.errors import BadRequest, NotFound, TooManyRequests, Unauthorized
from service.db import Database
from service.db.tables import UsageRow, accounts, ledger_entries, usage
from service.db.times import as_utc, timestamp
from service.scrape.sessions import SessionEnded, SessionList, end_session, list_sessions

DEFAULT_LIMIT = 100
LISTING_PARAMETERS = ("since", "until", "cursor", "limit")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)
# A "+" of an offset that was not percent-encoded arrives as a space: "...T10:00:00 02:00".
_LOST_PLUS = re.compile(r"(T\d{2}:\d{2}:\d{2}(?:\.\d+)?) (\d{2}:\d{2})$", re.ASCII)
_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2}))?",
    re.ASCII,
)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]{1,80}", re.ASCII)
# a row id of at most 18 digits: within the 64-bit integer both databases bind
_CURSOR = re.compile(r"([ul])\.(-?\d{1,20})\.(\d{1,18})", re.ASCII)

USAGE_FIELDS = (*(name for name in UsageRow._fields if name != "account_id"), "credits", "trial")
LEDGER_FIELDS = ("kind", "amount", "balance_after", "reference")


def parse_time(name: str, raw: str) -> datetime:
    """An RFC 3339 date-time (ISO 8601 with an offset) or a date (midnight UTC); else a 400
    naming ``name``. A date-time without an offset is refused: it would mean UTC to us and
    the caller's local time to the caller."""
    text = _LOST_PLUS.sub(r"\1+\2", raw)
    moment = None
    if _TIME.fullmatch(text):
        try:
            moment = datetime.fromisoformat(text.upper())
        except ValueError:  # a day or an hour that does not exist
            pass
    if moment is None:
        raise BadRequest(
            f"invalid request: {name!r}: must be a date-time with an offset "
            f"(2026-11-24T10:00:00Z) or a date (2026-11-24), not {raw[:64]!r}"
        )
    if moment.tzinfo is None:  # a date
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # an offset that takes year 1 or 9999 past the calendar's edge
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Position:
    """Where a walk stopped: the last row it returned."""

    created_at: datetime
    row_id: int


def encode_cursor(listing: str, position: Position) -> str:
    micros = (as_utc(position.created_at) - EPOCH) // _ONE_MICROSECOND
    raw = f"{listing[0]}.{micros}.{position.row_id}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(listing: str, cursor: str) -> Position:
    invalid = BadRequest(f"invalid request: 'cursor': not a next_cursor of GET /{listing}")
    if not _BASE64URL.fullmatch(cursor):
        raise invalid
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise invalid from None
    match = _CURSOR.fullmatch(raw)
    if match is None or match.group(1) != listing[0]:
        raise invalid
    try:
        moment = EPOCH + int(match.group(2)) * _ONE_MICROSECOND
    except OverflowError:
        raise invalid from None
    return Position(moment, int(match.group(3)))


@dataclass(frozen=True, slots=True)
class Listing:
    """One page's request: the time window, where to resume, and how many rows."""

    since: datetime | None = None
    until: datetime | None = None
    after: Position | None = None
    limit: int = DEFAULT_LIMIT


def _single(args: dict[bytes, list[bytes]], name: str) -> str | None:
    values = args.get(name.encode())
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest(f"invalid request: {name!r}: given more than once")
    return values[0].decode("utf-8", "replace")


def check_parameters(args: dict[bytes, list[bytes]], known: tuple[str, ...]) -> None:
    for name in args:
        text = name.decode("utf-8", "replace")
        if text not in known:
            raise BadRequest(f"unknown parameter {text[:64]!r}")


def parse_listing(listing: str, args: dict[bytes, list[bytes]]) -> Listing:
    """The query string of ``GET /usage`` or ``GET /ledger``; a 400 names the bad parameter."""
    check_parameters(args, LISTING_PARAMETERS)
    since, until, cursor, limit = (_single(args, name) for name in LISTING_PARAMETERS)
    return Listing(
        since=None if since is None else parse_time("since", since),
        until=None if until is None else parse_time("until", until),
        after=None if cursor is None else decode_cursor(listing, cursor),
        limit=_page_size(limit),
    )


def _page_size(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    # at most four digits: int() of a huge string is slow, and refused past 4300 digits
    if raw.isascii() and raw.isdigit() and len(raw) <= 4 and 1 <= int(raw) <= MAX_LIMIT:
        return int(raw)
    raise BadRequest(f"invalid request: 'limit': must be a whole number from 1 to {MAX_LIMIT}")


def _when(value: datetime) -> ColumnElement[Any]:
    return literal(value, DateTime(timezone=True))


def _page(
    conn: Connection, query: Select[Any], table: Any, listing: Listing
) -> tuple[Sequence[Any], Position | None]:
    """Rows of ``query`` (one account's) in the window, newest first, after the position."""
    created, row_id = table.c.created_at, table.c.id
    if listing.since is not None:
        query = query.where(created >= _when(listing.since))
    if listing.until is not None:
        query = query.where(created < _when(listing.until))
    if listing.after is not None:
        resume = tuple_(_when(listing.after.created_at), literal(listing.after.row_id, Integer))
        query = query.where(tuple_(created, row_id) < resume)
    rows = conn.execute(
        query.order_by(created.desc(), row_id.desc()).limit(listing.limit + 1)
    ).all()
    if len(rows) <= listing.limit:
        return rows, None
    rows = rows[: listing.limit]
    return rows, Position(rows[-1].created_at, int(rows[-1].id))


def usage_page(
    conn: Connection, account_id: int, listing: Listing
) -> tuple[list[answers.UsageRow], Position | None]:
    query = select(
        usage.c.id, usage.c.created_at, usage.c.hold_id, *(usage.c[name] for name in USAGE_FIELDS)
    ).where(usage.c.account_id == account_id)
    rows, more = _page(conn, query, usage, listing)
    return [
        {
            "id": int(row.id),
            "created_at": timestamp(row.created_at),
            "url": row.url,
            "engine": row.engine,
            "tier_requested": row.tier_requested,
            "tier_used": row.tier_used,
            "status_code": row.status_code,
            "success": row.success,
            "blocked": row.blocked,
            "error": row.error,
            "elapsed_ms": row.elapsed_ms,
            "credits": row.credits,
            "extraction_credits": row.extraction_credits,
            "trial": row.trial,
            # the ledger entry of its charge names the same hold (and a refund "refund:hold:N")
            "reference": None if row.hold_id is None else f"hold:{row.hold_id}",
        }
        for row in rows
    ], more


def ledger_page(
    conn: Connection, account_id: int, listing: Listing
) -> tuple[list[answers.LedgerEntry], Position | None]:
    query = select(
        ledger_entries.c.id,
        ledger_entries.c.created_at,
        *(ledger_entries.c[name] for name in LEDGER_FIELDS),
    ).where(ledger_entries.c.account_id == account_id)
    rows, more = _page(conn, query, ledger_entries, listing)
    return [
        {
            "id": int(row.id),
            "created_at": timestamp(row.created_at),
            "kind": row.kind,
            "amount": row.amount,
            "balance_after": row.balance_after,
            "reference": row.reference,
        }
        for row in rows
    ], more


def figures(conn: Connection, account_id: int) -> answers.Figures:
    row = conn.execute(
        select(
            accounts.c.id,
            accounts.c.email,
            accounts.c.balance,
            accounts.c.held,
            accounts.c.residential_trials_left,
            accounts.c.residential_unlocked,
        ).where(accounts.c.id == account_id)
    ).one()
    return {
        "account_id": int(row.id),
        "email": row.email,
        "balance": int(row.balance),
        "held": int(row.held),
        "available": int(row.balance - row.held),
        "residential_trials_left": int(row.residential_trials_left),
        "residential_unlocked": bool(row.residential_unlocked),
    }


def _as_caller(conn: Connection, key_hash: str, read: Any, *args: Any) -> Any:
    """``read(conn, account_id, *args)`` for the key's account, in the lookup's transaction."""
    caller = keys.caller_by_hash(conn, key_hash)
    if caller is None:
        raise Unauthorized()
    return read(conn, caller.account_id, *args)


class AccountReads:
    """The three reads, behind the key and the reads' own rate-limit bucket."""

    def __init__(self, database: Database, limiter: RateLimiter, scrape_limiter: RateLimiter):
        self.database = database
        self.limiter = limiter
        self.scrape_limiter = scrape_limiter

    async def _key_hash(self, api_key: str | None) -> str:
        if not api_key or not keys.well_formed(api_key):
            raise Unauthorized()
        key_hash = keys.hash_key(api_key)
        wait = await self.limiter.check(key_hash)
        if wait > 0:
            raise TooManyRequests(retry_after_seconds(wait))
        return key_hash

    async def account(self, api_key: str | None, args: dict[bytes, list[bytes]]) -> answers.Account:
        check_parameters(args, ())
        key_hash = await self._key_hash(api_key)
        found: answers.Figures = await self.database.run(_as_caller, key_hash, figures)
        return {
            **found,
            "rate_limits": {"scrape": _bucket(self.scrape_limiter), "reads": _bucket(self.limiter)},
        }

    async def usage(
        self, api_key: str | None, args: dict[bytes, list[bytes]]
    ) -> answers.Page[answers.UsageRow]:
        return await self._listing("usage", usage_page, api_key, args)

    async def ledger(
        self, api_key: str | None, args: dict[bytes, list[bytes]]
    ) -> answers.Page[answers.LedgerEntry]:
        return await self._listing("ledger", ledger_page, api_key, args)

    async def sessions(self, api_key: str | None, args: dict[bytes, list[bytes]]) -> SessionList:
        """``GET /sessions``: the account's live sessions (at most
        SCRAPESPY_SESSIONS_PER_ACCOUNT, so one page), never their cookies or storage."""
        check_parameters(args, ())
        key_hash = await self._key_hash(api_key)
        return {"items": await self.database.run(_as_caller, key_hash, list_sessions)}

    async def end_session(self, api_key: str | None, session_id: str) -> SessionEnded:
        """``DELETE /sessions/{id}``: a 404 unless the key's account has that live session."""
        key_hash = await self._key_hash(api_key)
        if not await self.database.run(_as_caller, key_hash, end_session, session_id[:100]):
            raise NotFound("no such session")
        return {"id": session_id, "ended": True}

    async def _listing(
        self, name: str, read: Any, api_key: str | None, args: dict[bytes, list[bytes]]
    ) -> answers.Page[Any]:
        listing = parse_listing(name, args)
        key_hash = await self._key_hash(api_key)
        rows, more = await self.database.run(_as_caller, key_hash, read, listing)
        return {"items": rows, "next_cursor": None if more is None else encode_cursor(name, more)}


def _bucket(limiter: RateLimiter) -> answers.Bucket:
    return {"per_second": limiter.rate, "burst": limiter.burst}
