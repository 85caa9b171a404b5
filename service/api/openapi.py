"""``GET /openapi.json``: built from the same pydantic models that validate the requests, and
from the types the answers are built with (service.billing.answers, service.jobs.answers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from service.billing.answers import Account, LedgerEntry, Page, PriceList, UsageRow
from service.core.answer_schemas import answer_schema
from service.core.errors import ERROR_CODE_HEADER, ERROR_CODE_HEADER_DESCRIPTION, ERROR_CODES
from service.core.schemas import BuyRequest, ScrapeRequest
from service.jobs.answers import RESULTS_LIMIT, Job, JobAccepted, JobItem, JobSummary, MapResult
from service.jobs.batches import JOBS_LIMIT, MAX_URLS
from service.jobs.crawl_rules import CrawlRules, MapRequest
from service.jobs.webhook_spec import WebhookSpec
from service.scrape import results
from service.scrape.sessions import SessionEnded, SessionList
from service.web.account import DEFAULT_LIMIT, MAX_LIMIT

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "what went wrong, for people"}},
    "additionalProperties": False,
    "description": f"Every error answer; what went wrong, for programs, is its {ERROR_CODE_HEADER} "
    "header",
}
# the header of every error answer, described once (components.headers) and referred to
ERROR_CODE_REF = "#/components/headers/ErrorCode"
_ERROR_CODE = {
    "required": True,
    "description": ERROR_CODE_HEADER_DESCRIPTION
    + " ("
    + "; ".join(f"{code}: {meaning}" for code, meaning in ERROR_CODES.items())
    + ")",
    "schema": {"enum": list(ERROR_CODES)},
}

CREDIT_HEADERS: dict[str, Any] = {
    "X-Credits-Charged": {
        "description": "credits this answer cost (credits_charged): 0 for a failure, a blocked "
        "page, a residential trial, a cached answer or an Idempotency-Key replay",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
    "X-Credits-Remaining": {
        "description": "the account's balance once this scrape was settled (for a cached "
        "answer, when it was given; for an Idempotency-Key replay, now); other scrapes' holds "
        "are not subtracted",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
}


_TIME_BOUND = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]
}

# a listing's page after the one given: the same parameter on every listing
_CURSOR: dict[str, Any] = {
    "name": "cursor",
    "in": "query",
    "description": "the next_cursor of the previous page; anything else is a 400",
    "schema": {"type": "string"},
}

LISTING_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "since",
        "in": "query",
        "description": "rows at or after this time (a date-time with an offset, or a date: "
        "midnight UTC)",
        "schema": _TIME_BOUND,
    },
    {
        "name": "until",
        "in": "query",
        "description": "rows before this time",
        "schema": _TIME_BOUND,
    },
    _CURSOR,
    {
        "name": "limit",
        "in": "query",
        "description": "rows per page",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
]


def _page_of(item: type) -> dict[str, Any]:
    """A page of a listing of ``item``s, which it refers to by their component."""
    return answer_schema(Page[item], (item,))  # type: ignore[valid-type]


def _listing(summary: str, item: type, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "security": secured,
            "parameters": LISTING_PARAMETERS,
            "responses": {
                "200": {
                    "description": "one page, newest first",
                    "content": {"application/json": {"schema": _page_of(item)}},
                },
                **_errors(400, 401, 429, 500, 503),
            },
        }
    }


def batch_request() -> dict[str, Any]:
    """A scrape request with ``urls`` in place of ``url``: the options apply to every URL."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    properties = dict(schema["properties"])
    url = properties.pop("url")
    schema["properties"] = {
        "urls": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_URLS,
            "items": url,
            "description": "each URL is scraped as POST /scrape would with the other fields",
        },
        **properties,
        "webhook": {"$ref": "#/components/schemas/Webhook"},
    }
    schema["required"] = ["urls", *(name for name in schema.get("required", []) if name != "url")]
    schema["title"] = "BatchRequest"
    return schema


def crawl_request() -> dict[str, Any]:
    """A scrape request (its options apply to every page) with the crawl's own fields."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    rules = CrawlRules.model_json_schema(ref_template="#/components/schemas/{model}")
    schema["properties"] = {
        **schema["properties"],
        **rules["properties"],
        "webhook": {"$ref": "#/components/schemas/Webhook"},
    }
    schema["title"] = "CrawlRequest"
    return schema


def webhook_schema() -> dict[str, Any]:
    """A job's ``webhook`` (service.jobs.webhook_spec): where its signed events go, and which."""
    schema: dict[str, Any] = WebhookSpec.model_json_schema()
    schema["properties"]["events"]["uniqueItems"] = True
    schema["properties"]["url"] = {
        **ScrapeRequest.model_json_schema()["properties"]["url"],
        "description": "http or https; not a private address unless the service allows those",
    }
    schema["title"] = "Webhook"
    schema["description"] = (
        "POSTs the job's events, signed under the Standard Webhooks scheme with the account's "
        "secret (on the dashboard); all four events when 'events' is left out"
    )
    return schema


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "description": "the same key with the same body within 24 hours answers what the first "
    "call answered, charging nothing more; another body is a 422",
    "schema": {"type": "string", "pattern": "^[!-~]{1,255}$"},
}


def _cursor_and_limit(most: int) -> list[dict[str, Any]]:
    return [
        _CURSOR,
        {
            "name": "limit",
            "in": "query",
            "schema": {"type": "integer", "minimum": 1, "maximum": most, "default": most},
        },
    ]


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _job_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    job_id = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "/batch": {
            "post": {
                "summary": "Scrape up to 1,000 URLs with the same options, asynchronously",
                "security": secured,
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/BatchRequest"}
                        }
                    },
                },
                "responses": {
                    "202": _json("the job is stored and queued", answer_schema(JobAccepted)),
                    **_errors(400, 401, 409, 422, 429, 500, 503),
                },
            }
        },
        "/crawl": {
            "post": {
                "summary": "Crawl a site from a URL and its sitemap, asynchronously",
                "security": secured,
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/CrawlRequest"}
                        }
                    },
                },
                "responses": {
                    "202": _json("the crawl is stored and queued", answer_schema(JobAccepted)),
                    **_errors(400, 401, 409, 422, 429, 500, 503),
                },
            }
        },
        "/map": {
            "post": {
                "summary": "A site's URLs from its sitemaps and start page, without scraping them",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/MapRequest"}}
                    },
                },
                "responses": {
                    "200": _json("the URLs found", {"$ref": "#/components/schemas/MapResult"}),
                    **_errors(400, 401, 402, 429, 500, 503),
                },
            }
        },
        "/jobs": {
            "get": {
                "summary": "The account's jobs, newest first",
                "security": secured,
                "parameters": _cursor_and_limit(JOBS_LIMIT),
                "responses": {
                    "200": _json("one page of jobs", _page_of(JobItem)),
                    **_errors(400, 401, 429, 500, 503),
                },
            }
        },
        "/jobs/{job_id}": {
            "get": {
                "summary": "A job: status, counts, credits charged, and a page of results",
                "security": secured,
                "parameters": [job_id, *_cursor_and_limit(RESULTS_LIMIT)],
                "responses": {
                    "200": _json("the job", {"$ref": "#/components/schemas/Job"}),
                    **_errors(400, 401, 404, 429, 500, 503),
                },
            },
            "delete": {
                "summary": "Cancel a job: its pending pages are not scraped",
                "security": secured,
                "parameters": [job_id],
                "responses": {
                    "200": _json(
                        "the job, cancelled (or as it was, when it had finished)",
                        {"$ref": "#/components/schemas/JobSummary"},
                    ),
                    **_errors(401, 404, 429, 500, 503),
                },
            },
        },
    }


def _session_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    session_id = {
        "name": "session_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    return {
        "/sessions": {
            "get": {
                "summary": "The account's live sessions (names, times, exit tier; no cookies)",
                "security": secured,
                "responses": {
                    "200": _json("the sessions", {"$ref": "#/components/schemas/SessionList"}),
                    **_errors(400, 401, 429, 500, 503),
                },
            }
        },
        "/sessions/{session_id}": {
            "delete": {
                "summary": "End a session: its cookies, storage and exit are forgotten",
                "security": secured,
                "parameters": [session_id],
                "responses": {
                    "200": _json("ended", {"$ref": "#/components/schemas/SessionEnded"}),
                    **_errors(401, 404, 429, 500, 503),
                },
            }
        },
    }


def _errors(*statuses: int) -> dict[str, Any]:
    meanings = {
        400: "invalid input",
        401: "missing or invalid X-API-Key",
        402: "insufficient credits, the API key's monthly cap reached, or a price over the "
        "request's max_credits; nothing scraped, "
        "nothing billed",
        403: "free residential trials used up and residential not unlocked",
        404: "no such job (or session) for this account",
        409: "the first request with this Idempotency-Key is still running (see Retry-After), "
        "or the account has as many sessions as it may (too_many_sessions)",
        422: "this Idempotency-Key was used with another body",
        429: "rate limit exceeded (scrapes or reads per key, checkouts per account; see "
        "Retry-After), or the account's jobs in flight at their limit (too_many_jobs)",
        500: "unexpected error",
        502: "the payment provider failed",
        503: "temporarily unavailable (database down, at capacity, payments not configured)",
    }
    out: dict[str, Any] = {}
    for status in statuses:
        entry: dict[str, Any] = {
            "description": meanings[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            "headers": {ERROR_CODE_HEADER: {"$ref": ERROR_CODE_REF}},
        }
        if status in (409, 429):
            entry["headers"]["Retry-After"] = {"schema": {"type": "integer", "minimum": 1}}
        out[str(status)] = entry
    return out


def _schemas(*models: type) -> dict[str, Any]:
    """Each model's schema by its name, with the models they refer to (a scrape's steps and
    cookies) beside them."""
    out: dict[str, Any] = {}
    for model in models:
        schema: dict[str, Any] = model.model_json_schema(  # type: ignore[attr-defined]
            ref_template="#/components/schemas/{model}"
        )
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def _codes(countries: Iterable[str]) -> list[str]:
    """Country codes as a request may spell them: either case."""
    return sorted({spelt for code in countries for spelt in (code, code.upper())})


def place(schemas: dict[str, Any], countries: Mapping[str, Sequence[str]]) -> None:
    """What the running configuration offers for ``location.country``, in the schemas: the
    countries its proxies are tagged with, and at which ``proxy_type`` each may be asked for
    (service.core.places.unavailable says the same to a request)."""
    offered = {code for codes in countries.values() for code in codes}
    schemas["Location"]["properties"]["country"]["anyOf"] = [
        *([{"type": "string", "enum": _codes(offered)}] if offered else []),
        {"type": "null"},
    ]
    by_tier = {**countries, "auto": sorted(offered)}
    rule = {
        "description": "location.country is one that proxy_type's tier offers (GET /pricing)",
        "anyOf": [
            {"properties": {"location": {"anyOf": [{"type": "null"}, _no_country()]}}},
            *(
                {
                    "required": ["proxy_type", "location"],
                    "properties": {
                        "proxy_type": {"const": tier},
                        "location": {
                            "type": "object",
                            "properties": {"country": {"enum": [*_codes(codes), None]}},
                        },
                    },
                }
                for tier, codes in by_tier.items()
                if codes
            ),
        ],
    }
    for name in ("ScrapeRequest", "BatchRequest", "CrawlRequest"):
        schemas[name].setdefault("allOf", []).append(rule)


def _no_country() -> dict[str, Any]:
    return {"type": "object", "properties": {"country": {"type": "null"}}}


def document(
    public_url: str,
    countries: Mapping[str, Sequence[str]] | None = None,
    max_idle_seconds: int | None = None,
) -> dict[str, Any]:
    """The OpenAPI document; with ``countries`` (``Config.countries``) it says which
    ``location.country`` each ``proxy_type`` may ask for, with ``max_idle_seconds``
    (``Config.session_max_idle_seconds``) the most ``session_idle_seconds`` may be."""
    made = _document(public_url)
    place(made["components"]["schemas"], countries or {})
    if max_idle_seconds is not None:
        idle_bounded(made["components"]["schemas"], max_idle_seconds)
    return made


def idle_bounded(schemas: dict[str, Any], most: int) -> None:
    """The operator's bound on ``session_idle_seconds`` in every request that has it."""
    for schema in schemas.values():
        idle = schema.get("properties", {}).get("session_idle_seconds")
        for branch in (idle or {}).get("anyOf", ()):
            if branch.get("type") == "integer":
                branch["maximum"] = most


def _document(public_url: str) -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"ApiKey": []}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "scrapespy", "version": "0.1.0"},
        "servers": [{"url": public_url}],
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
            "headers": {"ErrorCode": _ERROR_CODE},
            "schemas": {
                **_schemas(ScrapeRequest, BuyRequest, MapRequest),
                "CrawlRequest": crawl_request(),
                "MapResult": answer_schema(MapResult),
                "ScrapeResult": results.json_schema(),
                "Error": _ERROR,
                "Account": answer_schema(Account),
                "UsageRow": answer_schema(UsageRow),
                "LedgerEntry": answer_schema(LedgerEntry),
                "BatchRequest": batch_request(),
                "Webhook": webhook_schema(),
                "JobItem": answer_schema(JobItem),
                "JobSummary": answer_schema(JobSummary),
                "Job": answer_schema(Job, (results.ScrapeResult,)),
                "SessionList": answer_schema(SessionList),
                "SessionEnded": answer_schema(SessionEnded),
            },
        },
        "paths": {
            "/scrape": {
                "post": {
                    "summary": "Fetch one URL and return structured JSON",
                    "security": secured,
                    "parameters": [IDEMPOTENCY_KEY],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ScrapeRequest"}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "the scrape result (success may be false)",
                            "headers": CREDIT_HEADERS,
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/ScrapeResult"}
                                }
                            },
                        },
                        **_errors(400, 401, 402, 403, 409, 422, 429, 500, 503),
                    },
                }
            },
            **_job_paths(secured),
            "/account": {
                "get": {
                    "summary": "The key's account: balance, held, available, trials, rate limits",
                    "security": secured,
                    "responses": {
                        "200": {
                            "description": "the account's figures, as the ledger has them",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Account"}
                                }
                            },
                        },
                        **_errors(400, 401, 429, 500, 503),
                    },
                }
            },
            **_session_paths(secured),
            "/usage": _listing("The account's scrapes, newest first", UsageRow, secured),
            "/ledger": _listing(
                "The account's changes of balance, newest first", LedgerEntry, secured
            ),
            "/credits/buy": {
                "post": {
                    "summary": "Start a credit purchase; returns the hosted checkout URL",
                    "security": secured,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/BuyRequest"}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "checkout created",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["url"],
                                        "properties": {"url": {"type": "string"}},
                                    }
                                }
                            },
                        },
                        **_errors(400, 401, 429, 500, 502, 503),
                    },
                }
            },
            "/webhooks/stripe": {
                "post": {
                    "summary": "Stripe's payment confirmations (called by Stripe, not by users)",
                    "description": "The raw body is verified against the Stripe-Signature header "
                    "with STRIPE_WEBHOOK_SECRET (300 s tolerance). checkout.session.completed "
                    "with payment_status paid and checkout.session.async_payment_succeeded "
                    "credit the account once per session; async_payment_failed and expired mark "
                    "the payment failed; other events are acknowledged and ignored.",
                    "parameters": [
                        {
                            "name": "Stripe-Signature",
                            "in": "header",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "responses": {
                        "200": {
                            "description": "event received (replays included)",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "received": {"type": "boolean"},
                                            "outcome": {"type": "string"},
                                        },
                                    }
                                }
                            },
                        },
                        **_errors(400, 500, 503),
                    },
                }
            },
            "/pricing": {
                "get": {
                    "summary": "Public price list",
                    "responses": {
                        "200": {
                            "description": "prices",
                            "content": {"application/json": {"schema": answer_schema(PriceList)}},
                        }
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness, database and job queue check",
                    "responses": {
                        "200": {
                            "description": "healthy",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["status"],
                                        "properties": {"status": {"const": "ok"}},
                                    }
                                }
                            },
                        },
                        **_errors(503),
                    },
                }
            },
        },
    }
