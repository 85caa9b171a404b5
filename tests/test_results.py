"""The scrape result: the JSON the API answers, and the schema /openapi.json documents for it."""

from __future__ import annotations

import jsonschema_rs
import orjson

from service.api.openapi import document
from service.extraction import compile_selectors, empty_fields
from service.scrape.order import ScrapeOrder, new_result
from service.scrape.results import json_schema

SPEC_ORDER = [
    "url",
    "final_url",
    "status_code",
    "success",
    "engine",
    "elapsed_ms",
    "error",
    "blocked",
    "proxy_used",
    "title",
    "meta",
    "headings",
    "links",
    "images",
    "text",
    "extracted",
]
# every answer's own fields, after the specification's
ANSWER_ORDER = [
    *SPEC_ORDER,
    "error_code",
    "tier_used",
    "credits_charged",
    "cached",
    "timings",
    "language",
]


def a_job() -> ScrapeOrder:
    return ScrapeOrder(url="http://example.com/", selectors=compile_selectors({"h": "h1::text"}))


def test_an_answer_has_the_specifications_fields_in_its_order_and_no_block_reason():
    order = a_job()
    result = new_result(
        order, empty_fields(order.selectors), final_url=order.url, status_code=0, error="x"
    )
    answer = orjson.loads(orjson.dumps(result))
    assert list(answer) == ANSWER_ORDER
    assert answer["extracted"] == {"h": []} and answer["success"] is False
    assert answer["error_code"] == "internal"  # an error that names no code
    assert (answer["credits_charged"], answer["cached"], answer["tier_used"]) == (0, False, "none")
    assert list(answer["timings"]) == [
        "queue",
        "connect",
        "first_byte",
        "download",
        "render",
        "extraction",
    ]
    assert set(answer["timings"].values()) == {None}  # nothing happened yet


def test_a_blocked_answer_names_the_vendor_last():
    order = a_job()
    page = {**empty_fields(order.selectors), "title": "Just a moment..."}
    result = new_result(
        order,
        page,
        final_url=order.url,
        status_code=403,
        error="the target answered HTTP 403",
        tier_used="datacenter",
        block_reason="cloudflare",
    )
    answer = orjson.loads(orjson.dumps(result))
    assert list(answer) == [*ANSWER_ORDER, "block_reason"]
    assert answer["error_code"] == "blocked"
    assert (answer["blocked"], answer["proxy_used"], answer["block_reason"]) == (
        True,
        True,
        "cloudflare",
    )


def test_the_documented_schema_requires_what_every_answer_has_and_accepts_both():
    schema = document("http://127.0.0.1")["components"]["schemas"]["ScrapeResult"]
    assert schema == json_schema()
    assert schema["required"] == ANSWER_ORDER
    order = a_job()
    plain = new_result(order, empty_fields(None), final_url=order.url, status_code=200, error=None)
    blocked = new_result(
        order,
        empty_fields(None),
        final_url=order.url,
        status_code=200,
        error=None,
        block_reason="x",
    )
    validator = jsonschema_rs.Draft202012Validator(schema)
    for answer in (plain, blocked):
        assert validator.is_valid(orjson.loads(orjson.dumps(answer)))
    assert not validator.is_valid({**orjson.loads(orjson.dumps(plain)), "engine": "lynx"})
    assert not validator.is_valid({**orjson.loads(orjson.dumps(blocked)), "block_reason": None})


def test_asked_outputs_come_last_in_their_order_and_the_schema_documents_them():
    order = ScrapeOrder(url="http://example.com/", formats=frozenset({"raw_html", "markdown"}))
    result = new_result(order, empty_fields(None), final_url=order.url, status_code=200, error=None)
    result.fill({**empty_fields(None), "markdown": "# Hi"})
    answer = orjson.loads(orjson.dumps(result))
    assert list(answer) == [*ANSWER_ORDER, "markdown", "raw_html"]
    assert answer["markdown"] == "# Hi" and answer["raw_html"] is None
    schema = json_schema()
    for name in ("markdown", "html", "raw_html", "screenshot"):
        assert schema["properties"][name]["type"] == ["string", "null"]
        assert name not in schema["required"]
    assert jsonschema_rs.validator_for(schema).is_valid(answer)


def test_with_actions_the_steps_outcomes_come_after_block_reason_and_before_the_outputs():
    step = {"type": "click", "selector": "#more", "all": False}
    order = ScrapeOrder(url="http://example.com/", actions=(step,), formats=frozenset({"markdown"}))
    blocked = new_result(
        order, empty_fields(None), final_url=order.url, status_code=403, error="x", block_reason="y"
    )
    answer = orjson.loads(orjson.dumps(blocked))
    assert list(answer) == [*ANSWER_ORDER, "block_reason", "actions", "action_results", "markdown"]
    assert (answer["actions"], answer["action_results"]) == ([], [])
    answer["actions"] = [{"index": 0, "type": "click", "ok": False, "elapsed_ms": 9, "error": "e"}]
    answer["action_results"] = [
        {"index": 1, "type": "screenshot", "screenshot": "iVBO"},
        {"index": 2, "type": "evaluate", "value": {"any": ["json", 1, None]}},
    ]
    schema = json_schema()
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid(answer)
    assert "actions" not in schema["required"] and "action_results" not in schema["required"]
    assert not validator.is_valid({**answer, "actions": [{"index": 0, "type": "click"}]})
    # without actions, not a trace of them
    plain = ScrapeOrder(url="http://example.com/", formats=frozenset({"markdown"}))
    result = new_result(plain, empty_fields(None), final_url=order.url, status_code=200, error=None)
    assert list(orjson.loads(orjson.dumps(result))) == [*ANSWER_ORDER, "markdown"]
