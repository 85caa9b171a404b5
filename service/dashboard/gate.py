"""The dashboard's door: session cookies, who is signed in, and the CSRF check of every form.

Signed-in forms carry the session's CSRF token; the log-in and sign-up forms, shown before any
session exists, carry a token signed over a cookie of their own (``sessions.FormSigner``). A form
whose token is missing or wrong raises :class:`FormRefused` before anything is changed.

A cookie is not proof enough: a sibling origin (another port of this host, or another subdomain
of its domain) can plant one, along with the matching form token it fetched itself, and so log a
victim into the attacker's account. So every form must also come from this service's own origin,
as the browser tells it in ``Origin`` (``Referer`` when a browser sends no ``Origin``): the origin
of ``SCRAPESPY_PUBLIC_URL``, or the one the request itself was made to. Behind https the cookies
take the ``__Host-`` prefix, which no other host can set.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from twisted.web.server import Request

from service.dashboard import sessions
from service.dashboard.forms import form_fields
from service.dashboard.pages import MOUNT, Pages
from service.db import Database

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"http": 80, "https": 443}
# Only a host may set a __Host- cookie for itself: Secure, Path=/ and no Domain.
HOST_PREFIX = b"__Host-"


class LoginRequired(Exception):
    pass


class FormRefused(Exception):
    pass


def client_address(request: Request, *, trust_forwarded_for: bool = False) -> str:
    """The visitor's address: the peer's, or behind a reverse proxy that the operator trusts,
    the last address of ``X-Forwarded-For`` (the one that proxy appended; earlier ones are
    the visitor's to invent)."""
    if trust_forwarded_for:
        forwarded = request.getHeader(b"X-Forwarded-For")
        if forwarded:
            last = forwarded.decode("latin-1").split(",")[-1].strip()
            if last:
                return last[:64]
    return str(getattr(request.getClientAddress(), "host", "unknown"))


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL, as a browser writes ``Origin``; None when it has none."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in DEFAULT_PORTS or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def request_origin(request: Request) -> str | None:
    """The origin the browser says the form was sent from: ``Origin``, else ``Referer``'s."""
    for name in (b"Origin", b"Referer"):
        raw = request.getHeader(name)
        if raw:
            # "null" (a sandboxed or privacy-stripped origin) is no origin: it is refused.
            return origin_of(raw[:2048].decode("latin-1"))
    return None


def own_origin(request: Request) -> str | None:
    """The origin the request was made to, from its ``Host``: what a same-origin form sends."""
    host = request.getHeader(b"Host")
    if not host:
        return None
    scheme = "https" if request.isSecure() else "http"
    return origin_of(f"{scheme}://{host[:512].decode('latin-1')}")


def args_of(request: Request) -> dict[bytes, list[bytes]]:
    """The query string's and the form body's fields (Twisted parses both into ``args``)."""
    args: dict[bytes, list[bytes]] | None = request.args  # type: ignore[assignment]
    return args or {}


def first_arg(request: Request, name: bytes, limit: int = 255) -> str:
    values = args_of(request).get(name) or [b""]
    return values[0][:limit].decode("utf-8", "replace")


def redirect(request: Request, location: str) -> bytes:
    request.setResponseCode(303)
    request.setHeader(b"Location", location.encode("utf-8"))
    request.setHeader(b"Cache-Control", b"no-store")
    return b""


class Gate:
    def __init__(
        self,
        database: Database,
        pages: Pages,
        secret: str,
        *,
        public_url: str,
        trust_forwarded_for: bool = False,
    ):
        self.database = database
        self.pages = pages
        self.signer = sessions.FormSigner(secret)
        self.public_origin = origin_of(public_url)
        self.secure_cookies = public_url.lower().startswith("https://")
        prefix = HOST_PREFIX if self.secure_cookies else b""
        self.session_cookie = prefix + sessions.SESSION_COOKIE
        self.form_cookie = prefix + sessions.FORM_COOKIE
        self.cookie_path = b"/" if self.secure_cookies else MOUNT.encode()
        self.trust_forwarded_for = trust_forwarded_for

    def address(self, request: Request) -> str:
        return client_address(request, trust_forwarded_for=self.trust_forwarded_for)

    def cookie(self, request: Request, name: bytes) -> str | None:
        raw = request.getCookie(name)
        return raw.decode("ascii", "replace") if raw else None

    def set_cookie(self, request: Request, name: bytes, value: str, max_age: int | None) -> None:
        request.addCookie(
            name,
            value.encode("ascii"),
            path=self.cookie_path,
            max_age=None if max_age is None else str(max_age).encode(),
            secure=self.secure_cookies,
            httpOnly=True,
            # Lax, not Strict: the way back from the payment provider is a cross-site link.
            sameSite=b"lax",
        )

    def check_origin(self, request: Request) -> None:
        """FormRefused unless the form was sent from this service's own pages."""
        sent_from = request_origin(request)
        if sent_from is not None and sent_from in (self.public_origin, own_origin(request)):
            return
        log.warning(
            "dashboard form refused: sent from origin %r, not from %r (SCRAPESPY_PUBLIC_URL)",
            sent_from,
            self.public_origin,
        )
        raise FormRefused()

    def session_token(self, request: Request) -> str | None:
        return self.cookie(request, self.session_cookie)

    async def session(self, request: Request) -> sessions.WebSession | None:
        token = self.session_token(request)
        if not token:
            return None
        return await self.database.run(sessions.find_session, token)

    async def signed_in(self, request: Request) -> sessions.WebSession:
        session = await self.session(request)
        if session is None:
            raise LoginRequired()
        return session

    async def signed_form(self, request: Request) -> tuple[sessions.WebSession, dict[str, str]]:
        """The session and the form's fields, once the form's CSRF token is checked."""
        session = await self.signed_in(request)
        self.check_origin(request)
        fields = form_fields(args_of(request))
        if not sessions.same_token(session.csrf_token, fields.get("csrf_token")):
            raise FormRefused()
        return session, fields

    def anonymous_fields(self, request: Request) -> dict[str, str]:
        """The fields of a log-in or sign-up form, once its signed token is checked."""
        self.check_origin(request)
        fields = form_fields(args_of(request))
        cookie = self.cookie(request, self.form_cookie)
        if not self.signer.accepts(cookie, fields.get("form_token")):
            raise FormRefused()
        return fields

    def anonymous_form(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> bytes:
        cookie = self.cookie(request, self.form_cookie)
        if not cookie or len(cookie) > sessions.MAX_TOKEN_LENGTH:
            cookie = self.signer.new_cookie()
            self.set_cookie(request, self.form_cookie, cookie, None)
        context.setdefault("error", None)
        context.setdefault("email", "")
        return self.pages.render(
            request, template, status, form_token=self.signer.token_for(cookie), **context
        )

    async def start_session(self, request: Request, account_id: int) -> None:
        token = await self.database.run(sessions.open_session, account_id)
        lifetime = int(sessions.SESSION_LIFETIME.total_seconds())
        self.set_cookie(request, self.session_cookie, token, lifetime)

    async def end_session(self, request: Request) -> None:
        token = self.cookie(request, self.session_cookie)
        await self.database.run(sessions.close_session, token)
        self.set_cookie(request, self.session_cookie, "", 0)
