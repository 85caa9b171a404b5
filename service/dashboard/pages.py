"""Rendering the dashboard: Jinja2 templates (autoescaped) and the static files of the package.

Templates and assets are read once, when the dashboard is built, never on the reactor thread
while serving. Every page forbids caching (pages show balances, and one of them a new key) and
allows no script, style or image from anywhere but this service.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    StrictUndefined,
)
from twisted.web.server import Request

from service.billing.pricing import CREDITS_PER_EURO
from service.core.headers import set_page_headers
from service.core.places import COUNTRIES
from service.core.vocabulary import TIERS
from service.dashboard.forms import ENGINE_CHOICES, FORMAT_CHOICES, TIER_CHOICES
from service.dashboard.preview import rendered_markdown
from service.web.pages import credits_text, load_assets

MOUNT = "/dashboard"
TEMPLATES = Path(__file__).with_name("templates")
STATIC = Path(__file__).with_name("static")


def country_name(code: str) -> str:
    """A country's English name, for a code of the proxies' tags (service.core.places)."""
    return COUNTRIES[code].name


def euros_text(credits: int) -> str:
    return f"{credits / CREDITS_PER_EURO:,.3f}".rstrip("0").rstrip(".") + "\u00a0EUR"


def plural_text(count: int, word: str) -> str:
    return f"{credits_text(count)} {word}{'' if count == 1 else 's'}"


def compiled_templates() -> BytecodeCache | None:
    """Jinja's cache of compiled templates in the user's own temporary directory, checked
    against each template's source: a start compiles the templates only when they changed (a
    tenth of a start's CPU otherwise). None when no such directory can be made."""
    try:
        return FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


def when_text(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


class Pages:
    def __init__(self, public_url: str = "") -> None:
        self.assets = load_assets(STATIC)
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=StrictUndefined,
            auto_reload=False,
            bytecode_cache=compiled_templates(),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals["static_url"] = self.static_url
        self.env.globals["mount"] = MOUNT
        self.env.globals["public_url"] = public_url
        self.env.globals["engine_choices"] = ENGINE_CHOICES
        self.env.globals["tier_choices"] = TIER_CHOICES
        self.env.globals["format_choices"] = FORMAT_CHOICES
        self.env.globals["tier_names"] = TIERS
        self.env.filters["credits"] = credits_text
        self.env.filters["euros"] = euros_text
        self.env.filters["when"] = when_text
        self.env.filters["plural"] = plural_text
        self.env.filters["markdown"] = rendered_markdown
        self.env.filters["country_name"] = country_name
        for path in TEMPLATES.glob("*.html"):
            self.env.get_template(path.name)

    def static_url(self, name: str) -> str:
        return f"{MOUNT}/static/{name}?v={self.assets[name].version}"

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> bytes:
        request.setResponseCode(status)
        set_page_headers(request)
        context.setdefault("session", None)
        context.setdefault("section", "")
        return self.env.get_template(template).render(**context).encode("utf-8")
