"""service.browser.pool alone: which endpoint a render gets, what the log may name, an endpoint
lost and tried again. The browsers are stand-ins (a unit test of one module); the real servers
are tests/test_e2e_browser_pool.py's."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from service.browser.failures import BrowserUnavailable
from service.browser.pool import BrowserPool, endpoint_label, parse_endpoints
from service.browser.server import NOWHERE, server_options
from tests.test_browser_screenshot import on_asyncio


class FakeBrowser:
    version = "1.0"

    def __init__(self) -> None:
        self.connected = True
        self.listeners: list[Any] = []

    def is_connected(self) -> bool:
        return self.connected

    def on(self, event: str, listener: Any) -> None:
        assert event == "disconnected"
        self.listeners.append(listener)

    def die(self) -> None:
        self.connected = False
        for listener in self.listeners:
            listener(self)

    async def close(self) -> None:
        self.connected = False


class FakeType:
    """Connects to the URLs in ``up``; refuses the others with a message naming the URL."""

    def __init__(self, up: set[str]) -> None:
        self.up = up
        self.calls: list[tuple[str, Any]] = []
        self.made: dict[str, FakeBrowser] = {}

    async def connect(self, url: str, headers: Any = None, timeout: float = 0) -> FakeBrowser:
        self.calls.append((url, headers))
        if url not in self.up:
            raise ConnectionError(f"WebSocket error: {url} 401 Unauthorized ({headers})")
        self.made[url] = browser = FakeBrowser()
        return browser


A, B = "ws://10.0.0.1:9222/", "ws://10.0.0.2:9222/"


def test_endpoints_are_ws_urls_and_the_log_names_them_without_secrets():
    assert parse_endpoints([" ws://a:1/x ", "", "wss://b:2/"]) == ("ws://a:1/x", "wss://b:2/")
    with pytest.raises(ValueError, match="expected ws://host:port/path"):
        parse_endpoints(["http://a:1/"])
    with pytest.raises(ValueError) as refused:
        parse_endpoints(["http://user:secret@a:1/?token=secret"])
    assert "secret" not in str(refused.value)
    assert endpoint_label("ws://user:pw@host:9222/p?token=t") == "ws://host:9222/p"
    assert endpoint_label("ws://[::1]:9222/") == "ws://[::1]:9222/"


@on_asyncio
async def test_renders_go_to_the_fewest_contexts_and_take_turns_on_ties():
    pool = BrowserPool([A, B], token="tok")
    kind = FakeType({A, B})
    await pool.start(kind)  # type: ignore[arg-type]
    assert [headers for _, headers in kind.calls] == [{"Authorization": "Bearer tok"}] * 2
    first, on_a = pool.pick()
    second, _ = pool.pick()
    assert (first.url, second.url) == (A, B)
    third, _ = pool.pick()  # a tie: the turn goes on
    assert third.url == A
    pool.release(first, on_a)
    pool.release(third, on_a)
    assert pool.pick()[0].url == A  # B has one, A none
    await pool.close()


@on_asyncio
async def test_a_lost_endpoint_is_out_then_taken_back(caplog):
    caplog.set_level(logging.INFO, logger="service.browser.pool")
    pool = BrowserPool([A, B], token="tok", max_retry=0.2)
    kind = FakeType({A, B})
    await pool.start(kind)  # type: ignore[arg-type]
    kind.up.discard(A)
    kind.made[A].die()
    assert [pool.pick()[0].url for _ in range(3)] == [B, B, B]
    kind.made[B].die()
    kind.up.discard(B)
    with pytest.raises(BrowserUnavailable) as error:
        pool.pick()
    assert error.value.error_code == "unavailable"  # type: ignore[attr-defined]
    kind.up.add(A)
    for _ in range(100):  # tried again within max_retry
        if pool.browsers:
            break
        await asyncio.sleep(0.05)
    assert pool.pick()[0].url == A
    await pool.close()

    text = caplog.text
    assert f"browser endpoint {A} down" in text and f"browser endpoint {A} up" in text
    assert "tok" not in text  # the refusal's message had the headers: cut out


def test_the_server_launches_the_local_chromium_with_its_own_proxy_closed():
    options = server_options("/usr/bin/chromium-headless-shell", max_heap_mb=512, as_root=False)
    assert options["executablePath"] == "/usr/bin/chromium-headless-shell"
    assert f"--proxy-server={NOWHERE}" in options["args"]
    assert "--js-flags=--max-old-space-size=512" in options["args"]
    assert "--enable-automation" in options["ignoreDefaultArgs"]


def test_an_endpoint_that_is_not_a_ws_url_stops_the_start_without_being_shown():
    from service.core.config import Config, ConfigError

    env = {"SCRAPESPY_BROWSER_ENDPOINTS": "ws://a:1/, http://u:secret@b:2/"}
    with pytest.raises(ConfigError, match="entry #2 is not a ws:// URL") as refused:
        Config.from_env(env)
    assert "secret" not in str(refused.value)
    config = Config.from_env({"SCRAPESPY_BROWSER_ENDPOINTS": "ws://a:1/,wss://b:2/x"})
    assert config.browser_endpoints == ("ws://a:1/", "wss://b:2/x")
    assert "browser_endpoint_token" not in repr(Config.from_env({}))
