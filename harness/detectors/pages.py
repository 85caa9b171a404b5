"""The detector pages: one HTML page per detector, the detectors' own code beside them.

Each page's verdict is ``{"flags": [...], ...}``: the names of the checks that fired, as the
detector itself names them (BotD's detectors, fpscanner's rules, headless-detector's checkIds,
rebrowser's test types, for ``globals`` the names found; ``headers`` flags nothing, its
requests' headers are what is compared), plus what the detector concludes
(``bot`` for BotD and fpscanner, ``score`` for headless-detector). Scripts of ours are ES modules
(harness/detectors/static/), so they add no global to the page.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
NODE_MODULES = Path(__file__).resolve().parents[2] / "tests" / "js" / "node_modules"
# what /npm/ serves of tests/js/node_modules: the detectors' own folders only
NPM_PACKAGES = ("@fingerprintjs/botd", "fpscanner", "headless-detector")

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
{head}</head><body><h1>{title}</h1>
{body}</body></html>
"""


def _module(path: str) -> str:
    return f'<script type="module" src="{path}"></script>\n'


# rebrowser's page as its index.html has it (the CSP, the table, the JSON box), its script served
# from here; the how-to text and the stylesheet are left out, the verdict module added
REBROWSER_HEAD = (
    '<meta http-equiv="Content-Security-Policy" content="default-src * data: '
    "'unsafe-eval' 'unsafe-inline' blob:; script-src blob: 'self' 'unsafe-eval' 'unsafe-inline' "
    'https://static.cloudflareinsights.com https://cloudflareinsights.com;">\n'
    '<script src="/assets/rebrowser.js"></script>\n' + _module("/assets/rebrowser-verdict.js")
)
REBROWSER_BODY = """<table id="detections-table">
<thead><tr><th>Test name</th><th>Time since load</th><th>Notes</th></tr></thead>
<tbody></tbody></table>
<h3>JSON</h3>
<textarea id="detections-json"></textarea>
<footer>Tests from <a href="https://github.com/rebrowser/rebrowser-bot-detector">
rebrowser-bot-detector</a> (MIT).</footer>
"""

DETECTORS: dict[str, tuple[str, str, str]] = {
    # name: (title, head, body)
    "botd": ("BotD", _module("/assets/botd.js"), "<p>FingerprintJS BotD 2.0.0</p>\n"),
    "fpscanner": ("fpscanner", _module("/assets/fpscanner.js"), "<p>fpscanner 1.0.2</p>\n"),
    "headless-detector": (
        "headless-detector",
        '<script src="/npm/headless-detector/scripts/headless-detector.js"></script>\n'
        + _module("/assets/headless-detector.js"),
        "<p>headless-detector 2.0.1</p>\n",
    ),
    "rebrowser": ("rebrowser-bot-detector", REBROWSER_HEAD, REBROWSER_BODY),
    "headers": ("Headers", _module("/assets/headers.js"), "<p>a script and an image</p>\n"),
    "globals": (
        "Globals and non-native functions",
        _module("/assets/globals.js"),
        # something for each kind of action to act on
        '<button id="go" type="button">Go</button> <input id="field" name="field">\n'
        '<div style="height: 3000px">a page taller than the window</div>\n',
    ),
}


def detector_page(name: str) -> bytes:
    title, head, body = DETECTORS[name]
    return PAGE.format(title=title, head=head, body=body).encode()


def asset(path: str) -> bytes | None:
    """A file under /assets/ (ours) or /npm/ (a detector's package), None when not served."""
    if path.startswith("/assets/"):
        base, rest = STATIC, path.removeprefix("/assets/")
    elif path.startswith("/npm/"):
        rest = path.removeprefix("/npm/")
        if not any(rest.startswith(package + "/") for package in NPM_PACKAGES):
            return None
        base = NODE_MODULES
    else:
        return None
    target = (base / rest).resolve()
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target.read_bytes()
