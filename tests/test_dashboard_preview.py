"""The "try it" page's view of an answer: markdown rendered safely, bulky fields shortened."""

from __future__ import annotations

import base64

import orjson

from service.dashboard.preview import SHOWN_CHARS, rendered_markdown, shown_json


def test_markdown_is_rendered_with_tables_and_code_but_never_raw_html():
    html = rendered_markdown(
        "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```\n\n"
        "<script>alert(1)</script>\n\n[click](javascript:alert(1)) [ok](https://example.com/)"
    )
    assert "<h1>Title</h1>" in html
    assert "<table>" in html and "<td>2</td>" in html
    assert '<code class="language-python">x = 1' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.replace("[click](javascript:", "")
    assert '<a href="https://example.com/">ok</a>' in html


def test_the_json_view_shortens_the_screenshot_and_long_outputs():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 3000).decode()
    body = {"url": "https://example.com/", "screenshot": png, "raw_html": "x" * (SHOWN_CHARS + 10)}
    shown = orjson.loads(shown_json(body))  # type: ignore[arg-type]
    assert shown["screenshot"] == "<a base64 PNG of 3,004 bytes, shown below>"
    assert shown["raw_html"].startswith("x" * SHOWN_CHARS)
    assert shown["raw_html"].endswith("<10 more characters>")
    assert shown["url"] == "https://example.com/"


def test_the_json_view_shortens_the_screenshots_of_steps():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    body = {
        "actions": [{"index": 0, "type": "screenshot", "ok": True, "elapsed_ms": 40}],
        "action_results": [
            {"index": 0, "type": "screenshot", "screenshot": png},
            {"index": 1, "type": "evaluate", "value": "kept as it is"},
        ],
    }
    shown = orjson.loads(shown_json(body))  # type: ignore[arg-type]
    assert shown["action_results"] == [
        {
            "index": 0,
            "type": "screenshot",
            "screenshot": "<a base64 PNG of 100 bytes, shown below>",
        },
        {"index": 1, "type": "evaluate", "value": "kept as it is"},
    ]
    assert shown["actions"] == body["actions"]
