"""``scrapespy browser`` as a test starts it: one Playwright browser server on a port of its own,
its token in the variable ``--token-env`` names, killed or stopped as a test needs."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from contextlib import suppress
from dataclasses import dataclass, field

from harness.service import SCRAPESPY

TOKEN = "pool-token-5f0c1d9e"  # the servers' and the services' unless a test gives another


@dataclass
class BrowserServer:
    """``scrapespy browser --port N``, with the token in the variable --token-env names."""

    port: int
    token: str = TOKEN
    process: subprocess.Popen[bytes] | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def start(self) -> BrowserServer:
        env = {**os.environ, "POOL_TEST_TOKEN": self.token}
        self.process = subprocess.Popen(
            [SCRAPESPY, "browser", "--port", str(self.port), "--token-env", "POOL_TEST_TOKEN"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode().strip()  # its endpoint, once it listens
        self.lines.append(line)
        assert line == self.endpoint, line
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.append(raw.decode("utf-8", "replace").rstrip())

    def kill(self) -> None:
        """kill -9 of the server's process (the pid the command was started as)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def kill_machine(self) -> None:
        """SIGKILL of the server's whole process group (its Node and its Chromium), as when
        the machine it runs on dies."""
        assert self.process is not None
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
