"""End to end: ``scrapespy scrape URL`` against the real service, scraping the local site, as a
user at a shell runs it (``SCRAPESPY_API_KEY`` and ``SCRAPESPY_URL`` in the environment).

It prints the page's markdown (or the whole result as JSON, or the selected values), is billed
as a scrape, and a failure (the target's 404, a 402, a bad option, no key, no service) is a
non-zero exit with the message, and the error_code, on stderr: never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness.service import SCRAPESPY, Accounts, ServiceProcess
from harness.site import TargetSite


def scrapespy(*args: str, key: str | None, url: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "SCRAPESPY_API_KEY"}
    env["SCRAPESPY_URL"] = url
    if key is not None:
        env["SCRAPESPY_API_KEY"] = key
    done = subprocess.run(
        [SCRAPESPY, "scrape", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def key(accounts: Accounts) -> str:
    return accounts.create(credits=1_000)[1]


def test_prints_the_markdown(service: ServiceProcess, accounts: Accounts, site: TargetSite) -> None:
    account_id, key = accounts.create(credits=10)
    done = scrapespy(site.url("/article"), key=key, url=service.base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Main heading\n")
    assert "Lead paragraph with **bold** text." in done.stdout
    assert "[Root link](" + site.url("/root") + ")" in done.stdout
    assert "script text must not appear" not in done.stdout
    assert done.stderr == ""
    assert accounts.summary(account_id)["balance"] == 9


def test_main_keeps_the_main_content(service: ServiceProcess, key: str, site: TargetSite) -> None:
    site.page(
        "/cli-main",
        "<html><head><title>Post</title></head><body>"
        '<nav><a href="/">Home</a> <a href="/about">About us</a></nav>'
        "<article><h1>The post</h1><p>"
        + "The body of the post, long enough to be the main content of the page. " * 8
        + "</p></article><footer>Copyright footer text</footer></body></html>",
    )
    whole = scrapespy(site.url("/cli-main"), key=key, url=service.base)
    main = scrapespy(site.url("/cli-main"), "--main", key=key, url=service.base)
    assert whole.returncode == main.returncode == 0, (whole.stderr, main.stderr)
    assert "Copyright footer text" in whole.stdout and "About us" in whole.stdout
    assert "Copyright footer text" not in main.stdout and "About us" not in main.stdout
    assert main.stdout.startswith("# The post\n")


def test_format_json_is_the_whole_result(
    service: ServiceProcess, key: str, site: TargetSite
) -> None:
    done = scrapespy(
        site.url("/article"),
        "--format",
        "json",
        "--engine",
        "static",
        "--proxy",
        "none",
        key=key,
        url=service.base,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["success"] is True and result["status_code"] == 200
    assert result["title"] == "The Article"
    assert result["engine"] == "static" and result["tier_used"] == "none"
    assert result["credits_charged"] == 1
    assert "# Main heading" in result["markdown"]


def test_select_prints_what_each_selector_matched(
    service: ServiceProcess, key: str, site: TargetSite
) -> None:
    done = scrapespy(
        site.url("/article"),
        "--select",
        "item=#items li::text",
        "--select",
        "lead=p.lead",
        key=key,
        url=service.base,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "item: One",
        "item: Two",
        "lead: Lead paragraph with bold text.",
    ]
    as_json = scrapespy(
        site.url("/article"),
        "--select",
        "id=#items li::attr(data-id)",
        "--format",
        "json",
        key=key,
        url=service.base,
    )
    assert json.loads(as_json.stdout)["extracted"] == {"id": ["1", "2"]}


def test_a_failed_scrape_exits_1_with_its_error(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    done = scrapespy(site.url("/status/404"), key=key, url=service.base)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == ("scrapespy: the target answered HTTP 404 (error_code: http_error)\n")
    as_json = scrapespy(site.url("/status/404"), "--format", "json", key=key, url=service.base)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error_code"] == "http_error"
    blocked = scrapespy(site.url("/private/secret"), key=key, url=service.base)
    assert blocked.returncode == 1
    assert "robots_disallowed" in blocked.stderr
    assert accounts.summary(account_id)["balance"] == 10  # none of them billed


def test_api_errors_exit_1_with_message_and_code(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, broke = accounts.create(credits=0)
    done = scrapespy(site.url("/article"), key=broke, url=service.base)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "insufficient credits: this request costs 1 credits" in done.stderr
    assert "insufficient_credits" in done.stderr

    wrong = scrapespy(site.url("/article"), key="spy_" + "x" * 40, url=service.base)
    assert wrong.returncode == 1
    assert "API key (X-API-Key header) is missing or invalid" in wrong.stderr
    assert "unauthorized" in wrong.stderr

    _, key = accounts.create(credits=10)
    invalid = scrapespy("not a url", key=key, url=service.base)
    assert invalid.returncode == 1
    assert "invalid_request" in invalid.stderr and "'url'" in invalid.stderr


def test_usage_errors_exit_2() -> None:
    missing = scrapespy("http://127.0.0.1:1/", key=None, url="http://127.0.0.1:1")
    assert missing.returncode == 2
    assert "SCRAPESPY_API_KEY is not set" in missing.stderr
    bad_select = scrapespy(
        "http://127.0.0.1:1/", "--select", "no-equals-sign", key="spy_x", url="http://127.0.0.1:1"
    )
    assert bad_select.returncode == 2
    assert "--select takes NAME=CSS, not 'no-equals-sign'" in bad_select.stderr


def test_no_service_exits_1() -> None:
    done = scrapespy("http://127.0.0.1:1/", key="spy_x", url="http://127.0.0.1:1")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "scrapespy: could not reach the service at http://127.0.0.1:1 (SCRAPESPY_URL): "
    )
    assert done.stdout == ""
