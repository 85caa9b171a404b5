"""How the "try it" page shows a scrape's answer: the JSON, with the bulky outputs shortened, and
the markdown rendered and the screenshot as an image beneath it.

The markdown comes from someone else's page, so it is rendered with raw HTML off: its tags are
shown as text, and markdown-it's own link check drops ``javascript:`` and the like. The page's
Content-Security-Policy forbids inline scripts and remote images besides.
"""

from __future__ import annotations

from typing import Any

import orjson
from markdown_it import MarkdownIt
from markupsafe import Markup

from service.scrape.results import ScrapeResult

# JSON fields longer than this are cut in the JSON view; the whole of them is shown below it
SHOWN_CHARS = 2000

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def rendered_markdown(text: str) -> Markup:
    return Markup(_markdown.render(text))  # noqa: S704 - raw HTML is off, see above


def shown_json(body: ScrapeResult | dict[str, str]) -> str:
    """The answer as indented JSON, the screenshot and long HTML or markdown shortened."""
    data: dict[str, Any] = orjson.loads(orjson.dumps(body))
    screenshot = data.get("screenshot")
    if isinstance(screenshot, str):
        data["screenshot"] = _png_shown(screenshot)
    for produced in data.get("action_results") or ():  # a screenshot step's PNG
        if isinstance(produced, dict) and isinstance(produced.get("screenshot"), str):
            produced["screenshot"] = _png_shown(produced["screenshot"])
    for name in ("markdown", "html", "raw_html"):
        value = data.get(name)
        if isinstance(value, str) and len(value) > SHOWN_CHARS:
            data[name] = f"{value[:SHOWN_CHARS]}… <{len(value) - SHOWN_CHARS:,} more characters>"
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()


def _png_shown(encoded: str) -> str:
    size = len(encoded) * 3 // 4 - encoded[-2:].count("=")
    return f"<a base64 PNG of {size:,} bytes, shown below>"
