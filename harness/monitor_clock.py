"""The test clock of the monitors' schedules (``SCRAPESPY_MONITOR_TEST_CLOCK_FILE``): a file
holding the time, in Unix seconds, that a test or a benchmark moves on."""

from __future__ import annotations

import os
from pathlib import Path

START = 1_900_000_000.0  # the clock's first time (2030)


class Clock:
    """The file the services' schedules read the time from."""

    def __init__(self, path: Path, start: float = START):
        self.path = path
        self.now = start
        self.set(start)

    def set(self, moment: float) -> None:
        self.now = moment
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(repr(moment))
        os.replace(temporary, self.path)  # a reader sees the old time or the new, whole

    def advance(self, seconds: float) -> None:
        self.set(self.now + seconds)
