"""End to end: public bot detectors, served from 127.0.0.1, judge the js engine as a browser.

The pages of harness/detectors (BotD, fpscanner and headless-detector from npm at the versions
of tests/js/package-lock.json, rebrowser's bot detector checks, and our own page listing every
global and non-native function) are scraped through ``POST /scrape`` with ``engine: js``, once
with the headless shell and once with the full Chromium, and each verdict read back from the
answer. The bar is the machine's own desktop Chromium with no automation at all, run under Xvfb
in this module (harness/detectors/reference.py): a check that fires on every Chromium here
(no GPU, UTC) is the machine's, not the automation's (harness/detectors/verdicts.py).

- The full Chromium: BotD says ``bot: false``; fpscanner, headless-detector and rebrowser's page
  flag nothing the reference does not; the globals page lists nothing.
- The headless shell: the same, except what the shell lacks natively and the engine will not
  fake by replacing native functions (docs/stealth.md): ``navigator.plugins`` (BotD and
  headless-detector count them), ``window.chrome`` and the notification permission's default.
  Anything beyond those fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.detectors import DetectorSite
from harness.detectors.reference import reference_verdicts, xvfb_available
from harness.detectors.verdicts import beyond, engine_verdicts, failures

pytestmark = [pytest.mark.browser, pytest.mark.engine, pytest.mark.long(minutes=1)]

SHELL = "/usr/bin/chromium-headless-shell"
FULL = "/usr/bin/chromium"
JUDGED = ("botd", "fpscanner", "headless-detector", "rebrowser", "globals")

# What the headless shell has not, natively (its "old headless" build): plugins and mimeTypes,
# window.chrome, a notification permission other than "denied". Faking them means replacing
# native getters, which a page can see (the globals page would list them).
SHELL_NATIVE_GAPS = {
    "botd": {"detectPluginsLengthInconsistency:headless_chrome"},
    "fpscanner": {"hasMissingChromeObject"},
    "headless-detector": {"plugins-count", "adv-permissions"},
}


@pytest.fixture(scope="module")
def detector_site() -> Iterator[DetectorSite]:
    site = DetectorSite().start()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def reference(detector_site: DetectorSite) -> dict[str, dict[str, Any] | None]:
    assert xvfb_available(), "the reference needs Xvfb and /usr/bin/chromium (make chromium)"
    verdicts = reference_verdicts(detector_site, JUDGED)
    missing = [name for name, verdict in verdicts.items() if verdict is None]
    assert not missing, f"the unautomated reference gave no verdict on {missing}"
    return verdicts


def test_the_full_chromium_is_flagged_for_nothing_the_unautomated_browser_is_not(
    detector_site, reference, tmp_path_factory
):
    found = engine_verdicts(detector_site, FULL, tmp_path_factory.mktemp("detect-full"), JUDGED)
    problems = [line for name in JUDGED for line in failures(name, found[name], reference[name])]
    assert problems == [], problems
    assert found["botd"] is not None and found["botd"]["bot"] is False


def test_the_headless_shell_is_flagged_only_for_what_it_lacks_natively(
    detector_site, reference, tmp_path_factory
):
    found = engine_verdicts(detector_site, SHELL, tmp_path_factory.mktemp("detect-shell"), JUDGED)
    for name in JUDGED:
        assert found[name] is not None, f"{name}: no verdict read back"
        extra = set(beyond(found[name], reference[name])) - SHELL_NATIVE_GAPS.get(name, set())
        assert not extra, (name, sorted(extra), found[name])
    # BotD calls the shell a bot for its missing plugins alone
    assert found["botd"]["bot"] is False or set(found["botd"]["flags"]) <= SHELL_NATIVE_GAPS["botd"]
