"""The commands of ``scrapespy`` that are clients of a running service: ``scrape`` and ``mcp``.

Both go through the Python client of clients/python (the ``scrapespy`` package), imported here
only, so the service's other commands never need it. Neither prints a traceback: what went wrong
is one line on stderr, with the API's code (an error answer's ``X-Error-Code`` header, which the
client's exceptions carry as ``error_code``; a failed result's ``error_code``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MISSING_CLIENT = (
    "this command needs the Python client and its MCP extra: "
    "pip install './clients/python[mcp]' (make setup installs both)"
)


def _fail(message: str, status: int = 1) -> int:
    print(f"scrapespy: {message}", file=sys.stderr)
    return status


def _selectors(given: list[str]) -> dict[str, str] | None:
    selectors: dict[str, str] = {}
    for one in given:
        name, sep, css = one.partition("=")
        if not sep or not name.strip() or not css.strip():
            raise ValueError(f"--select takes NAME=CSS, not {one!r}")
        selectors[name.strip()] = css.strip()
    return selectors or None


def _api_error(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    code = getattr(exc, "error_code", None)
    return f"{message} (error_code: {code})" if code else str(message)


def scrape(args: argparse.Namespace) -> int:
    """``scrapespy scrape URL``: the client reads SCRAPESPY_API_KEY and SCRAPESPY_URL (they are
    the caller's settings, not the service's: service.core.config does not know them)."""
    try:
        import httpx
        from scrapespy import ConnectionFailed, Scrapespy, ScrapespyError
        from scrapespy._base import settings
    except ImportError:
        return _fail(MISSING_CLIENT, 2)
    try:
        _, base_url = settings(None, None)
    except ScrapespyError:
        return _fail(
            "SCRAPESPY_API_KEY is not set: export an API key of your account (spy_...; the "
            "dashboard's API keys page, or `scrapespy keys create EMAIL` on the server)",
            2,
        )
    try:
        selectors = _selectors(args.select)
    except ValueError as exc:
        return _fail(str(exc), 2)

    options: dict[str, Any] = {"formats": ["markdown"]}
    for name, value in (
        ("engine", args.engine),
        ("proxy_type", args.proxy),
        ("selectors", selectors),
        ("timeout", args.timeout),
    ):
        if value is not None:
            options[name] = value
    if args.main:
        options["only_main_content"] = True
    try:
        with Scrapespy() as client:
            result = client.scrape(args.url, **options)
    except ConnectionFailed as exc:
        return _fail(f"could not reach the service at {base_url} (SCRAPESPY_URL): {exc.message}")
    except ScrapespyError as exc:
        return _fail(_api_error(exc))
    except httpx.HTTPError as exc:
        return _fail(f"could not reach the service at {base_url} (SCRAPESPY_URL): {exc}")

    answer: dict[str, Any] = result.model_dump(mode="json", exclude_unset=True)
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False, indent=2))
    if answer.get("error_code") or not answer.get("success"):
        why = answer.get("error") or "the scrape did not succeed"
        return _fail(f"{why} (error_code: {answer.get('error_code')})")
    if args.format == "markdown":
        if selectors:
            for name, values in (answer.get("extracted") or {}).items():
                for value in values if isinstance(values, list) else [values]:
                    print(f"{name}: {value}")
        else:
            print(answer.get("markdown") or "")
    return 0


def serve_mcp() -> int:
    try:
        from scrapespy.mcp import main
    except ImportError:
        return _fail(MISSING_CLIENT, 2)
    return main()
