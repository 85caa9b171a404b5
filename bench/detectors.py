"""Issue 45's yardstick: what public bot detectors flag, side by side, for scrapespy's ``js``
engine, plain Playwright, patchright and an unautomated desktop Chromium (the reference).

    python -m bench.detectors [--json PATH]     (default bench/results/detectors.json)

The detector pages are harness/detectors' (BotD, fpscanner, headless-detector, rebrowser's bot
detector, our globals page), served from 127.0.0.1. Contenders, each on both Debian binaries
where it applies (the headless shell and the full /usr/bin/chromium):

- ``scrapespy``: ``scrapespy serve`` (SQLite, a funded key), ``POST /scrape`` with ``engine:
  js``, ``wait_for`` the verdict; the full Chromium through ``SCRAPESPY_CHROMIUM_PATH``;
- ``playwright``: the Python package scrapy-playwright pins, Playwright's defaults (a new context,
  ``goto``, wait for the verdict), ``--no-sandbox`` as root;
- ``patchright``: the pinned ``patchright`` (Playwright with its leaks patched), launched with
  ``executable_path=/usr/bin/chromium``, headless, and headed under the same Xvfb display;
- ``reference``: harness/detectors/reference.py, no automation.

A cell is what the detector flags beyond the reference (BotD: its ``bot`` verdict too; for the
``headers`` page, how the headers of the page, a script and an image differ from the
reference's); the JSON keeps every verdict and difference in full. Every wait is bounded;
nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.detectors import DETECTORS, DetectorSite
from harness.detectors.reference import reference_verdict, xvfb
from harness.detectors.verdicts import (
    VERDICT_SELECTOR,
    beyond,
    engine_verdicts,
    header_differences,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "detectors.json"
SHELL = "/usr/bin/chromium-headless-shell"
FULL = "/usr/bin/chromium"
PAGE_TIMEOUT = 90.0

Verdicts = dict[str, dict[str, Any] | None]


HEADER_TARGETS = {
    "page": "/detect/headers?run=",
    "script": "/assets/probe.js?run=",
    "image": "/assets/pixel.gif?run=",
}


def scrapespy(site: DetectorSite, chromium: str, run: str) -> Verdicts:
    with tempfile.TemporaryDirectory(prefix="bench-detectors-") as work:
        workdir = Path(work) / run  # the pages' runs are named after it
        workdir.mkdir()
        return engine_verdicts(site, chromium, workdir, DETECTORS)


def playwright_verdicts(site: DetectorSite, run: str, module: str, **launch: Any) -> Verdicts:
    """The verdicts a browser driven by ``module`` (playwright or patchright) reads, one fresh
    context a page, launched with ``launch``."""
    sync_api = __import__(f"{module}.sync_api", fromlist=["sync_playwright"])
    if os.geteuid() == 0:
        launch.setdefault("args", []).append("--no-sandbox")
    verdicts: Verdicts = {}
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(**launch)
        try:
            for name in DETECTORS:
                context = browser.new_context()
                try:
                    page = context.new_page()
                    page.goto(site.url(name, run), timeout=PAGE_TIMEOUT * 1000)
                    found = page.wait_for_selector(VERDICT_SELECTOR, timeout=PAGE_TIMEOUT * 1000)
                    verdicts[name] = json.loads(found.text_content() if found else "null")
                except Exception as error:  # a contender that fails a page is a row, not a crash
                    verdicts[name] = {"error": str(error)[:300], "flags": ["error"]}
                finally:
                    context.close()
        finally:
            browser.close()
    return verdicts


def contenders(display: str) -> dict[str, Callable[[DetectorSite, str], Verdicts]]:
    headed = {**os.environ, "DISPLAY": display}
    return {
        "scrapespy (headless shell)": lambda site, run: scrapespy(site, SHELL, run),
        "scrapespy (chromium)": lambda site, run: scrapespy(site, FULL, run),
        "playwright (headless shell)": lambda site, run: playwright_verdicts(
            site, run, "playwright", executable_path=SHELL
        ),
        "playwright (chromium)": lambda site, run: playwright_verdicts(
            site, run, "playwright", executable_path=FULL
        ),
        "patchright (chromium, headless)": lambda site, run: playwright_verdicts(
            site, run, "patchright", executable_path=FULL
        ),
        "patchright (chromium, headed, Xvfb)": lambda site, run: playwright_verdicts(
            site, run, "patchright", executable_path=FULL, headless=False, env=headed
        ),
    }


def header_report(site: DetectorSite, run: str) -> list[str]:
    """How the headers of ``run``'s headers page and its sub-resources differ from the
    reference's (its runs are named ``reference-...``)."""
    found = []
    for what, target in HEADER_TARGETS.items():
        sent, expected = site.headers_of(target + run), site.headers_of(target + "reference-")
        found += header_differences(what, sent, expected)
    return found


def flagged(
    name: str, verdict: dict[str, Any] | None, reference: dict[str, Any] | None
) -> list[str]:
    """What gives the contender away on ``name``'s page: its flags beyond the reference's, and on
    the headers page how its headers differ."""
    if name == "headers" and verdict is not None:
        return list(verdict.get("header_differences") or [])
    return beyond(verdict, reference)


def cell(name: str, verdict: dict[str, Any] | None, reference: dict[str, Any] | None) -> str:
    if verdict is None:
        return "no verdict"
    extra = flagged(name, verdict, reference)
    head = f"bot={str(verdict.get('bot')).lower()} " if name == "botd" else ""
    return head + (f"+{len(extra)}" if extra else "ok")


def table(rows: dict[str, Verdicts], reference: Verdicts) -> str:
    names = list(DETECTORS)
    lines = [" | ".join(["contender", *names])]
    for contender, verdicts in rows.items():
        cells = [cell(name, verdicts.get(name), reference.get(name)) for name in names]
        lines.append(" | ".join([contender, *cells]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    site = DetectorSite().start()
    started = time.time()
    rows: dict[str, Verdicts] = {}
    try:
        with xvfb() as display:
            reference = {name: reference_verdict(site, name, display) for name in DETECTORS}
            rows["reference (chromium, Xvfb, no automation)"] = reference
            for number, (contender, run) in enumerate(contenders(display).items()):
                token = f"bench{number}"
                try:
                    rows[contender] = run(site, token)
                    if rows[contender].get("headers") is not None:
                        rows[contender]["headers"]["header_differences"] = header_report(
                            site, token
                        )
                except Exception as error:  # noqa: BLE001 - e.g. patchright not installed
                    rows[contender] = {name: None for name in DETECTORS}
                    print(f"{contender}: could not run: {error}")
    finally:
        site.stop()
    report = {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "command": "python -m bench.detectors",
        "cells": "what each detector flags beyond the reference; botd also its bot verdict",
        "beyond_reference": {
            contender: {name: flagged(name, v.get(name), reference.get(name)) for name in DETECTORS}
            for contender, v in rows.items()
        },
        "verdicts": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(table(rows, reference))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
