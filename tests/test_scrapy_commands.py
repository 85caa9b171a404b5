"""Scrapy's own tools, run from the repository root, use the project's settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.service import ROOT
from harness.site import ARTICLE, echo_request
from tests.test_e2e_hostile_static import SilentHost

pytestmark = pytest.mark.long(minutes=2)

SCRAPY = str(Path(sys.executable).with_name("scrapy"))


def run(
    *args: str, allow_private: bool, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "1" if allow_private else "0",
        **(env or {}),
    }
    return subprocess.run(
        [SCRAPY, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_crawl_page_prints_the_api_result(site):
    done = run(
        "crawl",
        "page",
        "-a",
        f"url={site.url('/article')}",
        "-a",
        'selectors={"lead": "p.lead::text"}',
        allow_private=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["success"] is True and result["title"] == "The Article"
    assert result["extracted"] == {"lead": ["Lead paragraph with text."]}
    assert set(result) >= {"url", "final_url", "status_code", "elapsed_ms", "blocked", "links"}


def test_crawl_page_knows_the_outputs(site):
    done = run(
        "crawl",
        "page",
        "-a",
        f"url={site.url('/article')}",
        "-a",
        "formats=markdown,raw_html",
        "-a",
        "only_main_content=false",
        "-a",
        'exclude_tags=["#items", "h2"]',
        allow_private=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["success"] is True and result["raw_html"] == ARTICLE
    assert "# Main heading" in result["markdown"]
    assert "Lead paragraph with **bold** text." in result["markdown"]
    assert f"[Relative link]({site.url('/docs/page2.html')})" in result["markdown"]
    assert "First section" not in result["markdown"] and "One" not in result["text"]
    assert "html" not in result and "screenshot" not in result


def test_crawl_page_sends_the_callers_headers_cookies_and_device(site):
    site.routes["/echo"] = echo_request
    done = run(
        "crawl",
        "page",
        "-a",
        f"url={site.url('/echo')}",
        "-a",
        'selectors={"ua": "#ua::text", "greeting": "#greeting::text", "cookie": "#cookie::text"}',
        "-a",
        'headers={"X-Greeting": "from the command line"}',
        "-a",
        'cookies=[{"name": "session", "value": "cli"}]',
        "-a",
        "device=mobile",
        allow_private=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["extracted"]["greeting"] == ["from the command line"]
    assert result["extracted"]["cookie"] == ["session=cli"]
    assert "Mobile Safari" in result["extracted"]["ua"][0]


def test_crawl_page_reads_a_cookie_without_fetching_the_suffix_list(site, tmp_path):
    """tldextract's cache empty, its list's address a host that never answers: a fetch of the
    list would hang there (and be counted); the bundled list is read instead."""
    site.routes["/echo"] = echo_request
    silent = SilentHost()
    try:
        done = run(
            "crawl",
            "page",
            "-a",
            f"url={site.url('/echo')}",
            allow_private=True,
            env={
                "TLDEXTRACT_CACHE": str(tmp_path),
                "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": f"http://127.0.0.1:{silent.port}/psl.dat",
            },
        )
    finally:
        silent.close()
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["success"] is True
    assert silent.connections == 0


def test_crawl_page_refuses_what_the_api_refuses_with_its_message(site):
    before = site.count("/echo")
    done = run(
        "crawl",
        "page",
        "-a",
        f"url={site.url('/echo')}",
        "-a",
        "engine=js",
        "-a",
        'actions=[{"type": "wait", "ms": 5}, {"type": "click", "selector": "p[["}]',
        allow_private=True,
    )
    assert done.returncode != 0
    assert "'actions[1].selector': invalid CSS selector 'p[['" in done.stderr
    static = run(
        "crawl", "page", "-a", f"url={site.url('/echo')}", "-a", "wait_for=#x", allow_private=True
    )
    assert "'wait_for' waits in a browser: it needs the js engine" in static.stderr
    assert site.count("/echo") == before


def test_crawl_page_renders_a_javascript_shell_with_engine_auto(site):
    done = run(
        "crawl",
        "page",
        "-a",
        f"url={site.url('/js-only')}",
        "-a",
        "engine=auto",
        allow_private=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["success"] is True and result["engine"] == "js"
    assert result["title"] == "Rendered by JS"
    assert [(a["engine"], a["status_code"]) for a in result["attempts"]] == [
        ("static", 200),
        ("js", 200),
    ]


def test_crawl_page_obeys_robots_txt(site):
    before = site.count("/private/secret")
    done = run("crawl", "page", "-a", f"url={site.url('/private/secret')}", allow_private=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["success"] is False and "robots.txt" in result["error"]
    assert site.count("/private/secret") == before


def test_fetch_and_crawl_are_guarded_against_private_targets(site):
    before = site.count("/article")
    fetched = run("fetch", "--nolog", site.url("/article"), allow_private=False)
    assert "The Article" not in fetched.stdout
    crawled = run(
        "crawl", "page", "-a", f"url=http://localhost:{site.port}/article", allow_private=False
    )
    result = json.loads(crawled.stdout.strip().splitlines()[-1])
    assert "not allowed" in result["error"]
    assert site.count("/article") == before


def test_shell_uses_the_project_settings(site):
    done = run(
        "shell",
        site.url("/article"),
        "-c",
        "(response.status, response.css('title::text').get(), "
        "sorted(crawler.settings.getdict('DOWNLOADER_MIDDLEWARES')))",
        allow_private=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(200, '  The   Article  '" in done.stdout
    assert "middlewares.egress_guard.EgressGuardMiddleware" in done.stdout


def test_the_project_settings_take_the_operators_environment():
    env = {
        **os.environ,
        "SCRAPESPY_ROBOTS_TTL_SECONDS": "77",
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "yes",
        "SCRAPESPY_MAX_PAGES": "3",
    }
    got = {}
    for name in (
        "SCRAPESPY_ROBOTS_TTL_SECONDS",
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS",
        "SCRAPESPY_MAX_PAGES",
    ):
        done = subprocess.run(
            [SCRAPY, "settings", "--get", name],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        got[name] = done.stdout.strip()
    assert got == {
        "SCRAPESPY_ROBOTS_TTL_SECONDS": "77",
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "True",
        "SCRAPESPY_MAX_PAGES": "3",
    }


def test_shell_reads_the_robots_ttl_from_the_environment(site):
    done = subprocess.run(
        [
            SCRAPY,
            "shell",
            site.url("/article"),
            "-c",
            "crawler.settings.getfloat('SCRAPESPY_ROBOTS_TTL_SECONDS')",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "1",
            "SCRAPESPY_ROBOTS_TTL_SECONDS": "5",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "5.0"
