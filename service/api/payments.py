"""``POST /credits/buy``, ``POST /webhooks/stripe`` and the demo provider's checkout pages:
buying credits (service.billing.payments)."""

from __future__ import annotations

from twisted.web.server import Request

from service.api.routes import ApiRoutes
from service.billing.payments.demo import demo_provider
from service.billing.payments.provider import NOT_CONFIGURED
from service.core.errors import BadRequest, ServiceUnavailable
from service.core.schemas import BuyRequest, parse_json_object, validate
from service.web.http import MAX_BODY_BYTES, api_key_of, read_json_body, render_json


class PaymentRoutes(ApiRoutes):
    app = ApiRoutes.app

    @app.route("/credits/buy", methods=["POST"])
    async def buy_credits(self, request: Request) -> bytes:
        order = validate(BuyRequest, parse_json_object(read_json_body(request)))
        caller = await self.scraper.authenticate(api_key_of(request))
        if self.payments is None:
            raise ServiceUnavailable(NOT_CONFIGURED)
        url = await self.payments.start_checkout(caller.account_id, order)
        return render_json(request, {"url": url})

    @app.route("/webhooks/stripe", methods=["POST"])
    async def stripe_webhook(self, request: Request) -> bytes:
        if self.stripe_webhooks is None:
            raise ServiceUnavailable(NOT_CONFIGURED)
        content = request.content
        payload: bytes = content.read(MAX_BODY_BYTES + 1) if content is not None else b""
        if len(payload) > MAX_BODY_BYTES:
            raise BadRequest(f"the body is larger than {MAX_BODY_BYTES} bytes")
        signature = request.getHeader(b"Stripe-Signature")
        outcome = await self.stripe_webhooks.receive(
            payload, signature.decode("latin-1") if signature else None
        )
        return render_json(request, {"received": True, "outcome": outcome})

    @app.route("/payments/demo/checkout/<session_id>", methods=["GET"])
    async def demo_checkout(self, request: Request, session_id: str) -> bytes:
        return await demo_provider(self.payments).checkout_page(request, session_id)

    @app.route("/payments/demo/checkout/<session_id>/confirm", methods=["POST"])
    async def demo_confirm(self, request: Request, session_id: str) -> bytes:
        target = await demo_provider(self.payments).confirm(session_id)
        request.setResponseCode(303)
        request.setHeader(b"Location", target.encode())
        return b""
