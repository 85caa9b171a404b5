"""Sessions: a caller's named cookies, browser storage and proxy exit, carried across scrapes.

``"session": "<name>"`` on ``POST /scrape`` names a session of the calling account. Before the
scrape its state is read (or a new one begun) in the database, so every instance sees it; the
static engine gets its cookies in the order's own jar (service.scrape.engine), the js engine in
its fresh browser context as Playwright's ``storage_state`` (cookies and localStorage,
service.scrape.browser_request), and the proxy pool prefers its exit (middlewares.proxy_pool),
so one session goes out through one proxy of its tier until that proxy dies. After the scrape
the state is written back with the exit used: the next call of the session starts from it.

Isolation stays what it is without sessions: each scrape still has its own jar and its own
browser context, only seeded from the session and read back into it. A session is found by
(account, name) and listed or ended by (account, id); ids are random, so another account can
neither use, see nor guess one.

Concurrent calls in one session are not serialized: each starts from the state stored when it
began and the last one to finish writes its state (last writer wins). An ended (or expired)
session that a call in flight used is not brought back by that call.

The account's bound (``SCRAPESPY_SESSIONS_PER_ACCOUNT``) is kept atomically: a call that begins
a session counts the account's live ones and writes the new one's row (empty, until its scrape
writes its state) in one transaction, which holds the account's lock for sessions (SQLite's
write lock, taken at ``BEGIN IMMEDIATE``; a transaction-level advisory lock on PostgreSQL). When
each call counted and only its save wrote the row, 100 calls at once with new names left 88
live sessions where the bound was 20. A call that fails before its scrape runs (402, 503)
lets its new row go (:func:`release_session`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.cookiejar import Cookie
from typing import Annotated, Any

import orjson
from pydantic import ConfigDict, Field, with_config
from sqlalchemy import Connection, delete, func, select, text, update
from sqlalchemy.exc import IntegrityError
from typing_extensions import TypedDict

from service.billing import keys
from service.billing.answers import Time
from service.core.errors import ApiError, Unauthorized
from service.core.vocabulary import TIERS
from service.db.tables import scrape_sessions
from service.db.times import as_utc, timestamp

EMPTY_STORAGE: dict[str, Any] = {"cookies": [], "origins": []}
# PostgreSQL's advisory lock of an account's sessions: (this, account id), a key space of its own
SESSIONS_LOCK = 0x5E55
_SAME_SITE = {"lax": "Lax", "strict": "Strict", "none": "None"}

_CLOSED = ConfigDict(extra="forbid")


@with_config(_CLOSED)
class SessionItem(TypedDict):
    """One session of ``GET /sessions``: never its cookies or storage."""

    id: Annotated[str, Field(description="random; DELETE /sessions/{id} ends it")]
    name: Annotated[str, Field(description='the name the calls give in "session"')]
    created_at: Time
    last_used_at: Time
    expires_at: Time  # when it ends unless a call uses it first
    exit_tier: Annotated[
        str,
        Field(
            description="the proxy tier of its exit (the same proxy for its calls), none "
            "while its calls went direct",
            json_schema_extra={"enum": list(TIERS)},
        ),
    ]


@with_config(_CLOSED)
class SessionList(TypedDict):
    items: list[SessionItem]


@with_config(_CLOSED)
class SessionEnded(TypedDict):
    id: str
    ended: bool


class TooManySessions(ApiError):
    status = 409
    code = "too_many_sessions"


@dataclass(eq=False)
class SessionState:
    """One session during one scrape: what it starts from, and what the scrape leaves in it."""

    id: str
    account_id: int
    name: str
    idle_seconds: int
    storage: dict[str, Any]  # Playwright's storage_state: {"cookies": [...], "origins": [...]}
    exit_before: str | None  # the proxy ("<tier>/<n>") the session went out through so far
    new: bool  # begun by this call: no state stored yet
    reserved: bool = False  # its row was written when it was begun (a bounded call's)
    exit: str | None = field(init=False)
    rendered: bool = False  # the browser wrote ``storage`` back (the js engine answered)

    def __post_init__(self) -> None:
        self.exit = self.exit_before

    @property
    def exit_changed(self) -> bool:
        """The session's proxy died and another of its pool carried this scrape."""
        return self.exit_before is not None and self.exit != self.exit_before

    def answer(self) -> dict[str, Any]:
        """The result's ``session``."""
        return {"id": self.id, "exit_changed": self.exit_changed}

    @property
    def identity(self) -> dict[str, Any] | None:  # what its js calls present (browser.identity)
        return self.storage.get("identity")

    def browser_state(self) -> dict[str, Any]:
        """What a fresh browser context starts from (Playwright's ``storage_state``)."""
        return {
            "cookies": [dict(cookie) for cookie in self.storage.get("cookies", ())],
            "origins": [dict(origin) for origin in self.storage.get("origins", ())],
        }

    def jar_cookies(self) -> list[Cookie]:
        """The session's cookies for the static engine's jar."""
        return [jar_cookie(cookie) for cookie in self.storage.get("cookies", ())]

    def keep_jar(self, cookies: list[Cookie]) -> None:
        """A static scrape's jar, read back: its cookies replace the session's (its
        localStorage, which only the browser touches, stays)."""
        now = time.time()
        self.storage = {
            "cookies": [browser_cookie(c) for c in cookies if not c.is_expired(int(now))],
            "origins": list(self.storage.get("origins", ())),
            "identity": self.identity,
        }

    def keep_browser(self, state: dict[str, Any]) -> None:
        self.storage = {  # what the page left, and the identity it was rendered with
            "cookies": list(state.get("cookies", ())),
            "origins": list(state.get("origins", ())),
            "identity": state.get("identity", self.identity),
        }
        self.rendered = True


def jar_cookie(cookie: dict[str, Any]) -> Cookie:
    """A Playwright cookie as http.cookiejar keeps it: a domain with a leading dot is a domain
    cookie, one without is the host's alone; ``expires`` -1 is a cookie of the session."""
    domain = str(cookie["domain"])
    expires = cookie.get("expires", -1)
    rest: dict[str, str] = {}
    if cookie.get("httpOnly"):
        rest["HttpOnly"] = ""
    if cookie.get("sameSite"):
        rest["SameSite"] = str(cookie["sameSite"])
    return Cookie(
        version=0,
        name=str(cookie["name"]),
        value=str(cookie["value"]),
        port=None,
        port_specified=False,
        domain=domain,
        domain_specified=domain.startswith("."),
        domain_initial_dot=domain.startswith("."),
        path=str(cookie.get("path") or "/"),
        path_specified=True,
        secure=bool(cookie.get("secure")),
        expires=None if expires is None or expires < 0 else int(expires),
        discard=expires is None or expires < 0,
        comment=None,
        comment_url=None,
        rest=rest,
    )


def browser_cookie(cookie: Cookie) -> dict[str, Any]:
    """An http.cookiejar cookie as Playwright's ``storage_state`` holds one."""
    same_site = cookie.get_nonstandard_attr("SameSite") or "Lax"
    return {
        "name": cookie.name,
        "value": cookie.value or "",
        "domain": cookie.domain,
        "path": cookie.path or "/",
        "expires": float(cookie.expires) if cookie.expires is not None else -1,
        "httpOnly": cookie.has_nonstandard_attr("HttpOnly"),
        "secure": bool(cookie.secure),
        "sameSite": _SAME_SITE.get(str(same_site).lower(), "Lax"),
    }


# --- The table ---------------------------------------------------------------------------------


def open_session(
    conn: Connection,
    account_id: int,
    name: str,
    idle_seconds: int | None,
    *,
    default_idle: int,
    limit: int | None,
    now: datetime | None = None,
) -> SessionState:
    """The account's live session ``name``, or a new one; a 409 when the account has ``limit``
    live ones already. Expired sessions of the account go first. Within a ``limit`` the new
    one's row is written at once, under the account's lock (the module's docstring); without
    one (a job's page) its first save writes it."""
    now = now or datetime.now(UTC)
    t = scrape_sessions
    if limit is not None and conn.dialect.name == "postgresql":
        # SQLite's transactions begin with its write lock (BEGIN IMMEDIATE): one at a time
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:lock, :account)"),
            {"lock": SESSIONS_LOCK, "account": account_id},
        )
    conn.execute(delete(t).where(t.c.account_id == account_id, t.c.expires_at <= now))
    row = conn.execute(
        select(t.c.id, t.c.state, t.c.exit, t.c.idle_seconds).where(
            t.c.account_id == account_id, t.c.name == name
        )
    ).first()
    if row is not None:
        return SessionState(
            id=row.id,
            account_id=account_id,
            name=name,
            idle_seconds=idle_seconds or int(row.idle_seconds),
            storage=orjson.loads(row.state),
            exit_before=row.exit,
            new=False,
        )
    state = SessionState(
        id="ses_" + secrets.token_urlsafe(18),
        account_id=account_id,
        name=name,
        idle_seconds=idle_seconds or default_idle,
        storage=dict(EMPTY_STORAGE),
        exit_before=None,
        new=True,
    )
    if limit is None:
        return state
    live = conn.execute(
        select(func.count()).select_from(t).where(t.c.account_id == account_id)
    ).scalar_one()
    if live >= limit:
        raise TooManySessions(
            f"the account has {limit} live sessions, the most it may have; end one "
            "(DELETE /sessions/{id}) or wait for one to expire"
        )
    conn.execute(
        t.insert().values(
            id=state.id,
            account_id=account_id,
            name=name,
            state=orjson.dumps(EMPTY_STORAGE).decode(),
            exit=None,
            idle_seconds=state.idle_seconds,
            created_at=now,
            last_used_at=now,
            expires_at=now + timedelta(seconds=state.idle_seconds),
        )
    )
    state.reserved = True
    return state


def release_session(conn: Connection, state: SessionState) -> None:
    """A new session's row, written when its call began, let go: the call failed before its
    scrape ran (nothing was stored in it)."""
    if state.reserved:
        t = scrape_sessions
        conn.execute(delete(t).where(t.c.id == state.id, t.c.last_used_at == t.c.created_at))


def open_for_key(
    conn: Connection,
    key_hash: str,
    name: str,
    idle_seconds: int | None,
    *,
    default_idle: int,
    limit: int | None,
) -> SessionState:
    """:func:`open_session` for the account of the key of ``key_hash``, in the lookup's
    transaction: a 401 for an unknown key. ``limit`` None: no bound (a job's page, whose job
    was checked against it when it was made)."""
    caller = keys.caller_by_hash(conn, key_hash)
    if caller is None:
        raise Unauthorized()
    return open_session(
        conn,
        caller.account_id,
        name,
        idle_seconds,
        default_idle=default_idle,
        limit=limit,
    )


def stored_state(state: SessionState, max_bytes: int) -> bytes | None:
    """The session's state as stored: whole, or its cookies only when it is over
    ``max_bytes``, or None (keep what was stored) when even those are."""
    whole = orjson.dumps(state.storage)
    if len(whole) <= max_bytes:
        return whole
    cookies = orjson.dumps({**state.storage, "origins": []})  # its identity stays too
    return cookies if len(cookies) <= max_bytes else None


def save_session(
    conn: Connection, state: SessionState, max_bytes: int, now: datetime | None = None
) -> None:
    """Write back what the scrape left in the session, and push its expiry on."""
    now = now or datetime.now(UTC)
    t = scrape_sessions
    values: dict[str, Any] = {
        "exit": state.exit,
        "idle_seconds": state.idle_seconds,
        "last_used_at": now,
        "expires_at": now + timedelta(seconds=state.idle_seconds),
    }
    stored = stored_state(state, max_bytes)
    if stored is not None:
        values["state"] = stored.decode()
    if not state.new or state.reserved:
        # ended or expired meanwhile: the scrape does not bring it back
        conn.execute(update(t).where(t.c.id == state.id).values(**values))
        return
    try:
        with conn.begin_nested():
            conn.execute(
                t.insert().values(
                    id=state.id,
                    account_id=state.account_id,
                    name=state.name,
                    created_at=now,
                    **{"state": orjson.dumps(EMPTY_STORAGE).decode(), **values},
                )
            )
    except IntegrityError:  # a concurrent first call of the same name made it: last one wins
        conn.execute(
            update(t)
            .where(t.c.account_id == state.account_id, t.c.name == state.name)
            .values(**values)
        )


def list_sessions(
    conn: Connection, account_id: int, now: datetime | None = None
) -> list[SessionItem]:
    """``GET /sessions``: the account's live sessions, newest use first; never their cookies."""
    now = now or datetime.now(UTC)
    t = scrape_sessions
    rows = conn.execute(
        select(t.c.id, t.c.name, t.c.exit, t.c.created_at, t.c.last_used_at, t.c.expires_at)
        .where(t.c.account_id == account_id, t.c.expires_at > now)
        .order_by(t.c.last_used_at.desc(), t.c.id)
    ).all()
    return [
        {
            "id": row.id,
            "name": row.name,
            "created_at": timestamp(as_utc(row.created_at)),
            "last_used_at": timestamp(as_utc(row.last_used_at)),
            "expires_at": timestamp(as_utc(row.expires_at)),
            "exit_tier": row.exit.partition("/")[0] if row.exit else "none",
        }
        for row in rows
    ]


def end_session(conn: Connection, account_id: int, session_id: str) -> bool:
    """``DELETE /sessions/{id}``: whether the account had it (a live one)."""
    t = scrape_sessions
    ended = conn.execute(
        delete(t).where(
            t.c.account_id == account_id,
            t.c.id == session_id,
            t.c.expires_at > datetime.now(UTC),
        )
    )
    return bool(ended.rowcount)


def purge_expired(conn: Connection, now: datetime | None = None) -> int:
    """The sweeper's: expired sessions of accounts that never came back for them (an
    account's own go as it opens its next session)."""
    t = scrape_sessions
    gone = conn.execute(delete(t).where(t.c.expires_at <= (now or datetime.now(UTC))))
    return int(gone.rowcount or 0)
