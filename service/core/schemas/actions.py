"""A scrape's ``wait_for`` and ``actions``: the browser steps of a js request."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    ConfigDict,
    Field,
    model_validator,
)

from service.core.schemas.common import (
    MAX_KEY_LENGTH,
    MAX_SCRIPT_LENGTH,
    MAX_SCROLL_PX,
    MAX_TEXT_LENGTH,
    Milliseconds,
    Selector,
    Whole,
    _Strict,
)


class WaitFor(_Strict):
    """After the page loaded: until ``selector`` is visible, or ``ms`` milliseconds."""

    # documents _exactly_one: one of the two, the other absent or null
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["selector"],
                    "properties": {"selector": {"type": "string"}, "ms": {"type": "null"}},
                },
                {
                    "required": ["ms"],
                    "properties": {"ms": {"type": "integer"}, "selector": {"type": "null"}},
                },
            ]
        }
    )

    selector: Selector | None = None
    ms: Milliseconds | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> WaitFor:
        if (self.selector is None) == (self.ms is None):
            raise ValueError("give exactly one of 'selector' and 'ms'")
        return self


class WaitStep(_Strict):
    type: Literal["wait"]
    ms: Milliseconds


class WaitForStep(_Strict):
    type: Literal["wait_for"]
    selector: Selector


class ClickStep(_Strict):
    type: Literal["click"]
    selector: Selector
    all: Annotated[bool, Field(description="click every match, not only the first")] = False


class TypeStep(_Strict):
    type: Literal["type"]
    selector: Selector
    text: Annotated[str, Field(max_length=MAX_TEXT_LENGTH)]


class PressStep(_Strict):
    type: Literal["press"]
    key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_KEY_LENGTH,
            description='a key as the browser names it: "Enter", "Tab", "ArrowDown", "a", '
            '"Control+A"',
        ),
    ]


class ScrollStep(_Strict):
    """``direction`` with ``amount``, or ``to``."""

    # documents _one_way
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["direction", "amount"],
                    "properties": {
                        "direction": {"type": "string"},
                        "amount": {"type": "integer"},
                        "to": {"type": "null"},
                    },
                },
                {
                    "required": ["to"],
                    "properties": {
                        "to": {"type": "string"},
                        "direction": {"type": "null"},
                        "amount": {"type": "null"},
                    },
                },
            ]
        }
    )

    type: Literal["scroll"]
    direction: Literal["down", "up"] | None = None
    amount: (
        Annotated[int, Field(ge=1, le=MAX_SCROLL_PX, description="CSS pixels"), Whole] | None
    ) = None
    to: Literal["bottom"] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> ScrollStep:
        if self.to is not None:
            if self.direction is not None or self.amount is not None:
                raise ValueError("give either 'to' or 'direction' with 'amount', not both")
        elif self.direction is None or self.amount is None:
            raise ValueError("give 'direction' with 'amount' (pixels), or 'to': \"bottom\"")
        return self


class ScreenshotStep(_Strict):
    type: Literal["screenshot"]
    full_page: bool = False


class EvaluateStep(_Strict):
    type: Literal["evaluate"]
    script: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_SCRIPT_LENGTH,
            description="JavaScript run in the page; its JSON-serialisable value (size-capped) "
            "goes to action_results",
        ),
    ]


Action = Annotated[
    WaitStep
    | WaitForStep
    | ClickStep
    | TypeStep
    | PressStep
    | ScrollStep
    | ScreenshotStep
    | EvaluateStep,
    Field(discriminator="type"),
]
ACTION_TYPES: tuple[str, ...] = tuple(
    get_args(step.model_fields["type"].annotation)[0] for step in get_args(get_args(Action)[0])
)
