"""Signed webhooks of jobs: the deliveries of a job's ``webhook``, sent under the Standard
Webhooks scheme.

What a job's events are and when each is stored: service.jobs.batch_store (in the transaction of the
event) and service.jobs.webhook_store (the rows); a job's ``webhook`` is checked by
service.jobs.webhook_spec. This module sends the deliveries (:class:`WebhookSender`). A webhook
of another flavour (Firecrawl's, for the jobs of service.firecrawl) is delivered by the same
machinery with its own body and headers (service.jobs.webhook_flavours).

Signing is the ``standardwebhooks`` package's (the scheme's own reference library): each attempt
carries ``webhook-id`` (the delivery's, the same on every attempt, for receivers to drop
duplicates), ``webhook-timestamp`` (the attempt's) and ``webhook-signature`` (``v1,`` HMAC-SHA256
of ``id.timestamp.body`` under the account's secret).

Sending goes through the same rule as a scrape: the destination's name is resolved on the
reactor's asyncio loop (``loop.getaddrinfo``, a worker thread), each address is checked with
service.egress.addresses, and the connection is made to the checked address itself (a Twisted
``Agent`` over an endpoint bound to it, TLS verified against the URL's host name), so a name
cannot resolve to a public address for the check and to a private one for the connection. The
Agent is Twisted's own, on the reactor: no thread per delivery, no second HTTP stack. No
redirect is followed, the body of the answer is not read, and each attempt has a timeout. A 2xx
is delivered; anything else (connection refused, timeout, another status, a refused address) is
tried again after an exponential backoff (``webhook_retry_seconds`` x 4 per attempt, up to
``webhook_max_attempts``), then the delivery is ``failed``.

Every instance runs one loop that takes due deliveries under a lease
(service.jobs.webhook_store.claim), so the instances on one database share them. On SQLite the loop
sends them itself. On PostgreSQL it hands each to procrastinate as a task (:meth:`use_queue`);
a failed attempt defers the next one ``schedule_in`` its backoff and keeps the lease until
then, so the loop hands a delivery over again only when its task was lost.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Mapping
from datetime import UTC, datetime, timedelta
from io import BytesIO
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.defer import CancelledError, Deferred, DeferredList
from twisted.internet.defer import TimeoutError as DeferredTimeout
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint, wrapClientTLS
from twisted.internet.error import TimeoutError as ConnectTimeout
from twisted.internet.protocol import Protocol
from twisted.internet.ssl import optionsForClientTLS
from twisted.web.client import Agent, FileBodyProducer
from twisted.web.http_headers import Headers
from twisted.web.iweb import IAgentEndpointFactory
from zope.interface import implementer

from service.browser.egress import parse_test_public_hosts
from service.core.config import Config
from service.core.reactor import running
from service.db import Database
from service.egress.addresses import BLOCKED_MESSAGE, is_public_address, parse_host_literal
from service.jobs import webhook_store
from service.jobs.queue_worker import QueueWorker
from service.jobs.webhook_flavours import NATIVE, Flavour, Outgoing, flavour_of, native

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often an instance looks for due deliveries
IN_FLIGHT = 16  # deliveries one instance sends at once
BACKOFF_FACTOR = 4
USER_AGENT = "scrapespy-webhooks/1"
TASK = "scrapespy.webhook_delivery"
QUEUE = "webhooks"


class DeliveryFailed(Exception):
    """One attempt that did not get a 2xx: the message is stored as the delivery's last error."""


@implementer(IAgentEndpointFactory)
class _Bound:
    """The Agent's endpoint: the address already checked, whatever the URL's host says."""

    def __init__(self, endpoint: Any):
        self.endpoint = endpoint

    def endpointForURI(self, uri: Any) -> Any:
        return self.endpoint


class _Ignore(Protocol):
    """The receiver's body is not read: the connection is closed as soon as it begins."""

    def __init__(self, done: Deferred[None]):
        self.done = done

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.stopProducing()

    def connectionLost(self, reason: Any = None) -> None:
        if not self.done.called:
            self.done.callback(None)


class WebhookSender:
    def __init__(
        self,
        config: Config,
        database: Database,
        instance: str = "webhooks",
        flavours: Mapping[str, Flavour] | None = None,
    ):
        self.config = config
        self.flavours: dict[str, Flavour] = {NATIVE: native, **(flavours or {})}
        self.database = database
        self.instance = instance
        self.test_hosts = parse_test_public_hosts(config.egress_test_public_hosts)
        self.lease = timedelta(seconds=config.webhook_timeout_seconds * 2 + 30)
        self.busy: dict[int, Deferred[None]] = {}
        self._stopping = False
        self._wake: Deferred[None] | None = None
        self._loop: Deferred[None] | None = None
        # PostgreSQL: procrastinate's app (service.jobs.queue's), the task and this instance's
        # worker of the queue QUEUE
        self.app: Any = None
        self.task: Any = None
        self.worker: QueueWorker | None = None

    def use_queue(self, app: Any) -> None:
        """PostgreSQL: each attempt is a task of procrastinate's queue ``webhooks``, run by a
        worker of its own on every instance (a slow receiver never takes a job page's turn);
        a failed attempt schedules the next one as a task ``schedule_in`` its backoff, and a
        task whose worker died is run again by the job queue's recovery
        (service.jobs.queue.PostgresQueue)."""
        self.app = app
        self.task = app.task(name=TASK, queue=QUEUE)(self._task)

    # the loop -------------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = Deferred.fromCoroutine(self._run())
        self._loop.addErrback(lambda failure: log.error("webhook loop stopped: %s", failure.value))
        if self.app is not None:
            stalled = self.config.job_stalled_seconds
            self.worker = QueueWorker(
                self.app,
                "the webhook queue",
                queues=[QUEUE],
                concurrency=IN_FLIGHT,
                name=f"{self.instance}:webhooks",
                install_signal_handlers=False,
                delete_jobs="successful",
                update_heartbeat_interval=max(0.5, stalled / 4),
                stalled_worker_timeout=stalled,
                fetch_job_polling_interval=5.0,
            )
            self.worker.start()

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.called:
            self._wake.callback(None)

    async def _run(self) -> None:
        """Takes the due deliveries: sends them (SQLite), or hands them to the queue
        (PostgreSQL: new ones, and those whose task was lost)."""
        while not self._stopping:
            room = IN_FLIGHT - len(self.busy)
            found: list[int] = []
            if room > 0:
                try:
                    found = await self.database.run(webhook_store.due, room, set(self.busy))
                except Exception as exc:  # the database is down: look again later
                    log.warning("could not read the due webhook deliveries: %s", exc)
            for delivery_id in found:
                self.busy[delivery_id] = Deferred.fromCoroutine(self._take(delivery_id))
            self._wake = Deferred()
            timer = running().callLater(POLL_SECONDS, self._poke)
            await self._wake
            if timer.active():
                timer.cancel()

    def stop_taking(self) -> None:
        self._stopping = True
        self._poke()
        if self.worker is not None:
            self.worker.stop_taking()  # it finishes the attempts it runs

    async def stop(self) -> None:
        """Waits for the attempts in flight (each is bounded by its timeout)."""
        self.stop_taking()
        if self.busy:
            await DeferredList(list(self.busy.values()))
        if self.worker is not None:
            await self.worker.stop()

    # one attempt ----------------------------------------------------------------------------

    async def _take(self, delivery_id: int) -> None:
        try:
            claimed = await self.database.run(webhook_store.claim, delivery_id, self.lease)
            if claimed is None:
                return
            delivery, secret = claimed
            if self.task is None:
                await self._attempt(delivery, secret)
            else:  # the lease holds it until the task runs; if it never does, it is taken again
                await _await(
                    self.task.defer_async(delivery_id=delivery.id, attempts=delivery.attempts)
                )
        except Exception:  # the lease runs out and the delivery is taken again
            log.exception("webhook delivery %s could not be taken", delivery_id)
        finally:
            self.busy.pop(delivery_id, None)
            self._poke()

    async def _task(self, delivery_id: int, attempts: int) -> None:
        """The queue's task: runs on the worker, on the reactor's asyncio loop."""
        await Deferred.fromCoroutine(self._resume(delivery_id, attempts)).asFuture(
            asyncio.get_running_loop()
        )

    async def _resume(self, delivery_id: int, attempts: int) -> None:
        resumed = await self.database.run(webhook_store.resume, delivery_id, attempts, self.lease)
        if resumed is not None:
            await self._attempt(*resumed)

    async def _attempt(self, delivery: webhook_store.Delivery, secret: str) -> None:
        """Sends once and records it; schedules the next attempt when there is one."""
        error: str | None = None
        try:
            await self.send(delivery, secret)
        except DeliveryFailed as exc:
            error = str(exc)
            log.info(
                "webhook delivery %s, attempt %d: %s",
                delivery.message_id,
                delivery.attempts + 1,
                error,
            )
        retry_in = None
        if error is not None and delivery.attempts + 1 < self.config.webhook_max_attempts:
            retry_in = timedelta(
                seconds=self.config.webhook_retry_seconds * BACKOFF_FACTOR**delivery.attempts
            )
        queued_for = self.lease if retry_in is not None and self.task is not None else None
        await self.database.run(webhook_store.finish, delivery.id, error, retry_in, queued_for)
        if queued_for is not None and retry_in is not None:
            deferrer = self.task.configure(schedule_in={"seconds": retry_in.total_seconds()})
            await _await(
                deferrer.defer_async(delivery_id=delivery.id, attempts=delivery.attempts + 1)
            )

    async def send(self, delivery: webhook_store.Delivery, secret: str) -> None:
        """One signed POST of the delivery's payload; raises DeliveryFailed unless a 2xx."""
        parts = urlsplit(delivery.url)
        host = parts.hostname or ""
        https = parts.scheme.lower() == "https"
        port = parts.port or (443 if https else 80)
        address = await self._address(host, port)
        timeout = self.config.webhook_timeout_seconds
        reactor = running()
        endpoint_type = TCP6ClientEndpoint if ":" in address else TCP4ClientEndpoint
        endpoint: Any = endpoint_type(reactor, address, port, timeout=timeout)
        if https:
            endpoint = wrapClientTLS(optionsForClientTLS(host), endpoint)
        agent = Agent.usingEndpointFactory(reactor, _Bound(endpoint))
        outgoing = self._outgoing(delivery, secret)
        headers = {"content-type": "application/json", "user-agent": USER_AGENT}
        headers |= {name.lower(): value for name, value in outgoing.headers.items()}
        request = agent.request(
            b"POST",
            delivery.url.encode(),
            Headers({name.encode(): [value.encode()] for name, value in headers.items()}),
            FileBodyProducer(BytesIO(outgoing.body)),
        )
        request.addTimeout(timeout, reactor)
        try:
            response = await request
        except Exception as exc:
            raise DeliveryFailed(_why(exc, timeout)) from None
        done: Deferred[None] = Deferred()
        response.deliverBody(_Ignore(done))
        done.addTimeout(timeout, reactor)
        try:
            await done
        except DeferredTimeout:  # the status is all that counts
            pass
        if not 200 <= response.code < 300:
            raise DeliveryFailed(f"the receiver answered HTTP {response.code}")

    def _outgoing(self, delivery: webhook_store.Delivery, secret: str) -> Outgoing:
        """The attempt's body and headers, by the webhook's flavour; a flavour this process
        has no builder for (or whose builder fails) is a failed attempt, tried again."""
        flavour = self.flavours.get(flavour_of(delivery))
        if flavour is None:
            raise DeliveryFailed(f"no sender for webhooks of flavour {flavour_of(delivery)!r}")
        try:
            return flavour(delivery, secret, datetime.now(UTC))
        except Exception as exc:
            log.exception("webhook delivery %s could not be built", delivery.message_id)
            raise DeliveryFailed(f"the delivery could not be built: {exc}") from None

    async def _address(self, host: str, port: int) -> str:
        """The first address of ``host`` the service may reach; raises DeliveryFailed."""
        name = host.lower().rstrip(".")
        if name in self.test_hosts:
            return self.test_hosts[name]
        literal = parse_host_literal(name)
        if literal is not None:
            found = [str(literal)]
        else:
            loop = asyncio.get_running_loop()
            try:
                infos = await Deferred.fromFuture(
                    asyncio.ensure_future(
                        asyncio.wait_for(
                            loop.getaddrinfo(name, port, type=socket.SOCK_STREAM),
                            self.config.webhook_timeout_seconds,
                        )
                    )
                )
            except (OSError, UnicodeError, TimeoutError):
                raise DeliveryFailed(f"cannot resolve {host}") from None
            found = list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))
        allowed = [a for a in found if self.config.allow_private_targets or is_public_address(a)]
        if not allowed:
            raise DeliveryFailed(f"{host}: {BLOCKED_MESSAGE}")
        return allowed[0]

    # the account's secret (the dashboard) ----------------------------------------------------

    async def secret(self, account_id: int) -> str:
        return await self.database.run(webhook_store.secret_of, account_id)

    async def rotate(self, account_id: int) -> str:
        return await self.database.run(webhook_store.rotate, account_id)


def _await(awaitable: Awaitable[Any]) -> Deferred[Any]:
    """An asyncio awaitable as a Deferred: both run on the reactor's asyncio loop."""
    return Deferred.fromFuture(asyncio.ensure_future(awaitable))


def _why(exc: Exception, timeout: float) -> str:
    """What the delivery's ``last_error`` says of an attempt that got no answer."""
    timed_out = (CancelledError, DeferredTimeout, ConnectTimeout)
    # twisted.web wraps what happened under the request (ResponseNeverReceived and kin)
    reasons = getattr(exc, "reasons", None) or []
    if isinstance(exc, timed_out) or any(reason.check(*timed_out) for reason in reasons):
        return f"no answer within {timeout:g} seconds"
    if reasons:
        return f"connection failed: {reasons[0].getErrorMessage()}"
    return f"connection failed: {exc.__class__.__name__}: {exc}"
