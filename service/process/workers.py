"""``scrapespy serve --workers N``: N processes serving one listening socket.

The parent binds the socket, migrates the database once, and starts N ``scrapespy serve`` workers
that adopt the socket (the kernel spreads connections between them). It forwards SIGTERM/SIGINT,
restarts a worker that dies on its own, and exits 0 when every worker stopped cleanly. Each worker
has its own crawler and browser; per-key rate limits are exact across workers only with
``SCRAPESPY_REDIS_URL`` (each worker otherwise limits on its own).
"""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import time
from types import FrameType

from service.core.config import Config
from service.db import Database

log = logging.getLogger("scrapespy")

RESTART_WINDOW = 60.0
MAX_RESTARTS = 5


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    sock.set_inheritable(True)
    return sock


def _spawn(fd: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "service.process.cli", "serve", "--inherit-fd", str(fd)],
        pass_fds=(fd,),
    )


def supervise(config: Config, host: str, port: int, workers: int) -> int:
    if config.redis_url == "" and workers > 1:
        log.warning("per-key rate limits are per worker without SCRAPESPY_REDIS_URL")
    database = Database(config.database_url, threads=1)
    try:
        database.upgrade()
    finally:
        database.stop()
    sock = bind(host, port)
    address = sock.getsockname()
    log.info("scrapespy supervising %d workers on http://%s:%d", workers, address[0], address[1])
    procs = [_spawn(sock.fileno()) for _ in range(workers)]
    stopping = False
    restarts: list[float] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes: list[int] = []
    while procs:
        time.sleep(0.2)
        for proc in list(procs):
            code = proc.poll()
            if code is None:
                continue
            procs.remove(proc)
            if stopping:
                codes.append(code)
                continue
            now = time.monotonic()
            restarts[:] = [t for t in restarts if now - t < RESTART_WINDOW] + [now]
            if len(restarts) > MAX_RESTARTS:
                log.error("workers keep dying (last exit %s); stopping", code)
                forward(signal.SIGTERM, None)
                codes.append(code or 1)
                continue
            log.error("worker %d exited with %s; starting another", proc.pid, code)
            procs.append(_spawn(sock.fileno()))
    sock.close()
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit("run: scrapespy serve --workers N")
