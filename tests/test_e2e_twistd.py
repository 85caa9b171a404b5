"""``twistd scrapespy``: in the foreground and daemonised, with a graceful SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.service import LISTENING, ROOT, call

TWISTD = str(Path(sys.executable).with_name("twistd"))


def _env(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "SCRAPESPY_DATABASE_URL": database_url,
        "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "1",
    }


def _wait_for_listening(read, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = LISTENING.search(read())
        if match:
            return match.group(1)
        time.sleep(0.1)
    raise AssertionError("twistd scrapespy did not start:\n" + read()[-3000:])


def test_twistd_foreground_serves_and_drains_on_sigterm(database_url, site, accounts):
    proc = subprocess.Popen(
        [TWISTD, "-n", "--pidfile=", "scrapespy", "--port", "0"],
        cwd=ROOT,
        env=_env(database_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output: list[str] = []
    threading.Thread(
        target=lambda: [output.append(line.decode(errors="replace")) for line in proc.stdout],
        daemon=True,
    ).start()
    try:
        base = _wait_for_listening(lambda: "".join(output))
        account_id, key = accounts.create(credits=10)
        replies = []

        def scrape() -> None:
            replies.append(
                call("POST", base + "/scrape", {"url": site.url("/slow"), "timeout": 30}, key=key)
            )

        threads = [threading.Thread(target=scrape) for _ in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while accounts.summary(account_id)["held"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        for t in threads:
            t.join(10)
        assert [r.json["success"] for r in replies] == [True, True]
        summary = accounts.summary(account_id)
        assert (summary["balance"], summary["held"]) == (8, 0)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_twistd_daemonised_writes_pid_and_log(database_url, tmp_path):
    pidfile, logfile = tmp_path / "scrapespy.pid", tmp_path / "scrapespy.log"
    started = subprocess.run(
        [TWISTD, f"--pidfile={pidfile}", f"--logfile={logfile}", "scrapespy", "--port", "0"],
        cwd=ROOT,
        env=_env(database_url),
        timeout=60,
    )
    assert started.returncode == 0
    base = _wait_for_listening(lambda: logfile.read_text() if logfile.exists() else "")
    pid = int(pidfile.read_text())
    try:
        assert call("GET", base + "/healthz").json == {"status": "ok"}
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the daemon did not stop:\n" + logfile.read_text()[-4000:])
    assert re.search(r"scrapespy stopped", logfile.read_text())
    assert not pidfile.exists()
