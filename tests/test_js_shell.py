"""Tests for service.extraction.shell: which pages engine auto renders with js."""

from __future__ import annotations

import time

import pytest

from harness.site import ARTICLE, JS_ONLY
from service.extraction.shell import is_js_shell

CREATE_REACT_APP = """<!doctype html><html lang="en"><head><meta charset="utf-8"/>
<link rel="icon" href="/favicon.ico"/><meta name="viewport" content="width=device-width"/>
<title>React App</title><script defer="defer" src="/static/js/main.3f2a1b.js"></script>
<link href="/static/css/main.9c1e.css" rel="stylesheet"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
</body></html>"""

ANGULAR = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<base href="/"><link rel="stylesheet" href="styles.css"></head>
<body><app-root></app-root>
<script src="runtime.js" type="module"></script><script src="main.js" type="module"></script>
</body></html>"""

VUE_WITH_LOADER = """<!DOCTYPE html><html><head><title>Dashboard</title></head><body>
<div id="app">
</div>
<div class="splash">Loading&hellip;</div>
<script type="module" crossorigin src="/assets/index-4b2c.js"></script></body></html>"""

NOSCRIPT_NOTICE = """<html><head><title>Flights</title></head><body>
<header>Flights</header>
<noscript><p>Please turn on JavaScript in your browser to search for flights.</p></noscript>
<main id="content"></main><script src="/bundle.js"></script></body></html>"""

DATA_IN_SCRIPT = (
    "<html><head><title>Item</title></head><body>"
    "<script>window.__STATE__ = "
    + '{"items": ['
    + ",".join(f'{{"name": "item {i}", "price": {i}.99}}' for i in range(40))
    + "]}; render(window.__STATE__);</script></body></html>"
)

SERVER_RENDERED_NEXT = (
    '<html><head><title>Blog</title></head><body><div id="__next"><article><h1>Why the sky '
    "is blue</h1><p>"
    + "Sunlight is scattered by the molecules of the air, blue more than red. " * 6
    + '</p></article></div><script id="__NEXT_DATA__" type="application/json">'
    + '{"props": {"pageProps": {"post": "'
    + "x" * 4000
    + '"}}}'
    + '</script><script src="/_next/static/chunks/main.js"></script></body></html>'
)

ARTICLE_WITH_TRACKING = """<html><head><title>News</title>
<script async src="https://analytics.example/tag.js"></script></head><body>
<noscript><img src="https://analytics.example/pixel.gif" alt=""></noscript>
<div id="root"><h1>Council approves the new bridge</h1>
<p>The city council voted on Tuesday to fund the bridge over the river, ending a debate that
had lasted for a decade. Construction is to start next spring and take three years.</p></div>
</body></html>"""

EMPTY_WITHOUT_SCRIPTS = "<html><head><title>nothing here</title></head><body></body></html>"

FORM = """<html><head><title>Sign in</title></head><body><form action="/login" method="post">
<label>Email <input name="email"></label><label>Password <input type="password" name="pw">
</label><button>Sign in</button></form><p>Forgot your password? Ask the administrator of this
site, who can reset it for you within a working day.</p>
<script src="/form-validation.js"></script></body></html>"""


@pytest.mark.parametrize(
    "page",
    [JS_ONLY, CREATE_REACT_APP, ANGULAR, VUE_WITH_LOADER, NOSCRIPT_NOTICE, DATA_IN_SCRIPT],
    ids=["harness", "create-react-app", "angular", "vue-loader", "noscript", "data-in-script"],
)
def test_shells(page: str) -> None:
    assert is_js_shell(page.encode())


@pytest.mark.parametrize(
    "page",
    [ARTICLE, SERVER_RENDERED_NEXT, ARTICLE_WITH_TRACKING, EMPTY_WITHOUT_SCRIPTS, FORM],
    ids=["article", "server-rendered-next", "tracking", "empty", "form"],
)
def test_pages_that_are_not_shells(page: str) -> None:
    assert not is_js_shell(page.encode())


def test_a_root_with_content_is_not_empty() -> None:
    assert not is_js_shell(b'<html><body><div id="root"><p>hi</p></div></body></html>')
    assert is_js_shell(b'<html><body><div class="x" id=root ></div ></body></html>')


def test_unclosed_blocks_and_comments() -> None:
    assert is_js_shell(b'<html><body><div id="app"></div><script>var a = "' + b"x" * 600)
    assert not is_js_shell(b"<html><body><!-- <div id=app></div> -->" + b"<p>text</p>" * 40)


@pytest.mark.parametrize(
    "body",
    [b"<" * 2_000_000, b"<div id=app" * 200_000, b"<script" * 300_000, b"<!--" * 500_000],
    ids=["brackets", "roots", "scripts", "comments"],
)
def test_hostile_bodies_are_checked_in_bounded_time(body: bytes) -> None:
    started = time.perf_counter()
    is_js_shell(body)
    # about 10 ms here; quadratic would take minutes: the bound leaves room for a busy machine
    assert time.perf_counter() - started < 5
