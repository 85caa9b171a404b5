"""The dashboard's routes, mounted at ``/dashboard`` by the API's Klein app.

Routes stay thin: read the form, call one business function, render a page. Every page but the
log-in and sign-up forms needs a session; every form carries a CSRF token and a POST without the
right one changes nothing (403). Errors here render HTML pages; the API keeps its JSON errors.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import orjson
from klein import Klein
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed as WerkzeugMethodNotAllowed
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.accounts import normalise_email
from service.config import Config
from service.dashboard import account, export, identity, throttle
from service.dashboard.chart import daily_chart
from service.dashboard.forms import (
    FormError,
    buy_order,
    int_arg,
    page_number,
    scrape_body,
    shown_try_form,
)
from service.dashboard.gate import (
    FormRefused,
    Gate,
    LoginRequired,
    args_of,
    first_arg,
    redirect,
)
from service.dashboard.pages import MOUNT, Pages
from service.dashboard.sessions import WebSession
from service.dashboard.tryout import try_scrape
from service.dashboard.usage import daily_totals, ledger_page, usage_batch, usage_page
from service.db import Database
from service.errors import ApiError
from service.payments import NOT_CONFIGURED, PaymentProvider
from service.pricing import CREDITS_PER_EURO, price_list
from service.schemas import MIN_AMOUNT_EUR, PACKS
from service.scraping import Scraper

log = logging.getLogger(__name__)

CSV_BATCH = 1000
# The return page re-checks a pending payment this many times, two seconds apart.
RETURN_CHECKS = 10
FORM_REFUSED = (
    "This form could not be accepted: its security token is missing or out of date. "
    "Go back, reload the page and try again."
)


class Dashboard:
    app = Klein()
    app.url_map.merge_slashes = False  # no redirect built from the Host header (service.app)

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

    # the account ------------------------------------------------------------------------------

    @app.route("/", methods=["GET"])
    async def overview(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        summary = await self.database.run(account.overview, session.account_id)
        return self.pages.render(
            request,
            "overview.html",
            session=session,
            section="overview",
            account=summary,
            prices=self.prices,
            trials=self.config.residential_trials,
        )

    @app.route("/key", methods=["GET"])
    async def key_page(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        summary = await self.database.run(account.overview, session.account_id)
        return self.pages.render(
            request,
            "key.html",
            session=session,
            section="key",
            prefix=summary["key_prefix"],
            already_shown=False,
        )

    @app.route("/key", methods=["POST"])
    async def make_key(self, request: Request) -> bytes:
        session, _ = await self.gate.signed_form(request)
        token = self.gate.session_token(request) or ""
        await self.database.run(account.issue_key, session.account_id, token)
        # Post/Redirect/Get: reloading the page that shows the key makes no other key.
        return redirect(request, f"{MOUNT}/key/new")

    @app.route("/key/new", methods=["GET"])
    async def new_key(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        new = await self.database.run(
            account.take_new_key, session.account_id, self.gate.session_token(request)
        )
        if new is None:
            summary = await self.database.run(account.overview, session.account_id)
            return self.pages.render(
                request,
                "key.html",
                session=session,
                section="key",
                prefix=summary["key_prefix"],
                already_shown=True,
            )
        # The only response that ever holds the key, once: not cached (PAGE_HEADERS).
        return self.pages.render(
            request,
            "key_new.html",
            session=session,
            section="key",
            key=new.key,
            replaced=new.replaced,
        )

    # buying credits ---------------------------------------------------------------------------

    async def _credits_page(
        self,
        request: Request,
        session: WebSession,
        status: int = 200,
        error: str | None = None,
    ) -> bytes:
        summary = await self.database.run(account.overview, session.account_id)
        return self.pages.render(
            request,
            "credits.html",
            status,
            session=session,
            section="credits",
            account=summary,
            packs=PACKS,
            min_amount=MIN_AMOUNT_EUR,
            credits_per_euro=CREDITS_PER_EURO,
            configured=self.payments is not None,
            not_configured=NOT_CONFIGURED,
            cancelled=first_arg(request, b"cancelled") == "1",
            error=error,
        )

    @app.route("/credits", methods=["GET"])
    async def credits_page(self, request: Request) -> bytes:
        return await self._credits_page(request, await self.gate.signed_in(request))

    @app.route("/credits", methods=["POST"])
    async def buy(self, request: Request) -> bytes:
        session, fields = await self.gate.signed_form(request)
        if self.payments is None:
            return await self._credits_page(request, session, 503, NOT_CONFIGURED)
        try:
            order = buy_order(fields)
            url = await self.payments.start_checkout(session.account_id, order)
        except ApiError as error:
            for name, value in error.headers.items():  # Retry-After of a 429
                request.setHeader(name.encode(), value.encode())
            return await self._credits_page(request, session, error.status, error.message)
        return redirect(request, url)

    @app.route("/credits/return", methods=["GET"])
    async def credits_return(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        session_id = first_arg(request, b"session_id")
        check = int_arg(args_of(request), b"check", 0)
        purchase = None
        if session_id:
            purchase = await self.database.run(
                account.purchase_state, session_id, session.account_id
            )
        if purchase is None:
            return self._error_page(
                request,
                404,
                "No such purchase",
                "There is no purchase with this reference on "
                "your account. Your purchases are listed in the ledger.",
            )
        summary = await self.database.run(account.overview, session.account_id)
        refresh = None
        if purchase.status == "pending" and check < RETURN_CHECKS:
            refresh = f"{MOUNT}/credits/return?session_id={quote(session_id)}&check={check + 1}"
        return self.pages.render(
            request,
            "credits_return.html",
            session=session,
            section="credits",
            purchase=purchase,
            account=summary,
            refresh=refresh,
        )

    # usage and ledger -------------------------------------------------------------------------

    @app.route("/usage", methods=["GET"])
    async def usage(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        number = page_number(args_of(request))
        today = datetime.now(UTC).date()
        page = await self.database.run(usage_page, session.account_id, number)
        totals = await self.database.run(daily_totals, session.account_id, today)
        return self.pages.render(
            request,
            "usage.html",
            session=session,
            section="usage",
            page=page,
            chart=daily_chart(totals),
            totals=totals,
        )

    @app.route("/usage.csv", methods=["GET"])
    async def usage_csv(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        name = export.filename(session.email, datetime.now(UTC).date().isoformat())
        request.setHeader(b"Content-Type", b"text/csv; charset=utf-8")
        request.setHeader(b"Content-Disposition", f'attachment; filename="{name}"'.encode())
        request.setHeader(b"Cache-Control", b"no-store")
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        request.write(export.header())
        before: int | None = None
        while True:
            rows = await self.database.run(usage_batch, session.account_id, before, CSV_BATCH)
            if rows:
                request.write(export.csv_lines(rows))
                before = rows[-1]["id"]
            if len(rows) < CSV_BATCH:
                return b""

    @app.route("/ledger", methods=["GET"])
    async def ledger(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        number = page_number(args_of(request))
        page = await self.database.run(ledger_page, session.account_id, number)
        return self.pages.render(
            request, "ledger.html", session=session, section="ledger", page=page
        )

    # trying the API ---------------------------------------------------------------------------

    @app.route("/try", methods=["GET"])
    async def try_page(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        form = shown_try_form({"respect_robots": "on"})
        return self.pages.render(
            request,
            "try.html",
            session=session,
            section="try",
            form=form,
            outcome=None,
            error=None,
            result_json=None,
        )

    @app.route("/try", methods=["POST"])
    async def try_it(self, request: Request) -> bytes:
        session, fields = await self.gate.signed_form(request)
        form = shown_try_form(fields)
        try:
            body = scrape_body(fields)
        except FormError as error:
            return self.pages.render(
                request,
                "try.html",
                400,
                session=session,
                section="try",
                form=form,
                outcome=None,
                error=error.message,
                result_json=None,
            )
        outcome = await try_scrape(
            self.scraper,
            self.database,
            session.account_id,
            fields.get("api_key", "").strip(),
            body,
        )
        summary = await self.database.run(account.overview, session.account_id)
        return self.pages.render(
            request,
            "try.html",
            session=session,
            section="try",
            form=form,
            outcome=outcome,
            error=None,
            result_json=orjson.dumps(outcome.body, option=orjson.OPT_INDENT_2).decode(),
            account=summary,
        )

    # assets -----------------------------------------------------------------------------------

    @app.route("/static/<name>", methods=["GET"])
    def static(self, request: Request, name: str) -> bytes:
        asset = self.pages.assets.get(name)
        if asset is None:
            raise WerkzeugNotFound()
        request.setHeader(b"Content-Type", asset.content_type.encode())
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        if first_arg(request, b"v") == asset.version:
            request.setHeader(b"Cache-Control", b"public, max-age=31536000, immutable")
        else:
            request.setHeader(b"Cache-Control", b"public, max-age=300")
        return asset.body
