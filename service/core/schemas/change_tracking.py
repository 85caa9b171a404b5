"""``change_tracking``: what a scrape with the ``change_tracking`` format compares
(service.extraction.changes, pipelines.changes).

The published schema holds each field's own rules only. What ties it to the rest of the
request (the format asked, a way to extract for the ``json`` mode) is checked here, in Python,
with a 400 naming the field: rules across fields in the published schema left its generators
without a valid example."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import Field

from service.core.errors import BadRequest
from service.core.schemas.common import _Strict
from service.core.schemas.page_options import NO_LLM, RecordSelectors
from service.extraction.model_schema import ANY_OBJECT
from service.extraction.model_schema import InvalidSchema as InvalidModelSchema
from service.extraction.model_schema import check_schema as check_model_schema
from service.extraction.records import InvalidSchema, check_schema

MAX_TAG_LENGTH = 100
ChangeMode = Literal["git-diff", "json"]

TRACKING_NEEDS_FORMAT = "'change_tracking' needs \"change_tracking\" in 'formats'"
JSON_MODE_NEEDS_A_WAY = (
    "'change_tracking.modes': \"json\" needs 'change_tracking.selectors', "
    "'change_tracking.prompt'/'change_tracking.schema', or the request's own 'json'"
)
ONE_WAY = "'change_tracking': 'selectors' or 'prompt'/'schema', not both"


class ChangeTrackingOptions(_Strict):
    """``change_tracking``: the modes of comparison, the tag that keeps a history apart, and
    how the ``json`` mode extracts."""

    modes: Annotated[
        list[ChangeMode],
        Field(
            max_length=2,
            description="git-diff: a unified diff of the markdown and its parsed form; json: "
            "the fields extracted from both versions that differ, each {previous, current}",
        ),
    ] = Field(default_factory=list)
    tag: Annotated[
        str | None,
        Field(
            max_length=MAX_TAG_LENGTH,
            description="a history of its own: the page is compared with the previous scrape "
            "of the same URL and tag (none: the untagged history)",
        ),
    ] = None
    selectors: RecordSelectors = None
    prompt: Annotated[
        str | None,
        Field(description="json mode: what to extract, for the operator's language model"),
    ] = None
    schema_: Annotated[
        dict[str, Any] | None,
        Field(
            alias="schema",
            description="json mode: the JSON Schema the operator's language model answers",
        ),
    ] = None

    @property
    def by_model(self) -> bool:
        return self.prompt is not None or self.schema_ is not None


def check_tracking(
    options: ChangeTrackingOptions | None, formats: Collection[str], json: bool, model: bool
) -> None:
    """The rules of ``change_tracking`` across the request (its ``formats``, whether it has
    ``json`` options, whether the operator has a language ``model``), each a 400 naming its
    field."""
    if options is None:
        return
    if "change_tracking" not in formats:
        raise BadRequest(f"invalid request: {TRACKING_NEEDS_FORMAT}")
    if options.selectors is not None and options.by_model:
        raise BadRequest(f"invalid request: {ONE_WAY}")
    if options.selectors is not None:
        try:
            check_schema(options.selectors, "change_tracking.selectors")
        except InvalidSchema as exc:
            raise BadRequest(f"invalid request: {exc}") from None
    if options.by_model:
        if not model:
            raise BadRequest(
                "invalid request: 'change_tracking.prompt': "
                + NO_LLM.replace("json.prompt", "a prompt")
            )
        if options.schema_ is not None:
            try:
                check_model_schema(options.schema_)
            except InvalidModelSchema as exc:
                where = "change_tracking.schema" + (f".{exc.path}" if exc.path else "")
                raise BadRequest(f"invalid request: '{where}': {exc}") from None
    if "json" in options.modes and options.selectors is None and not options.by_model:
        if not json:
            raise BadRequest(f"invalid request: {JSON_MODE_NEEDS_A_WAY}")


def order_fields(options: ChangeTrackingOptions | None, formats: Collection[str]) -> dict[str, Any]:
    """The scrape order's change_tracking fields (service.scrape.order): its modes and tag, and
    how the json mode extracts: through its own selectors or prompt, else from what the
    request's json made (neither: no extraction)."""
    if options is None or "change_tracking" not in formats:
        return {}
    json_mode = "json" in options.modes
    model = {"prompt": options.prompt, "schema": options.schema_ or dict(ANY_OBJECT)}
    return {
        "change_modes": tuple(dict.fromkeys(options.modes)),
        "change_tag": options.tag or "",
        "change_records": options.selectors if json_mode else None,
        "change_model": model if json_mode and options.by_model else None,
    }
