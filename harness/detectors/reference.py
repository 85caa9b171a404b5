"""The reference: the machine's desktop Chromium with no automation at all, under Xvfb.

No DevTools port, no Playwright, no automation switch: Chromium is started with the page's URL
on its command line, a fresh ``--user-data-dir`` each time, and the page's own POST is the only
way its verdict comes back (harness/detectors/site.py). What it flags is what any Chromium on
this machine is flagged for (no GPU, UTC, no "Google Chrome" brand), the bar the automated
browsers are held to. Switches: ``--no-first-run`` and ``--no-default-browser-check`` (dialogs
that would cover the page), ``--password-store=basic`` (no keyring on a bare display), and
``--no-sandbox`` only when running as root, where Chromium refuses to start without it.

    python -m harness.detectors.reference   # prints each verdict
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.detectors.pages import DETECTORS
from harness.detectors.site import DetectorSite

CHROMIUM = "/usr/bin/chromium"
SCREEN = "1920x1080x24"
WINDOW = "1536,960"
PAGE_TIMEOUT = 90.0


class XvfbMissing(RuntimeError):
    """Xvfb is not installed or would not start: the reference cannot run."""


def xvfb_available() -> bool:
    return shutil.which("Xvfb") is not None and Path(CHROMIUM).exists()


@contextmanager
def xvfb(timeout: float = 30.0) -> Iterator[str]:
    """A virtual X display (``":N"``) for the block; the Xvfb process is ended after it. Xvfb
    picks a free display number itself (``-displayfd``), so runs side by side never share one."""
    if shutil.which("Xvfb") is None:
        raise XvfbMissing("Xvfb is not installed (apt-get install xvfb)")
    read, write = os.pipe()
    process = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", SCREEN, "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write,),
        start_new_session=True,
    )
    os.close(write)
    try:
        said = b""
        deadline = time.monotonic() + timeout
        while not said.endswith(b"\n"):
            ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read, 16) if ready else b""
            if not chunk:
                _end(process)
                raise XvfbMissing("Xvfb did not start")
            said += chunk
    finally:
        os.close(read)
    try:
        yield f":{said.decode().strip()}"
    finally:
        _end(process)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Ends a process this module started, and its session's children, by its own id."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(10)


def chromium_command(url: str, profile: str, chromium: str = CHROMIUM) -> list[str]:
    command = [
        chromium,
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--password-store=basic",
        f"--window-size={WINDOW}",
    ]
    if os.geteuid() == 0:
        command.append("--no-sandbox")
    return [*command, url]


def reference_verdict(
    site: DetectorSite, name: str, display: str, timeout: float = PAGE_TIMEOUT
) -> dict[str, Any] | None:
    """``name``'s verdict from a fresh desktop Chromium on ``display``, None past ``timeout``."""
    run = "reference-" + uuid.uuid4().hex[:12]
    with tempfile.TemporaryDirectory(prefix="scrapespy-reference-") as profile:
        process = subprocess.Popen(
            chromium_command(site.url(name, run), profile),
            env={**os.environ, "DISPLAY": display},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            sent = site.wait(name, run, timeout)
        finally:
            _end(process)
    return None if sent is None else sent["verdict"]


def reference_verdicts(
    site: DetectorSite, names: Sequence[str] = tuple(DETECTORS), timeout: float = PAGE_TIMEOUT
) -> dict[str, dict[str, Any] | None]:
    """Every detector's verdict from the reference, one fresh browser a page, one display; a
    page that gave none is tried once more (a first start of Chromium on a busy machine)."""
    with xvfb() as display:
        verdicts = {name: reference_verdict(site, name, display, timeout) for name in names}
        for name in [name for name, verdict in verdicts.items() if verdict is None]:
            verdicts[name] = reference_verdict(site, name, display, timeout)
        return verdicts


def main() -> int:
    site = DetectorSite().start()
    try:
        print(json.dumps(reference_verdicts(site), indent=2))
    finally:
        site.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
