"""Start the real ``scrapespy serve`` on a real port, and talk to it as a user would."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from service.billing import accounts, keys, ledger
from service.db import Database

ROOT = Path(__file__).resolve().parent.parent
SCRAPESPY = str(Path(sys.executable).with_name("scrapespy"))
LISTENING = re.compile(r"scrapespy listening on (http://[\d.]+:\d+)")
# How long a start may take before it counts as failed. About 5 s on an idle machine; on a
# loaded one (the suite's own parallel runs, other work beside it) imports alone took over 90 s.
# Waiting ends as soon as the service listens or its process exits, so only a hang costs this.
START_TIMEOUT = 300.0


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error_answer(self) -> tuple[Any, str | None]:
        """An error answer as a client reads it: the body, and the code in X-Error-Code."""
        return self.json, self.headers.get("X-Error-Code")


def call(
    method: str,
    url: str,
    body: Any = None,
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout: float = 60,
) -> Reply:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    all_headers = {"Content-Type": "application/json"} if data is not None else {}
    if key is not None:
        all_headers["X-API-Key"] = key
    all_headers.update(headers or {})
    request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Reply(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers.items()), error.read())


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP) for the block: of processes sharing a listening socket,
    the others accept every connection made meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def paused_between_writes(pid: int, database_url: str) -> Iterator[None]:
    """:func:`paused`, at a moment ``pid`` holds no write of the database. A process stopped
    inside a write (its sessions', its sweeper's) would keep the other from the
    database, which then answers 503 as in an outage. Stopped, then let go again until the
    database is free (at most 100 tries)."""
    sqlite = database_url.startswith("sqlite")
    engine = create_engine(database_url, connect_args={"timeout": 0.2} if sqlite else {})
    try:
        for _ in range(100):
            os.kill(pid, signal.SIGSTOP)
            if _free(engine):
                break
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.05)
        else:
            raise AssertionError("the service never stopped writing to its database")
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        engine.dispose()


def _free(engine: Any) -> bool:
    """Whether no other connection holds a write: SQLite takes one from here at once; on
    PostgreSQL no other connection has a statement or a transaction open."""
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                conn.rollback()
                return True
            busy = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
                )
            ).scalar_one()
            return busy == 0
    except OperationalError:
        return False


@dataclass
class ServiceProcess:
    database_url: str
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    base: str = ""
    process: subprocess.Popen[bytes] | None = None
    output: list[str] = field(default_factory=list)
    # The service's output goes to this file instead of a pipe read line by line here: the
    # benchmark's choice, where a reader in this process would compete for the cores
    log_path: Path | None = None

    def start(self, timeout: float = START_TIMEOUT) -> ServiceProcess:
        env = {
            **os.environ,
            "SCRAPESPY_DATABASE_URL": self.database_url,
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "1",
            "SCRAPESPY_RATE_LIMIT_PER_SECOND": "1000",
            "SCRAPESPY_RATE_LIMIT_BURST": "1000",
            "SCRAPESPY_LOG_LEVEL": "INFO",
            # the 10 s default bounds a pathological document; an ordinary one can take that long
            # on a machine shared by many runs, so tests of the bound itself set their own
            "SCRAPESPY_EXTRACT_MAX_SECONDS": "60",
            **self.env,
        }
        log_file = open(self.log_path, "ab") if self.log_path is not None else None
        self.process = subprocess.Popen(
            [SCRAPESPY, "serve", "--host", "127.0.0.1", "--port", "0", *self.args],
            cwd=self.workdir,
            env=env,
            stdout=log_file or subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        if log_file is not None:
            log_file.close()
            return self._wait_for_log(timeout)
        found = threading.Event()

        def pump() -> None:
            assert self.process is not None and self.process.stdout is not None
            for raw in self.process.stdout:
                line = raw.decode("utf-8", "replace").rstrip()
                self.output.append(line)
                match = LISTENING.search(line)
                if match and not found.is_set():
                    self.base = match.group(1)
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                if found.is_set() and self.process.poll() is None:
                    break  # it listened just as the time ran out
                self.stop()
                raise RuntimeError("scrapespy did not start:\n" + "\n".join(self.output[-40:]))
        return self

    def _wait_for_log(self, timeout: float) -> ServiceProcess:
        assert self.process is not None and self.log_path is not None
        deadline = time.monotonic() + timeout
        while True:
            match = LISTENING.search(self.log_path.read_text("utf-8", "replace"))
            if match:
                self.base = match.group(1)
                return self
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log_path.read_text("utf-8", "replace").splitlines()[-40:]
                raise RuntimeError("scrapespy did not start:\n" + "\n".join(tail))
            time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def url(self, path: str) -> str:
        return self.base + path

    def scrape(self, key: str | None, body: Any, **kwargs: Any) -> Reply:
        return call("POST", self.url("/scrape"), body, key=key, **kwargs)

    def access_entries(self) -> list[dict[str, Any]]:
        """The access log's entries so far, one a response (written once it is sent)."""
        entries = []
        for line in list(self.output):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("event") == "access":
                entries.append(entry)
        return entries

    def log_text(self) -> str:
        if self.log_path is not None:
            return self.log_path.read_text("utf-8", "replace")
        return "\n".join(self.output)


class Accounts:
    """Accounts made directly in the service's database, as the admin CLI would."""

    def __init__(self, database_url: str, trials: int = 10):
        self.database = Database(database_url, threads=1)
        self.database.upgrade()
        self.trials = trials
        self._n = 0

    def create(self, credits: int = 0, email: str | None = None) -> tuple[int, str]:
        self._n += 1
        email = email or f"user{self._n}-{time.monotonic_ns()}@example.com"
        run = self.database.run_sync
        account_id = run(accounts.create, email, trials=self.trials)
        if credits:
            run(ledger.credit, account_id, credits, kind="grant", reference="test")
        return account_id, run(keys.regenerate, account_id)

    def summary(self, account_id: int) -> dict[str, Any]:
        return self.database.run_sync(accounts.summary, account_id)

    def entries_sum(self, account_id: int) -> int:
        return self.database.run_sync(ledger.entries_sum, account_id)

    def close(self) -> None:
        self.database.stop()
