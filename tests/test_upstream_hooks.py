"""The upstream code the service overrides, calls or reads, as the service expects it.

scrapy-playwright's handler is subclassed through private methods and ``_utils`` helpers, and
Scrapy's robots.txt middleware through ``robot_parser`` and ``_parsers``: a release that renames
one or changes its parameters must fail here, not in a customer's scrape.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import reduce
from importlib import import_module
from typing import Any

import pytest
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.test import get_crawler

from middlewares.robots import ExpiringRobotsTxtMiddleware
from service.scrape import scrapy_settings
from service.scrape.scrapy_settings import default_settings

PLAYWRIGHT_HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
PROVIDER = "scrapy_playwright.provider.PlaywrightBrowserProvider"
HTTP11_HANDLER = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
ROBOTS = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"


@dataclass(frozen=True)
class Hook:
    owner: str  # the upstream module or class, by its dotted path
    name: str  # dotted for an attribute of an attribute
    # a callable's parameters, in order (a classmethod's without cls); None: an attribute that
    # the owner's __init__ sets on an instance
    params: tuple[str, ...] | None
    coroutine: bool = False


HOOKS = (
    # overridden by the js handler (service.browser)
    Hook(PLAYWRIGHT_HANDLER, "__init__", ("self", "crawler")),
    Hook(PLAYWRIGHT_HANDLER, "from_crawler", ("crawler",)),
    Hook(PLAYWRIGHT_HANDLER, "_maybe_launch_in_thread", ("self",), coroutine=True),
    Hook(PLAYWRIGHT_HANDLER, "_browser_disconnected_callback", ("self",), coroutine=True),
    Hook(PLAYWRIGHT_HANDLER, "close", ("self",), coroutine=True),
    Hook(PLAYWRIGHT_HANDLER, "download_request", ("self", "request"), coroutine=True),
    Hook(
        PLAYWRIGHT_HANDLER,
        "_download_request_with_page",
        ("self", "request", "page", "spider"),
        coroutine=True,
    ),
    Hook(
        PLAYWRIGHT_HANDLER,
        "_apply_page_methods",
        ("self", "page", "request", "spider"),
        coroutine=True,
    ),
    # called by the js handler and service.browser_read
    Hook(PLAYWRIGHT_HANDLER, "_maybe_launch_browser", ("self",), coroutine=True),
    Hook(
        PLAYWRIGHT_HANDLER,
        "_make_request_handler",
        (
            "self",
            "context_name",
            "method",
            "url",
            "headers",
            "body",
            "encoding",
            "spider",
            "initial_request_done",
        ),
    ),
    Hook(HTTP11_HANDLER, "download_request", ("self", "request"), coroutine=True),
    # read or set by the js handler
    Hook(PLAYWRIGHT_HANDLER, "browser_provider_cls", None),
    Hook(PLAYWRIGHT_HANDLER, "abort_request", None),
    Hook(PLAYWRIGHT_HANDLER, "stats", None),
    Hook(PLAYWRIGHT_HANDLER, "_crawler", None),
    Hook(PLAYWRIGHT_HANDLER, "config.launch_options", None),
    Hook(PLAYWRIGHT_HANDLER, "config.cdp_url", None),
    Hook(PLAYWRIGHT_HANDLER, "config.connect_url", None),
    Hook(PLAYWRIGHT_HANDLER, "config.navigation_timeout_ms", None),
    # read by the js handler: Playwright's device descriptors, for a mobile context
    Hook(PROVIDER, "playwright", None),
    # imported by service.browser and service.browser_read
    Hook("scrapy_playwright._utils", "_encode_body", ("headers", "text")),
    Hook(
        "scrapy_playwright._utils",
        "_get_page_content",
        ("page", "spider", "context_name", "scrapy_request_url", "scrapy_request_method"),
        coroutine=True,
    ),
    Hook(
        "scrapy_playwright._utils",
        "_set_redirect_meta",
        ("request", "response"),
        coroutine=True,
    ),
    Hook(
        "scrapy_playwright.headers",
        "use_scrapy_headers",
        ("browser_type_name", "playwright_request", "scrapy_request_data"),
        coroutine=True,
    ),
    # overridden and read by middlewares.robots
    Hook(ROBOTS, "__init__", ("self", "crawler")),
    Hook(ROBOTS, "robot_parser", ("self", "request"), coroutine=True),
    Hook(ROBOTS, "_parsers", None),
)


def js_handler() -> type:
    # through the settings, wherever the handler's module lives
    return load_object(scrapy_settings.DOWNLOAD_HANDLERS["http"])  # type: ignore[no-any-return]


def upstream_instance(owner: str) -> Any:
    crawler = get_crawler(settings_dict={**default_settings(), "ROBOTSTXT_OBEY": True})
    if owner == PROVIDER:  # made by the handler, from its config
        handler = build_from_crawler(load_object(PLAYWRIGHT_HANDLER), crawler)
        return load_object(owner)(handler.config)
    return build_from_crawler(load_object(owner), crawler)


@pytest.mark.parametrize("hook", HOOKS, ids=lambda hook: f"{hook.owner}.{hook.name}")
def test_the_upstream_hook_is_there_as_expected(hook: Hook):
    if hook.params is None:
        instance = upstream_instance(hook.owner)
        reduce(getattr, hook.name.split("."), instance)  # AttributeError when gone
        return
    try:
        owner = import_module(hook.owner)
    except ImportError:
        owner = load_object(hook.owner)
    target = getattr(owner, hook.name, None)
    assert target is not None, f"{hook.owner}.{hook.name} is gone"
    assert tuple(inspect.signature(target).parameters) == hook.params
    assert inspect.iscoroutinefunction(target) == hook.coroutine


def overridden(ours: type) -> set[tuple[str, str]]:
    """(upstream class, name) of every method that the service's own classes override."""
    service_classes = [cls for cls in ours.__mro__ if cls.__module__.split(".")[0] in OURS]
    upstream = [cls for cls in ours.__mro__ if cls not in service_classes and cls is not object]
    found = set()
    for cls in service_classes:
        for name, value in vars(cls).items():
            if not callable(value) and not isinstance(value, classmethod | property):
                continue
            for base in upstream:
                if name in vars(base):
                    found.add((f"{base.__module__}.{base.__qualname__}", name))
                    break
    return found


OURS = {"service", "middlewares"}


@pytest.mark.parametrize("ours", ["js handler", "robots.txt middleware"])
def test_every_upstream_method_the_service_overrides_is_in_the_table(ours: str):
    cls = js_handler() if ours == "js handler" else ExpiringRobotsTxtMiddleware
    recorded = {(hook.owner, hook.name) for hook in HOOKS if hook.params is not None}
    assert overridden(cls) - recorded == set()
