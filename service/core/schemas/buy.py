"""``POST /credits/buy``'s body: a pack or an amount in euros."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from service.core.schemas.common import _Strict

PACKS = ("10", "50", "100")
MIN_AMOUNT_EUR = 5
MAX_AMOUNT_EUR = 10_000


class BuyRequest(_Strict):
    # documents _exactly_one: one of the two, the other absent or null
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["pack"],
                    "properties": {"pack": {"type": "string"}, "amount_eur": {"type": "null"}},
                },
                {
                    "required": ["amount_eur"],
                    "properties": {"amount_eur": {"type": "number"}, "pack": {"type": "null"}},
                },
            ]
        }
    )

    pack: Literal["10", "50", "100"] | None = None
    amount_eur: Annotated[
        float | None,
        Field(
            ge=MIN_AMOUNT_EUR,
            le=MAX_AMOUNT_EUR,
            description="euros, min 5, whole cents",
            # documents _whole_cents; validators compare decimal spellings, as _whole_cents does
            json_schema_extra={"multipleOf": 0.01},
        ),
    ] = None

    @model_validator(mode="after")
    def _exactly_one(self) -> BuyRequest:
        if (self.pack is None) == (self.amount_eur is None):
            raise ValueError("exactly one of 'pack' and 'amount_eur' must be given")
        return self

    @field_validator("amount_eur")
    @classmethod
    def _whole_cents(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        cents = Decimal(repr(value)) * 100
        if cents != cents.to_integral_value():
            raise ValueError("must not have fractions of a cent")
        return value

    def amount_cents(self) -> int:
        if self.pack is not None:
            return int(self.pack) * 100
        assert self.amount_eur is not None
        return int(Decimal(repr(self.amount_eur)) * 100)
