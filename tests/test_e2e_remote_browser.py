"""SCRAPESPY_BROWSER_URL: the js engine renders in a browser the service did not launch."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request

import pytest

from harness.service import ServiceProcess
from service.browser import chromium_launch_options
from tests.test_e2e_js import browser_processes

pytestmark = [pytest.mark.browser, pytest.mark.engine]


@pytest.fixture
def remote_chromium(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = chromium_launch_options(
        os.environ.get("SCRAPESPY_CHROMIUM_PATH", "/usr/bin/chromium"), as_root=os.geteuid() == 0
    )
    proc = subprocess.Popen(
        [
            options["executable_path"],
            *options["args"],
            f"--remote-debugging-port={port}",
            "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={tmp_path / 'profile'}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(endpoint + "/json/version", timeout=1).read()
            break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("the remote Chromium did not come up")
    yield endpoint
    proc.terminate()
    proc.wait(10)


def test_js_scrapes_render_in_the_remote_browser(
    remote_chromium, database_url, site, accounts, tmp_path
):
    proc = ServiceProcess(
        database_url, tmp_path, env={"SCRAPESPY_BROWSER_URL": remote_chromium}
    ).start()
    try:
        account_id, key = accounts.create(credits=20)
        result = proc.scrape(key, {"url": site.url("/js-only"), "engine": "js"}).json
        assert result["success"] is True, result
        assert result["title"] == "Rendered by JS"
        assert result["extracted"] == {} and result["headings"] == {"h1": ["Client side"]}
        assert accounts.summary(account_id)["balance"] == 15
        # the service launched no browser of its own
        assert browser_processes(proc.process.pid) == []
    finally:
        proc.stop()
