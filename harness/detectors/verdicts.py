"""Reading a detector's verdict back from a scrape, and what it flags beyond the reference.

The rule of issue 45: BotD must say ``bot: false``; every other detector must flag nothing the
unautomated reference does not flag on the same machine (a check that fires on every Chromium
here, such as the UTC time zone or the missing "Google Chrome" brand, is the machine's, not the
automation's); the globals page must list nothing at all beyond the reference's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.service import Accounts, ServiceProcess

if TYPE_CHECKING:
    from harness.detectors.site import DetectorSite

# what a scrape sends to read a detector page: wait for the verdict, read it as text
VERDICT_SELECTOR = "pre#verdict"


def scrape_request(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "url": url,
        "engine": "js",
        "timeout": 90,
        "wait_for": {"selector": VERDICT_SELECTOR},
        "selectors": {"verdict": VERDICT_SELECTOR + "::text"},
        **fields,
    }


def scraped_verdict(answer: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict a scrape's answer holds, None when the page had none (or the scrape failed)."""
    found = (answer.get("extracted") or {}).get("verdict")
    if isinstance(found, list):
        found = found[-1] if found else None
    if not found:
        return None
    try:
        verdict = json.loads(found)
    except ValueError:
        return None
    return verdict if isinstance(verdict, dict) else None


def engine_verdicts(
    site: DetectorSite, chromium: str, workdir: Path, names: Iterable[str]
) -> dict[str, dict[str, Any] | None]:
    """Each of ``names``' verdicts as ``POST /scrape`` reads it back (``engine: js``) from a
    service of its own (SQLite in ``workdir``, a funded key) whose browser is ``chromium``; None
    where the scrape failed or the page gave none. The runs are named after ``workdir``."""
    database = f"sqlite:///{workdir / 'scrapespy.db'}"
    accounts = Accounts(database)
    key = accounts.create(credits=10_000)[1]
    service = ServiceProcess(database, workdir, env={"SCRAPESPY_CHROMIUM_PATH": chromium}).start()
    try:
        verdicts: dict[str, dict[str, Any] | None] = {}
        for name in names:
            reply = service.scrape(key, scrape_request(site.url(name, workdir.name)), timeout=180)
            verdicts[name] = scraped_verdict(reply.json) if reply.status == 200 else None
        return verdicts
    finally:
        service.stop()
        accounts.close()


def flags(verdict: dict[str, Any] | None) -> list[str]:
    return sorted(set(verdict.get("flags") or [])) if verdict else ["no verdict"]


def beyond(verdict: dict[str, Any] | None, reference: dict[str, Any] | None) -> list[str]:
    """What ``verdict`` flags that the reference does not: the automation's own give-aways."""
    if verdict is None:
        return ["no verdict"]
    known = set(reference.get("flags") or []) if reference else set()
    return sorted(set(flags(verdict)) - known)


def failures(
    name: str, verdict: dict[str, Any] | None, reference: dict[str, Any] | None
) -> list[str]:
    """Issue 45's failures of one detector's verdict, each a line a fixer can act on."""
    if verdict is None:
        return [f"{name}: no verdict read back from the page"]
    if reference is None:
        return [f"{name}: the reference gave no verdict"]
    found = [f"{name}: {flag}{_note(verdict, flag)}" for flag in beyond(verdict, reference)]
    if name == "botd" and verdict.get("bot") is not False:
        found.insert(0, f"botd: bot={verdict.get('bot')!r} botKind={verdict.get('botKind')!r}")
    return found


def _note(verdict: dict[str, Any], flag: str) -> str:
    note = (verdict.get("notes") or {}).get(flag)
    return f" ({note[:160]})" if note else ""


# headers whose value a browser sends the same whatever its locale or profile; Accept-Language
# follows the locale, Host and Referer the server and page, so only their place is compared
SAME_VALUE = (
    "connection",
    "user-agent",
    "accept",
    "accept-encoding",
    "upgrade-insecure-requests",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "sec-fetch-site",
    "sec-fetch-mode",
    "sec-fetch-dest",
    "sec-fetch-user",
)


def header_differences(
    what: str, sent: list[tuple[str, str]] | None, reference: list[tuple[str, str]] | None
) -> list[str]:
    """How the headers of one request differ from the reference's for the same request: their
    names in order, and the values of ``SAME_VALUE``; one line each."""
    if sent is None or reference is None:
        return [f"{what}: no request seen" + (" from the reference" if sent else "")]
    names = [name.lower() for name, _ in sent]
    expected = [name.lower() for name, _ in reference]
    found = []
    if names != expected:
        found.append(f"{what}: headers {names}, the reference sent {expected}")
    values, wanted = (
        dict((n.lower(), v) for n, v in sent),
        dict((n.lower(), v) for n, v in reference),
    )
    for name in SAME_VALUE:
        if values.get(name) != wanted.get(name):
            found.append(
                f"{what}: {name}: {values.get(name)!r}, the reference {wanted.get(name)!r}"
            )
    return found
