"""The processes a ``make bench`` run measures and needs: the ceiling (bench/ceiling.py), the
peer ScrapyRT in its own venv, scrapespy on a throwaway database, and the ports they listen on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from harness.service import Accounts, ServiceProcess

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RT_VENV = BENCH / ".venv-scrapyrt"
POSTGRES_URL = os.environ.get(
    "SCRAPESPY_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def ceiling(urls_file: Path, concurrency: int, duration: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.ceiling", str(urls_file), str(concurrency), str(duration)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=duration + 120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


class ScrapyRT:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir  # ScrapyRT writes a log file per crawl; keep them out of the repo
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ScrapyRT:
        self.proc = subprocess.Popen(
            [
                str(RT_VENV / "bin" / "scrapyrt"),
                "-p",
                str(self.port),
                "-i",
                "127.0.0.1",
                "-s",
                f"LOG_DIR={self.log_dir}",
            ],
            cwd=BENCH / "rt_project",
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def postgres_database(server: str = POSTGRES_URL) -> tuple[str, Any] | None:
    """A throwaway database on ``server`` (its URL and a function dropping it), or None."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin_url = make_url(server)
    name = f"scrapespy_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception:
        return None

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return admin_url.set(database=name).render_as_string(hide_password=False), drop


def scrapespy(
    database_url: str,
    workdir: Path,
    args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
    credits: int | None = 10**12,
) -> tuple[Any, str]:
    """A started instance and, unless ``credits`` is None, the key of a new funded account."""
    env = {
        "SCRAPESPY_LOG_LEVEL": "WARNING",
        "SCRAPESPY_RATE_LIMIT_PER_SECOND": "100000",
        "SCRAPESPY_RATE_LIMIT_BURST": "100000",
        "SCRAPESPY_MAX_PAGES": "4",
        **(extra_env or {}),
    }
    # the access log goes to a file, as under an operator's daemon, not through a pipe that a
    # thread of this process would read line by line on the cores being measured
    proc = ServiceProcess(
        database_url, workdir, env={**env}, args=args, log_path=workdir / "scrapespy.log"
    )
    proc.env["SCRAPESPY_LOG_LEVEL"] = "INFO"  # the listening line is at INFO
    proc.start()
    if credits is None:
        return proc, ""
    made = Accounts(database_url)
    _, key = made.create(credits=credits)
    made.close()
    return proc, key
