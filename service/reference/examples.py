"""Copy-paste examples for each operation of the OpenAPI document: curl with ``X-API-Key``, and
Python with the ``scrapespy`` client (clients/python), both aimed at the service's public URL.

The placeholders are the same everywhere, so a reader (and the browser test) replaces them once:
:data:`KEY` by an API key, :data:`JOB_ID` by a job's id, :data:`SESSION_ID` by a session's id,
:data:`MONITOR_ID` by a monitor's id, and :data:`TARGET` by a site to scrape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

KEY = "spy_YOUR_API_KEY"
JOB_ID = "JOB_ID"
SESSION_ID = "SESSION_ID"
MONITOR_ID = "MONITOR_ID"
TARGET = "https://example.com"
SEARCHED = "harbour tides"  # what the search example asks the operator's backend
# called by Stripe with its signature, never by a user: no example of it
NOT_CALLED_BY_USERS = {("post", "/webhooks/stripe")}


@dataclass(frozen=True, slots=True)
class Example:
    curl: str
    python: str


def _curl(base: str, method: str, path: str, body: Any = None, *, key: bool = True) -> str:
    lines = [f"curl -sS{'' if method == 'get' else ' -X ' + method.upper()} '{base}{path}'"]
    if key:
        lines.append(f"-H 'X-API-Key: {KEY}'")
    if body is not None:
        lines.append("-H 'Content-Type: application/json'")
        lines.append(f"-d '{json.dumps(body)}'")
    return " \\\n  ".join(lines)


def _python(base: str, *lines: str) -> str:
    return "\n".join(
        [
            "from scrapespy import Scrapespy",
            "",
            f'client = Scrapespy(api_key="{KEY}", base_url="{base}")',
            *lines,
        ]
    )


def _plain_python(base: str, *lines: str) -> str:
    """For the public endpoints the client has no method for: httpx, which it installs."""
    return "\n".join(["import httpx", "", f'base_url = "{base}"', *lines])


def examples(base: str) -> dict[tuple[str, str], Example]:
    """Each operation's examples by (method, path), as in the OpenAPI document's ``paths``."""
    return {
        **_scrape_examples(base),
        **_job_examples(base),
        **_monitor_examples(base),
        **_account_examples(base),
    }


def _scrape_examples(base: str) -> dict[tuple[str, str], Example]:
    """Scraping: one page, a search and its results, a batch, a crawl, a site's map."""
    page = f"{TARGET}/"
    about = f"{TARGET}/about"
    return {
        ("post", "/scrape"): Example(
            _curl(
                base,
                "post",
                "/scrape",
                {"url": page, "formats": ["markdown"], "only_main_content": True},
            ),
            _python(
                base,
                f'result = client.scrape("{page}", formats=["markdown"], only_main_content=True)',
                "print(result.credits_charged, result.markdown)",
            ),
        ),
        ("post", "/search"): Example(
            _curl(
                base,
                "post",
                "/search",
                {"query": SEARCHED, "limit": 2, "scrape": {"formats": ["markdown"]}},
            ),
            _python(
                base,
                f'found = client.search("{SEARCHED}", limit=2, scrape={{"formats": ["markdown"]}})',
                "for item in found.web:",
                "    print(item.position, item.url, item.page.credits_charged)",
                "print(found.credits_charged)",
            ),
        ),
        ("post", "/batch"): Example(
            _curl(base, "post", "/batch", {"urls": [page, about], "formats": ["markdown"]}),
            _python(
                base,
                f'job = client.batch(["{page}", "{about}"], formats=["markdown"])',
                "status = client.wait(job.id, progress=True)",
                "for result in client.job_results(job.id):",
                "    print(result.url, result.title)",
            ),
        ),
        ("post", "/crawl"): Example(
            _curl(base, "post", "/crawl", {"url": page, "max_pages": 10, "max_depth": 2}),
            _python(
                base,
                f'job = client.crawl("{page}", max_pages=10, max_depth=2)',
                "status = client.wait(job.id, progress=True)",
                "print(status.status, status.counts, status.credits_charged)",
            ),
        ),
        ("post", "/map"): Example(
            _curl(base, "post", "/map", {"url": page}),
            _python(
                base,
                f'found = client.map("{page}")',
                "print(found.count, found.urls)",
            ),
        ),
    }


def _job_examples(base: str) -> dict[tuple[str, str], Example]:
    """The jobs and the sessions a caller made."""
    page = f"{TARGET}/"
    return {
        ("get", "/jobs"): Example(
            _curl(base, "get", "/jobs?limit=10"),
            _python(
                base,
                "for job in client.jobs(limit=10).items:",
                "    print(job.id, job.kind, job.status, job.total)",
            ),
        ),
        ("get", "/jobs/{job_id}"): Example(
            _curl(base, "get", f"/jobs/{JOB_ID}"),
            _python(
                base,
                f'status = client.job("{JOB_ID}")',
                "print(status.status, status.counts, status.credits_charged)",
            ),
        ),
        ("delete", "/jobs/{job_id}"): Example(
            _curl(base, "delete", f"/jobs/{JOB_ID}"),
            _python(base, f'status = client.cancel("{JOB_ID}")', "print(status.status)"),
        ),
        ("get", "/sessions"): Example(
            _curl(base, "get", "/sessions"),
            _python(
                base,
                f'client.scrape("{page}", session="shop")  # the first call makes it',
                "for session in client.sessions().items:",
                "    print(session.id, session.name, session.expires_at)",
            ),
        ),
        ("delete", "/sessions/{session_id}"): Example(
            _curl(base, "delete", f"/sessions/{SESSION_ID}"),
            _python(base, f'client.end_session("{SESSION_ID}")'),
        ),
    }


def _monitor_examples(base: str) -> dict[tuple[str, str], Example]:
    """A monitor made, read, paused, deleted, and its checks."""
    page = f"{TARGET}/"
    one = f"/monitors/{MONITOR_ID}"
    return {
        ("post", "/monitors"): Example(
            _curl(base, "post", "/monitors", {"url": page, "schedule": 3600, "name": "home"}),
            _python(
                base,
                f'monitor = client.create_monitor("{page}", schedule=3600, name="home")',
                "print(monitor.id, monitor.next_run_at)",
            ),
        ),
        ("get", "/monitors"): Example(
            _curl(base, "get", "/monitors?limit=10"),
            _python(
                base,
                "for monitor in client.monitors(limit=10).items:",
                "    print(monitor.id, monitor.url, monitor.status, monitor.last_check)",
            ),
        ),
        ("get", "/monitors/{monitor_id}"): Example(
            _curl(base, "get", one),
            _python(base, f'print(client.monitor("{MONITOR_ID}").next_run_at)'),
        ),
        ("patch", "/monitors/{monitor_id}"): Example(
            _curl(base, "patch", one, {"status": "paused"}),
            _python(base, f'print(client.pause_monitor("{MONITOR_ID}").status)'),
        ),
        ("delete", "/monitors/{monitor_id}"): Example(
            _curl(base, "delete", one),
            _python(base, f'client.delete_monitor("{MONITOR_ID}")'),
        ),
        ("get", "/monitors/{monitor_id}/checks"): Example(
            _curl(base, "get", f"{one}/checks"),
            _python(
                base,
                f'for check in client.monitor_checks("{MONITOR_ID}").items:',
                "    print(check.started_at, check.status, check.changed, check.credits_charged)",
            ),
        ),
    }


def _account_examples(base: str) -> dict[tuple[str, str], Example]:
    """The account, its usage, ledger and credits, and the public endpoints."""
    return {
        ("get", "/account"): Example(
            _curl(base, "get", "/account"),
            _python(
                base, "account = client.account()", "print(account.balance, account.available)"
            ),
        ),
        ("get", "/usage"): Example(
            _curl(base, "get", "/usage?limit=10"),
            _python(
                base,
                "for row in client.usage(limit=10).items:",
                "    print(row.created_at, row.url, row.credits)",
            ),
        ),
        ("get", "/ledger"): Example(
            _curl(base, "get", "/ledger?limit=10"),
            _python(
                base,
                "for entry in client.ledger(limit=10).items:",
                "    print(entry.created_at, entry.kind, entry.amount, entry.balance_after)",
            ),
        ),
        ("post", "/credits/buy"): Example(
            _curl(base, "post", "/credits/buy", {"pack": "10"}),
            _plain_python(
                base,
                "answer = httpx.post(",
                '    f"{base_url}/credits/buy",',
                f'    headers={{"X-API-Key": "{KEY}"}},',
                '    json={"pack": "10"},',
                ")",
                'print("pay at", answer.json()["url"])',
            ),
        ),
        ("get", "/pricing"): Example(
            _curl(base, "get", "/pricing", key=False),
            _plain_python(base, 'print(httpx.get(f"{base_url}/pricing").json())'),
        ),
        ("get", "/healthz"): Example(
            _curl(base, "get", "/healthz", key=False),
            _plain_python(base, 'print(httpx.get(f"{base_url}/healthz").json())'),
        ),
    }
