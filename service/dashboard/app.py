"""The dashboard's signed-in pages, mounted at ``/dashboard`` (service.dashboard.mount).

Routes stay thin: read the form, call one business function, render a page. The Klein app, the
error pages and signing in are ``service.dashboard.entry``, the jobs pages
``service.dashboard.job_views``; these routes join the same app.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from twisted.web.server import Request
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.billing import keys
from service.billing.payments.provider import NOT_CONFIGURED
from service.billing.pricing import CREDITS_PER_EURO
from service.core.errors import ApiError
from service.core.schemas import MIN_AMOUNT_EUR, PACKS
from service.dashboard import account, export
from service.dashboard.chart import daily_chart
from service.dashboard.forms import (
    FormError,
    buy_order,
    int_arg,
    page_number,
    scrape_body,
    shown_try_form,
)
from service.dashboard.gate import args_of, first_arg, redirect
from service.dashboard.job_views import JobViews
from service.dashboard.monitor_views import MonitorViews
from service.dashboard.pages import MOUNT
from service.dashboard.preview import shown_json
from service.dashboard.sessions import WebSession
from service.dashboard.tryout import try_scrape
from service.dashboard.usage import daily_totals, ledger_page, usage_batch, usage_page
from service.jobs import webhook_store

CSV_BATCH = 1000
KEY_ID_DIGITS = 12
# The return page re-checks a pending payment this many times, two seconds apart.
RETURN_CHECKS = 10


class Dashboard(JobViews, MonitorViews):
    app = JobViews.app

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
        return await self._key_page(request, session, already_shown=False)

    async def _key_page(
        self,
        request: Request,
        session: WebSession,
        *,
        already_shown: bool = False,
        error: keys.KeyRefused | None = None,
    ) -> bytes:
        listed = await self.database.run(keys.listed, session.account_id)
        # the webhooks' signing secret: signing needs it readable, so it is shown, on this
        # page only (never in an API answer)
        webhook_secret = await self.database.run(webhook_store.secret_of, session.account_id)
        status = 200 if error is None else 404 if isinstance(error, keys.NoSuchKey) else 400
        return self.pages.render(
            request,
            "key.html",
            status,
            session=session,
            section="key",
            keys=listed,
            already_shown=already_shown,
            error=None if error is None else str(error),
            max_label=keys.KEY_LABEL_LENGTH,
            webhook_secret=webhook_secret,
        )

    @app.route("/key/webhook-secret", methods=["POST"])
    async def rotate_webhook_secret(self, request: Request) -> bytes:
        session, _ = await self.gate.signed_form(request)
        await self.database.run(webhook_store.rotate, session.account_id)
        return redirect(request, f"{MOUNT}/key#webhook-secret")

    @app.route("/key", methods=["POST"])
    async def make_key(self, request: Request) -> bytes:
        """Regenerate the key of the form's ``key_id``; without one, the account's only key
        (or its first, when it has none), as before accounts had several."""
        session, fields = await self.gate.signed_form(request)
        token = self.gate.session_token(request) or ""
        try:
            key_id = _key_id(fields)
            if key_id is None and fields.get("key_id"):
                raise keys.NoSuchKey()
            await self.database.run(account.issue_key, session.account_id, token, key_id)
        except keys.KeyRefused as error:
            return await self._key_page(request, session, error=error)
        # Post/Redirect/Get: reloading the page that shows the key makes no other key.
        return redirect(request, f"{MOUNT}/key/new")

    @app.route("/keys", methods=["POST"])
    async def add_key(self, request: Request) -> bytes:
        session, fields = await self.gate.signed_form(request)
        token = self.gate.session_token(request) or ""
        try:
            cap = keys.parse_cap(fields.get("cap", ""))
            await self.database.run(
                account.add_key, session.account_id, token, fields.get("label", ""), cap
            )
        except keys.KeyRefused as error:
            return await self._key_page(request, session, error=error)
        return redirect(request, f"{MOUNT}/key/new")

    @app.route("/key/label", methods=["POST"])
    async def relabel_key(self, request: Request) -> bytes:
        session, fields = await self.gate.signed_form(request)
        return await self._change_key(
            request, session, keys.relabel, _key_id(fields), fields.get("label", "")
        )

    @app.route("/key/cap", methods=["POST"])
    async def cap_key(self, request: Request) -> bytes:
        """Set the cap typed, or remove it (the form's "Remove cap" button, or an empty field)."""
        session, fields = await self.gate.signed_form(request)
        try:
            cap = None if fields.get("remove") else keys.parse_cap(fields.get("cap", ""))
        except keys.KeyRefused as error:
            return await self._key_page(request, session, error=error)
        return await self._change_key(request, session, keys.set_cap, _key_id(fields), cap)

    @app.route("/key/revoke", methods=["POST"])
    async def revoke_key(self, request: Request) -> bytes:
        session, fields = await self.gate.signed_form(request)
        return await self._change_key(request, session, keys.revoke, _key_id(fields))

    async def _change_key(
        self,
        request: Request,
        session: WebSession,
        change: Callable[..., None],
        key_id: int | None,
        *args: Any,
    ) -> bytes:
        """One change to one of the account's keys, then back to the keys page (PRG)."""
        try:
            if key_id is None:
                raise keys.NoSuchKey()
            await self.database.run(change, session.account_id, key_id, *args)
        except keys.KeyRefused as error:
            return await self._key_page(request, session, error=error)
        return redirect(request, f"{MOUNT}/key#key-{key_id}")

    @app.route("/key/new", methods=["GET"])
    async def new_key(self, request: Request) -> bytes:
        session = await self.gate.signed_in(request)
        new = await self.database.run(
            account.take_new_key, session.account_id, self.gate.session_token(request)
        )
        if new is None:
            return await self._key_page(request, session, already_shown=True)
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
            result_json=shown_json(outcome.body),
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


def _key_id(fields: dict[str, str]) -> int | None:
    """The ``key_id`` field of a key's form; None when it is not a key's id."""
    raw = fields.get("key_id", "").strip()
    return int(raw) if raw.isdigit() and len(raw) <= KEY_ID_DIGITS else None
