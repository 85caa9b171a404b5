"""The dashboard's way in: its Klein app, its error pages, and signing up, in and out.

Every page but the log-in and sign-up forms needs a session; every form carries a CSRF token and
comes from this service's own origin, and a POST without both changes nothing (403). Errors here
render HTML pages; the API keeps its JSON errors. The signed-in pages are
``service.dashboard.app.Dashboard``, which adds its routes to the same Klein app.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from klein import Klein
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed as WerkzeugMethodNotAllowed
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.billing.accounts import normalise_email
from service.billing.payments.provider import PaymentProvider
from service.billing.pricing import price_list
from service.core.config import Config
from service.core.errors import ApiError
from service.dashboard import identity, throttle
from service.dashboard.gate import FormRefused, Gate, LoginRequired, redirect
from service.dashboard.pages import MOUNT, Pages
from service.db import Database
from service.scrape.scraper import Scraper

log = logging.getLogger(__name__)

FORM_REFUSED = (
    "This form could not be accepted: its security token is missing or out of date. "
    "Go back, reload the page and try again."
)


class DashboardEntry:
    """The Klein app shared by every dashboard route, its error pages, and the way in."""

    app = Klein()
    app.url_map.merge_slashes = False  # no redirect built from the Host header (service.web.http)

    def __init__(
        self,
        config: Config,
        database: Database,
        scraper: Scraper,
        payments: PaymentProvider | None = None,
    ):
        self.config = config
        self.database = database
        self.scraper = scraper
        self.payments = payments
        self.pages = Pages(config.public_url)
        self.passwords = identity.PasswordWork()
        self.gate = Gate(
            database,
            self.pages,
            config.session_secret,
            public_url=config.public_url,
            trust_forwarded_for=config.trust_forwarded_for,
        )
        self.login_per_email = throttle.Throttle(*throttle.LOGIN_PER_EMAIL)
        self.login_per_address = throttle.Throttle(*throttle.LOGIN_PER_ADDRESS)
        self.signup_per_address = throttle.Throttle(*throttle.SIGNUP_PER_ADDRESS)
        self.prices = price_list(config)

    def start(self) -> None:
        self.passwords.start()

    def stop(self) -> None:
        self.passwords.stop()

    def resource_for(self, request: Request) -> Any:
        """The dashboard's resource for a request routed to ``/dashboard`` or below it."""
        if not request.postpath:
            # "/dashboard" itself is the overview, the dashboard's "/".
            request.postpath = [b""]
        return self.app.resource()

    # errors -----------------------------------------------------------------------------------

    def _error_page(self, request: Request, status: int, title: str, message: str) -> bytes:
        return self.pages.render(request, "error.html", status, title=title, message=message)

    @app.handle_errors(LoginRequired)
    def _login_required(self, request: Request, failure: Any) -> bytes:
        return redirect(request, f"{MOUNT}/login")

    @app.handle_errors(FormRefused)
    def _form_refused(self, request: Request, failure: Any) -> bytes:
        return self._error_page(request, 403, "Form refused", FORM_REFUSED)

    @app.handle_errors(ApiError)
    def _api_error(self, request: Request, failure: Any) -> bytes:
        error: ApiError = failure.value
        return self._error_page(request, error.status, "Something went wrong", error.message)

    @app.handle_errors(WerkzeugNotFound)
    def _not_found(self, request: Request, failure: Any) -> bytes:
        return self._error_page(request, 404, "Not found", "There is no such page.")

    @app.handle_errors(WerkzeugMethodNotAllowed)
    def _bad_method(self, request: Request, failure: Any) -> bytes:
        return self._error_page(request, 405, "Not allowed", "This page does not take that.")

    @app.handle_errors(Exception)
    def _unexpected(self, request: Request, failure: Any) -> bytes:
        log.error(
            "unexpected dashboard error on %s %s",
            request.method.decode(errors="replace"),
            request.path.decode(errors="replace")[:200],
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        return self._error_page(
            request, 500, "Something went wrong", "An internal error occurred; try again later."
        )

    # signing up, in and out -------------------------------------------------------------------

    @app.route("/signup", methods=["GET"])
    async def signup_page(self, request: Request) -> bytes:
        if await self.gate.session(request) is not None:
            return redirect(request, MOUNT)
        return self.gate.anonymous_form(request, "signup.html")

    @app.route("/signup", methods=["POST"])
    async def signup(self, request: Request) -> bytes:
        fields = self.gate.anonymous_fields(request)
        email = fields.get("email", "")
        wait = throttle.admit([(self.signup_per_address, self.gate.address(request))])
        if wait > 0:
            request.setHeader(b"Retry-After", str(math.ceil(wait)).encode())
            message = "Too many sign-ups from your network. Try again later."
            return self.gate.anonymous_form(request, "signup.html", 429, error=message, email=email)
        try:
            normalised = identity.check_signup(
                email, fields.get("password", ""), fields.get("password_confirm", "")
            )
            account_id = await identity.sign_up(
                self.database,
                self.passwords,
                normalised,
                fields.get("password", ""),
                trials=self.config.residential_trials,
            )
        except identity.SignupRefused as refused:
            return self.gate.anonymous_form(
                request, "signup.html", 400, error=refused.message, email=email
            )
        await self.gate.start_session(request, account_id)
        return redirect(request, MOUNT)

    @app.route("/login", methods=["GET"])
    async def login_page(self, request: Request) -> bytes:
        if await self.gate.session(request) is not None:
            return redirect(request, MOUNT)
        return self.gate.anonymous_form(request, "login.html")

    @app.route("/login", methods=["POST"])
    async def login(self, request: Request) -> bytes:
        fields = self.gate.anonymous_fields(request)
        email = fields.get("email", "")
        wait = throttle.admit(
            [
                (self.login_per_email, normalise_email(email)),
                (self.login_per_address, self.gate.address(request)),
            ]
        )
        if wait > 0:
            seconds = math.ceil(wait)
            request.setHeader(b"Retry-After", str(seconds).encode())
            message = f"Too many log-in attempts. Wait {seconds} seconds, then try again."
            return self.gate.anonymous_form(request, "login.html", 429, error=message, email=email)
        account_id = await identity.log_in(
            self.database, self.passwords, email, fields.get("password", "")
        )
        if account_id is None:
            return self.gate.anonymous_form(
                request, "login.html", 400, error=identity.LOGIN_REFUSED, email=email
            )
        await self.gate.start_session(request, account_id)
        return redirect(request, MOUNT)

    @app.route("/logout", methods=["POST"])
    async def logout(self, request: Request) -> bytes:
        await self.gate.signed_form(request)
        await self.gate.end_session(request)
        return redirect(request, f"{MOUNT}/login")
