"""The service as a Twisted ``Service``: what ``scrapespy serve`` and ``twistd scrapespy`` run.

Start: build the service (database migrated, crawler started) and listen. Stop (SIGTERM): stop
accepting, let the scrapes in flight finish up to the grace period, settle or release every
hold, close the crawler and its browser, then the database.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
from typing import Any

from twisted.application.service import Service
from twisted.internet import defer
from twisted.internet.error import CannotListenError

from service.core.config import Config

log = logging.getLogger("scrapespy")


# Twisted's listenTCP backlog
LISTEN_BACKLOG = 50


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (0: any free port), not yet listening: a
    connection before the service is built is refused, as before it bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise CannotListenError(host, port, exc) from None
    return sock


def url_of(host: str, port: int) -> str:
    """The address of a service listening on ``host``:``port``; one listening on every
    interface is reached on this machine at the loopback address."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class ScrapespyService(Service):
    def __init__(
        self,
        config: Config,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        inherited_fd: int | None = None,
    ):
        self.config = config
        self.host = host
        self.port = port
        self.inherited_fd = inherited_fd
        self.service: Any = None
        self.bound: socket.socket | None = None
        self.listening: Any = None
        self.started: defer.Deferred[None] | None = None
        self.exit_code = 0

    def startService(self) -> None:  # noqa: N802 - Twisted's name
        super().startService()
        self.started = defer.ensureDeferred(self._start())
        self.started.addErrback(self._failed)

    async def _start(self) -> None:
        from service.core.reactor import running
        from service.process.server import build

        reactor = running()
        # The address is bound before the build, so that what the service tells its callers
        # (status_url, /docs) is where it listens, the port 0 stands for included; it accepts
        # connections once built.
        if self.inherited_fd is not None:
            family, fd = socket.AF_INET, self.inherited_fd
            with socket.socket(fileno=os.dup(fd)) as inherited:
                address = inherited.getsockname()
        else:
            self.bound = bound_socket(self.host, self.port)
            family, fd = self.bound.family, self.bound.fileno()
            address = self.bound.getsockname()
        self.service = await build(self.config.listening_at(url_of(address[0], address[1])))
        # What start-up built lives as long as the process: out of the collector's sight, a full
        # collection walks only what scrapes allocate (one took 75 ms with it, under load).
        gc.collect()
        gc.freeze()
        site = self.service.site()
        if self.bound is not None:
            self.bound.listen(LISTEN_BACKLOG)
        self.listening = reactor.adoptStreamPort(fd, family, site)
        if self.bound is not None:  # the port holds a socket of its own
            self.bound.close()
            self.bound = None
        bound = self.listening.getHost()
        log.info(
            "scrapespy listening on http://%s:%d",
            bound.host,
            bound.port,
            extra={"event": "listening"},
        )

    def _failed(self, failure: Any) -> None:
        from service.core.reactor import running

        log.error("scrapespy could not start: %s", failure.getErrorMessage())
        self.exit_code = 1
        if running().running:
            running().stop()

    def stopService(self) -> defer.Deferred[None]:  # noqa: N802 - Twisted's name
        super().stopService()
        return defer.ensureDeferred(self._stop())

    async def _stop(self) -> None:
        if self.started is not None and not self.started.called:
            await self.started
        if self.bound is not None:  # the start failed before it listened
            self.bound.close()
            self.bound = None
        if self.listening is not None:
            await self.listening.stopListening()
            self.listening = None
        if self.service is not None:
            log.info("scrapespy stopping", extra={"event": "stopping"})
            await self.service.stop()
            self.service = None
            log.info("scrapespy stopped", extra={"event": "stopped"})
        # twistd re-raises the stop signal at exit so the exit status names it; a drained,
        # settled shutdown is a success, so report 0 as `scrapespy serve` does.
        from service.core.reactor import running

        if getattr(running(), "_exitSignal", None) is not None:
            running()._exitSignal = None
