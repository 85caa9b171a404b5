"""``GET /docs``: the API reference for people, rendered once from the OpenAPI document the
API serves (handed over where the process assembles the service), the error codes
(service.core.errors) and the running configuration's prices.

Rendered when the service starts and kept as bytes; answers carry an ``ETag`` and may be cached
for a few minutes. Its stylesheet and script are this package's own, served under
``/docs/static/``; the page obeys the dashboard's Content-Security-Policy.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from twisted.web.server import Request

from service.billing.pricing import price_list
from service.core.config import Config
from service.core.errors import (
    ERROR_CODE_HEADER,
    ERROR_CODE_HEADER_DESCRIPTION,
    ERROR_CODES,
    ERROR_STATUSES,
    FAILURE_CODES,
)
from service.core.headers import CONTENT_SECURITY_POLICY
from service.core.vocabulary import ENGINES, TIERS
from service.reference import examples as examples_module
from service.reference.fields import Fields, Kind, fields_of, kind_of, ref_name
from service.web.pages import Asset, credits_text, load_assets

MOUNT = "/docs"
TEMPLATES = Path(__file__).with_name("templates")
STATIC = Path(__file__).with_name("static")
PAGE_MAX_AGE = 300
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    where: str
    required: bool
    kind: Kind
    default: str | None
    description: str


@dataclass(frozen=True, slots=True)
class Response:
    status: str
    description: str
    kind: Kind | None
    fields: Fields | None
    headers: list[tuple[str, str]]


@dataclass(slots=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str
    secured: bool
    parameters: list[Parameter] = field(default_factory=list)
    request_name: str | None = None
    request: Fields | None = None
    responses: list[Response] = field(default_factory=list)
    example: examples_module.Example | None = None

    @property
    def anchor(self) -> str:
        return anchor_of(self.method, self.path)


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: str
    statuses: str
    meaning: str


def anchor_of(method: str, path: str) -> str:
    return method + "-" + (re.sub(r"[^a-z0-9_]+", "-", path.lower()).strip("-") or "root")


def _parameter(raw: dict[str, Any]) -> Parameter:
    schema = raw.get("schema", {})
    default = json.dumps(schema["default"]) if "default" in schema else None
    kind = kind_of(schema)
    return Parameter(
        raw["name"],
        raw["in"],
        bool(raw.get("required")),
        kind,
        default,
        raw.get("description", "") or kind.description,
    )


def _header_text(name: str, raw: dict[str, Any]) -> str:
    # every error answer's X-Error-Code, described once: its codes are in the page's table
    if name == ERROR_CODE_HEADER and "$ref" in raw:
        return f"{ERROR_CODE_HEADER_DESCRIPTION} (see the table of error codes)"
    return str(raw.get("description", ""))


def _response(status: str, raw: dict[str, Any]) -> Response:
    schema = raw.get("content", {}).get("application/json", {}).get("schema")
    headers = [(name, _header_text(name, h)) for name, h in raw.get("headers", {}).items()]
    if schema is None:
        return Response(status, raw["description"], None, None, headers)
    kind = kind_of(schema)
    inline = fields_of(schema) if "$ref" not in schema and "properties" in schema else None
    return Response(status, raw["description"], kind, inline, headers)


def operations(doc: dict[str, Any], base: str) -> list[Operation]:
    schemas = doc["components"]["schemas"]
    shown = examples_module.examples(base)
    out = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            raw = item.get(method)
            if raw is None:
                continue
            op = Operation(
                method,
                path,
                raw.get("summary", ""),
                raw.get("description", ""),
                bool(raw.get("security")),
                [_parameter(p) for p in raw.get("parameters", [])],
                example=shown.get((method, path)),
            )
            body = raw.get("requestBody", {}).get("content", {}).get("application/json", {})
            if "schema" in body:
                schema = body["schema"]
                if "$ref" in schema:
                    op.request_name = ref_name(schema["$ref"])
                    schema = schemas[op.request_name]
                op.request = fields_of(schema)
            op.responses = [_response(s, r) for s, r in raw.get("responses", {}).items()]
            out.append(op)
    return out


def error_codes() -> list[ErrorCode]:
    out = []
    for code, meaning in ERROR_CODES.items():
        where = []
        if code in ERROR_STATUSES:
            where.append(str(ERROR_STATUSES[code]))
        if code in FAILURE_CODES:
            where.append("200, in a failed scrape's result")
        if code == "map_failed":
            where.append("200, in POST /map's result")
        out.append(ErrorCode(code, "; ".join(where), meaning))
    return out


def prices(config: Config) -> dict[str, Any]:
    listed = price_list(config)
    per_euro = listed["credits_per_euro"]
    return {
        **listed,
        "engines": ENGINES,
        "tiers": TIERS,
        "map_credits": config.map_credits,
        "residential_trials": config.residential_trials,
        "pack_credits": [(pack, int(pack) * per_euro) for pack in listed["packs"]],
    }


def euros_of(credits: int, per_euro: int) -> str:
    return f"{credits / per_euro:.4f}".rstrip("0").rstrip(".")


class Reference:
    """The page, rendered once, and its assets."""

    def __init__(self, config: Config, doc: dict[str, Any]) -> None:
        """``doc``: the OpenAPI document the API serves, which the page shows for people."""
        self.assets: dict[str, Asset] = load_assets(STATIC)
        env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        env.globals["static_url"] = self.static_url
        env.filters["credits"] = credits_text
        env.filters["euros"] = euros_of
        request_bodies = set()
        ops = operations(doc, config.public_url)
        for op in ops:
            if op.request_name:
                request_bodies.add(op.request_name)
        schemas = {
            name: fields_of(schema)
            for name, schema in doc["components"]["schemas"].items()
            if name not in request_bodies
        }
        descriptions = {
            name: schema.get("description", "")
            for name, schema in doc["components"]["schemas"].items()
        }
        self.body = (
            env.get_template("reference.html")
            .render(
                base=config.public_url,
                operations=ops,
                schemas=schemas,
                descriptions=descriptions,
                request_bodies=request_bodies,
                errors=error_codes(),
                prices=prices(config),
                key=examples_module.KEY,
                job_id=examples_module.JOB_ID,
                target=examples_module.TARGET,
                anchor_of=anchor_of,
            )
            .encode("utf-8")
        )
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:20] + '"'

    def static_url(self, name: str) -> str:
        return f"{MOUNT}/static/{name}?v={self.assets[name].version}"

    def page(self, request: Request) -> bytes:
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        request.setHeader(b"Content-Security-Policy", CONTENT_SECURITY_POLICY.encode())
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        request.setHeader(b"X-Frame-Options", b"DENY")
        request.setHeader(b"Referrer-Policy", b"same-origin")
        request.setHeader(b"Cache-Control", f"public, max-age={PAGE_MAX_AGE}".encode())
        request.setHeader(b"ETag", self.etag.encode())
        if self.etag.encode() in (request.getHeader(b"If-None-Match") or b""):
            request.setResponseCode(304)
            return b""
        return self.body

    def asset(self, request: Request, name: str, version: str | None) -> bytes | None:
        asset = self.assets.get(name)
        if asset is None:
            return None
        request.setHeader(b"Content-Type", asset.content_type.encode())
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        if version == asset.version:
            request.setHeader(b"Cache-Control", b"public, max-age=31536000, immutable")
        else:
            request.setHeader(b"Cache-Control", f"public, max-age={PAGE_MAX_AGE}".encode())
        return asset.body
