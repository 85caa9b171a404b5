"""Public bot detectors served from 127.0.0.1: the yardstick of how much a browser gives itself
away (issue 45; docs/stealth.md, "How we measure"; docs/decisions/0034).

``site.DetectorSite`` serves one page per detector (``DETECTORS``), each writing its verdict as
JSON into ``<pre id="verdict">`` and POSTing it back; ``reference`` opens the pages in an
unautomated desktop Chromium under Xvfb; ``verdicts`` reads a scraped verdict and says what it
flags beyond the reference's.
"""

from harness.detectors.pages import DETECTORS
from harness.detectors.site import DetectorSite

__all__ = ["DETECTORS", "DetectorSite"]
