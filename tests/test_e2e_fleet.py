"""The fleet on one machine: killing machines under load loses nothing.

Three API instances and two job workers, each ``scrapespy serve`` with what deploy/compose.yaml
gives it (a worker is an instance no caller reaches, with 16 pages of jobs in flight), on a
PostgreSQL database of their own and the machine's Redis (a Redis database of their own, so that
other tests' limits never meet theirs), behind deploy/haproxy.cfg on 127.0.0.1 as
harness.balancer renders it for tests/test_e2e_load_balancer.py too: only Docker's addresses and
the port replaced. The load balancer is the recipe's own HAProxy rather than an nginx written for
the test, so what is proven is what deploy/ ships.

At once: a crawl of a local site of 1,000 linked pages, a batch of 500 URLs (sent once a fifth of
the crawl is done), and callers of ``POST /scrape`` on both engines (static and js, each caller
with a key of its own, a bounded number of scrapes each). A few pages are held at the site: some
of the batch's, and three scrapes sent through HAProxy. Once a worker is fetching one of the
batch's and the three scrapes are being fetched, that worker and an API instance fetching one
of them are killed with SIGKILL, each with its whole process tree (its Chromium and extraction
workers), as a machine dies; then the pages are let go. Afterwards:

- every page of the crawl and of the batch is done, its result right, and billed exactly once
  (job_pages, usage); a page may have been fetched twice (the site counts its hits) only by the
  attempt that took it over from the dead;
- every scrape was answered within its timeout and a margin: a success billed once, or a failure
  with a code of service.core.errors that billed nothing. A scrape in flight on the killed
  instance is answered by HAProxy: 502, the recipe's JSON error with ``X-Error-Code:
  unavailable``. The held one was not billed; one that the site had answered may have been
  billed once (the settlement travels while the page is parsed) though its answer died with the
  machine, never twice: the test counts those apart;
- the ledger is exact to the credit: the credits granted less the sum of the usage rows' charges
  is the balance, the sum of the ledger's entries, and the billed pages times their prices;
- the rate limit is one for all instances: a key that sends a burst and a bit more to each of
  the three at once is let through one burst (and what the rate adds meanwhile), not three;
- no hold is left held.

The js engine renders on two browser servers (``scrapespy browser``, the pool of
``SCRAPESPY_BROWSER_ENDPOINTS``) that every instance shares; one of them is killed with SIGKILL
beside the API instance and the worker, so js scrapes in flight on it are rendered again on the
other or answered as a clean, unbilled failure, under the same assertions as every scrape.

Run alone with ``pytest -m fleet`` (it needs PostgreSQL on 127.0.0.1, Redis on 127.0.0.1:6379
and ``haproxy``), and in the PostgreSQL pass of ``make test``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
from sqlalchemy import select

from harness.balancer import free_port, local_config
from harness.browsers import TOKEN, BrowserServer
from harness.fleet import Gate, connection_owner, kill_machine
from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.billing import keys
from service.core.errors import ERROR_CODES, FAILURE_CODES
from service.db.tables import holds, job_pages, jobs, usage
from service.jobs.queue import pages_per_task
from tests.conftest import a_database_of_its_own
from tests.test_e2e_batch import FINISHED
from tests.test_e2e_load_balancer import ENV as API_ENV

pytestmark = [
    pytest.mark.fleet,
    pytest.mark.postgres,
    pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed"),
    pytest.mark.long(minutes=3),
]

# db 9 of the machine's Redis is the fleet's own; the suite's other Redis tests use db 0
REDIS_URL = "redis://127.0.0.1:6379/9"
LIMIT_PREFIXES = ("scrapespy:rl:", "scrapespy:rl-reads:")
RATE, BURST = 2, 10  # every key's limit: 10 at once, then 2 a second
WORKER_ENV = {**API_ENV, "SCRAPESPY_JOB_PAGES_IN_FLIGHT": "16"}  # compose.yaml's workers
API_INSTANCES, WORKERS, BROWSER_SERVERS = 3, 2, 2
CRAWL_PAGES, BATCH_PAGES = 1000, 500
FAN_OUT = 10  # links from each crawl page to the next level: 1,000 pages 3 levels deep
# the batch's pages held at the site until the kills: one in each of eight of its tasks, more
# than the API instances have pages in flight (2 each), so that a worker fetches some
TASK = pages_per_task(BATCH_PAGES, int(API_ENV["SCRAPESPY_JOB_PAGES_IN_FLIGHT"]))
HELD_BATCH = [TASK * n + TASK // 2 for n in range(4, 12)]
HELD_SCRAPES = 3  # scrapes held at the site until the kills, sent through HAProxy at once
CALLERS = ("static", "static", "js", "js")  # the engine of each caller of POST /scrape
PRICES = {"static": 1, "js": 5}  # the default price list, without a proxy
PACE = 1.0  # seconds between a caller's scrapes at least: under the limit of its key
TIMEOUT = 20  # each scrape's own timeout, seconds
BATCH_TIMEOUT = 60  # the batch's pages' timeout: a held page waits for the kills
MARGIN = 30  # what an answer may take past its timeout on a loaded machine
SCRAPES_EACH = 400  # a caller's scrapes at most
CREDITS = 100_000
KILL_AFTER = CRAWL_PAGES // 5  # crawl pages done before the batch is sent and the kills
DEADLINE = 480  # seconds the jobs may take to finish, from the crawl's start
PATIENCE = 30  # seconds to wait for a worker to fetch a held page of the batch
STALLED = 10  # SCRAPESPY_JOB_STALLED_SECONDS: a dead instance's pages are taken over after it
HOLD_TTL = 90  # SCRAPESPY_HOLD_TTL_SECONDS: a dead instance's holds are released after it


def page(title: str, *links: str, script: str = "") -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return (
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>The text of {title}.</p>{anchors}{script}</body></html>"
    ).encode()


def crawl_path(n: int) -> str:
    return f"/crawl/{n}"


def build_site(gate: Gate) -> TargetSite:
    """The crawl's pages (each links to the next level's and to its parent), the batch's, one
    page for each scrape a caller may send (a js one renders its title), and the held ones."""
    site = TargetSite()
    for n in range(CRAWL_PAGES):
        children = range(FAN_OUT * n + 1, min(FAN_OUT * n + FAN_OUT + 1, CRAWL_PAGES))
        parent = [crawl_path((n - 1) // FAN_OUT)] if n else []
        site.page(crawl_path(n), page(f"Crawl {n}", *(crawl_path(c) for c in children), *parent))
    for n in range(BATCH_PAGES):
        body = page(f"Batch {n}", "/batch/0")
        if n in HELD_BATCH:
            gate.hold(site, f"/batch/{n}", body)
        else:
            site.page(f"/batch/{n}", body)
    for caller, engine in enumerate(CALLERS):
        for n in range(SCRAPES_EACH):
            script = ""
            if engine == "js":
                script = f'<script>document.title = "Rendered {caller} {n}";</script>'
            site.page(f"/scrape/{engine}/{caller}/{n}", page(f"Scrape {n}", script=script))
    for n in range(HELD_SCRAPES):
        gate.hold(site, f"/held/{n}", page(f"Held {n}"))
    return site.start()


@dataclass
class Fleet:
    base: str  # HAProxy's address, the callers'
    api: list[ServiceProcess]
    workers: list[ServiceProcess]
    accounts: Accounts
    redis: redis.Redis
    browsers: list[BrowserServer]

    def run(self, read: Callable[..., Any], *args: Any) -> Any:
        return self.accounts.database.run_sync(read, *args)


@pytest.fixture
def fleet_database(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path, backend="postgresql")


@pytest.fixture
def fleet_redis() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError:
        client.close()
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL}")
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    yield client
    client.close()


@pytest.fixture
def listen_port() -> int:
    return free_port()


@pytest.fixture
def browsers() -> Iterator[list[BrowserServer]]:
    """The fleet's two browser servers."""
    started = [BrowserServer(free_port()).start() for _ in range(BROWSER_SERVERS)]
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def instance_env(
    fleet_database: tuple[str, Accounts],
    fleet_redis: redis.Redis,
    listen_port: int,
    browsers: list[BrowserServer],
) -> dict[str, str]:
    """What every instance of the fleet is given besides its role's settings: the database,
    Redis, the browser servers, the address callers use, the limit the test measures and how
    soon a dead instance's pages and holds are taken back."""
    return {
        "SCRAPESPY_BROWSER_ENDPOINTS": ",".join(server.endpoint for server in browsers),
        "SCRAPESPY_BROWSER_ENDPOINT_TOKEN": TOKEN,
        "SCRAPESPY_DATABASE_URL": fleet_database[0],
        "SCRAPESPY_REDIS_URL": REDIS_URL,
        "SCRAPESPY_PUBLIC_URL": f"http://127.0.0.1:{listen_port}",
        "SCRAPESPY_RATE_LIMIT_PER_SECOND": str(RATE),
        "SCRAPESPY_RATE_LIMIT_BURST": str(BURST),
        "SCRAPESPY_JOB_STALLED_SECONDS": str(STALLED),
        "SCRAPESPY_HOLD_TTL_SECONDS": str(HOLD_TTL),
        "SCRAPESPY_SWEEP_INTERVAL_SECONDS": "2",
    }


@pytest.fixture
def fleet(
    fleet_database: tuple[str, Accounts],
    fleet_redis: redis.Redis,
    instance_env: dict[str, str],
    listen_port: int,
    browsers: list[BrowserServer],
    tmp_path: Path,
) -> Iterator[Fleet]:
    url, accounts = fleet_database
    roles = [("api", API_ENV)] * API_INSTANCES + [("worker", WORKER_ENV)] * WORKERS
    started: list[ServiceProcess] = []
    for n, (role, env) in enumerate(roles):
        folder = tmp_path / f"{role}{n}"
        folder.mkdir()
        started.append(
            ServiceProcess(url, folder, env={**env, **instance_env}, log_path=folder / "log")
        )
    proxy = None
    try:
        # started together: each waits for its own Chromium and queue, not for the others
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(lambda instance: instance.start(), started))
        api, workers = started[:API_INSTANCES], started[API_INSTANCES:]
        ports = [int(instance.base.rsplit(":", 1)[1]) for instance in api]
        config = local_config(ports, listen_port, tmp_path)
        proxy = subprocess.Popen(
            ["haproxy", "-db", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{listen_port}"
        until("HAProxy answers /healthz", lambda: healthy(base), timeout=60, step=0.2)
        yield Fleet(base, api, workers, accounts, fleet_redis, browsers)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        for instance in started:
            instance.stop(timeout=60)


def healthy(base: str) -> bool:
    try:
        return call("GET", f"{base}/healthz", timeout=5).status == 200
    except OSError:
        return False


def until(what: str, check: Callable[[], Any], timeout: float, step: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(step)


def header(reply: Reply, name: str) -> str | None:
    """A header of the answer, whatever its case (HAProxy writes its own in lower case)."""
    return next((v for k, v in reply.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Sent:
    """One scrape sent through HAProxy, and what came back."""

    engine: str
    path: str
    sent_at: float
    elapsed: float
    reply: Reply | None
    failure: str | None = None  # no HTTP answer at all


@dataclass
class Callers:
    """The callers of POST /scrape, each with its own key: one scrape at a time, at most one a
    :data:`PACE` (under its key's limit), until :attr:`stop` or :data:`SCRAPES_EACH` scrapes."""

    base: str
    site: TargetSite
    keys: list[str]
    stop: threading.Event = field(default_factory=threading.Event)
    sent: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def scrape(self, key: str, engine: str, path: str) -> float:
        body = {"url": self.site.url(path), "engine": engine, "timeout": TIMEOUT}
        begun = time.monotonic()
        reply, failure = None, None
        try:
            reply = call("POST", f"{self.base}/scrape", body, key=key, timeout=TIMEOUT + MARGIN)
        except OSError as exc:
            failure = f"{type(exc).__name__}: {exc}"
        elapsed = time.monotonic() - begun
        with self.lock:
            self.sent.append(Sent(engine, path, begun, elapsed, reply, failure))
        return elapsed

    def run(self, caller: int) -> None:
        engine = CALLERS[caller]
        for n in range(SCRAPES_EACH):
            if self.stop.is_set():
                return
            elapsed = self.scrape(self.keys[caller], engine, f"/scrape/{engine}/{caller}/{n}")
            self.stop.wait(max(0.0, PACE - elapsed))


def job_pages_of(conn: Any, job_id: str) -> list[Any]:
    columns = (job_pages.c.url, job_pages.c.status, job_pages.c.attempt, job_pages.c.result)
    return list(
        conn.execute(
            select(*columns)
            .join(jobs, jobs.c.seq == job_pages.c.job_seq)
            .where(jobs.c.public_id == job_id)
        ).all()
    )


def done_pages(conn: Any, job_id: str) -> int:
    return sum(row.status == "done" for row in job_pages_of(conn, job_id))


def charges_of(conn: Any, account_id: int) -> list[Any]:
    query = select(usage.c.url, usage.c.credits).where(usage.c.account_id == account_id)
    return list(conn.execute(query).all())


def held_holds(conn: Any) -> int:
    return len(conn.execute(select(holds.c.id).where(holds.c.status == "held")).all())


def probe_the_limit(fleet: Fleet, key: str, site: TargetSite) -> tuple[int, int, float]:
    """A burst and two more of one key to each API instance at once: (let through, refused,
    the seconds it took). The key's account has no credit, so what the limit lets through is a
    402 and nothing is scraped."""
    body = {"url": site.url("/batch/0")}
    targets = [instance.url("/scrape") for instance in fleet.api for _ in range(BURST + 2)]
    begun = time.monotonic()
    with ThreadPoolExecutor(len(targets)) as pool:
        replies = list(pool.map(lambda url: call("POST", url, body, key=key), targets))
    took = time.monotonic() - begun
    for reply in replies:
        assert reply.status in (402, 429), (reply.status, reply.body)
        if reply.status == 429:
            assert header(reply, "X-Error-Code") == "rate_limited"
            assert int(header(reply, "Retry-After") or 0) >= 1
    let_through = sum(reply.status == 402 for reply in replies)
    return let_through, len(replies) - let_through, took


def test_killing_an_api_instance_and_a_worker_under_load_loses_nothing(fleet: Fleet) -> None:
    clock = time.monotonic()
    gate = Gate(longest=BATCH_TIMEOUT)
    site = build_site(gate)
    accounts = fleet.accounts
    account_id, job_key = accounts.create(credits=CREDITS)
    caller_keys = [fleet.run(keys.create, account_id) for _ in CALLERS]
    probe_account, probe_key = accounts.create()
    callers = Callers(fleet.base, site, caller_keys)
    threads = [threading.Thread(target=callers.run, args=(n,)) for n in range(len(CALLERS))]
    held_scrapes = [
        threading.Thread(target=callers.scrape, args=(caller_keys[0], "static", f"/held/{n}"))
        for n in range(HELD_SCRAPES)
    ]

    def finished(job_id: str) -> dict[str, Any] | None:
        reply = call("GET", f"{fleet.base}/jobs/{job_id}", key=job_key)
        assert reply.status in (200, 429), reply.body
        if reply.status == 200 and reply.json["status"] in FINISHED:
            return reply.json if reply.json["counts"]["pending"] == 0 else None
        return None

    def worker_holding_a_page() -> ServiceProcess | None:
        for path, port in gate.held().items():
            owner = connection_owner(port, fleet.workers)
            if path.startswith("/batch/") and owner is not None:
                return owner
        return None

    def holders() -> dict[str, str]:
        """Who fetches each held page, for a failure's message."""
        names = {id(one): f"api{n}" for n, one in enumerate(fleet.api)}
        names.update({id(one): f"worker{n}" for n, one in enumerate(fleet.workers)})
        everyone = [*fleet.api, *fleet.workers]
        found = {path: connection_owner(port, everyone) for path, port in gate.held().items()}
        return {path: names.get(id(owner), "none") for path, owner in found.items()}

    def scrapes_held() -> dict[str, int] | None:
        waiting = gate.held()
        return waiting if all(f"/held/{n}" in waiting for n in range(HELD_SCRAPES)) else None

    try:
        crawl = call(
            "POST",
            f"{fleet.base}/crawl",
            {
                "url": site.url(crawl_path(0)),
                "max_pages": CRAWL_PAGES,
                "include_paths": ["^/crawl/"],
                "sitemap": "skip",
            },
            key=job_key,
        )
        assert crawl.status == 202, crawl.body
        crawl_id = crawl.json["id"]
        jobs_started = time.monotonic()
        for thread in threads:
            thread.start()
        limit = probe_the_limit(fleet, probe_key, site)
        assert fleet.redis.exists(LIMIT_PREFIXES[0] + keys.hash_key(probe_key))  # kept in Redis

        until(
            "a fifth of the crawl done",
            lambda: fleet.run(done_pages, crawl_id) >= KILL_AFTER,
            timeout=DEADLINE,
        )
        batch_urls = [site.url(f"/batch/{n}") for n in range(BATCH_PAGES)]
        batch_body = {"urls": batch_urls, "timeout": BATCH_TIMEOUT}
        batch = call("POST", f"{fleet.base}/batch", batch_body, key=job_key)
        assert batch.status == 202, batch.body
        batch_id = batch.json["id"]
        try:
            victim_worker = until("a worker fetching a held page", worker_holding_a_page, PATIENCE)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the held pages' fetchers: {holders()}") from None
        for thread in held_scrapes:
            thread.start()
        held = until("the held scrapes at the site", scrapes_held, timeout=TIMEOUT, step=0.05)
        owners = [connection_owner(held[f"/held/{n}"], fleet.api) for n in range(HELD_SCRAPES)]
        victim_api = next(owner for owner in owners if owner is not None)
        dying_pages = [  # the batch's pages the worker is fetching as it dies
            path
            for path, port in held.items()
            if path.startswith("/batch/") and connection_owner(port, [victim_worker])
        ]
        at_kill = {
            "crawl done": fleet.run(done_pages, crawl_id),
            "batch done": fleet.run(done_pages, batch_id),
            "held": sorted(held),
            "the worker's": dying_pages,
        }
        killed_at = time.monotonic()
        kill_machine(victim_api)
        gone_at = time.monotonic()  # a scrape sent to it until then may die with it
        kill_machine(victim_worker)
        fleet.browsers[0].kill_machine()
        gate.open()
        print(f"\nfleet: killed {killed_at - jobs_started:.0f} s into the jobs, at {at_kill}")

        remaining = DEADLINE - (time.monotonic() - jobs_started)
        crawl_found = until("the crawl finished", lambda: finished(crawl_id), remaining, 2)
        remaining = DEADLINE - (time.monotonic() - jobs_started)
        batch_found = until("the batch finished", lambda: finished(batch_id), remaining, 2)
        jobs_took = time.monotonic() - jobs_started
    finally:
        gate.open()
        callers.stop.set()
        for thread in [*threads, *held_scrapes]:
            if thread.is_alive():
                thread.join(TIMEOUT + MARGIN + 5)
        site.stop()

    # nothing left held: the dead instances' holds expire and are released
    until("no hold left held", lambda: fleet.run(held_holds) == 0, HOLD_TTL + 60, 1)
    assert accounts.summary(account_id)["held"] == 0

    # the crawl and the batch: each page done once, its result right, billed once
    charges = fleet.run(charges_of, account_id)
    billed = Counter(row.url for row in charges if row.credits > 0)
    fetched_twice = taken_over = 0
    for found, job_id, paths in (
        (crawl_found, crawl_id, [crawl_path(n) for n in range(CRAWL_PAGES)]),
        (batch_found, batch_id, [f"/batch/{n}" for n in range(BATCH_PAGES)]),
    ):
        rows = {row.url: row for row in fleet.run(job_pages_of, job_id)}
        not_done = [(url, row.result) for url, row in rows.items() if row.status != "done"]
        assert found["status"] == "completed"
        assert found["counts"] == {
            "done": len(paths),
            "failed": 0,
            "blocked": 0,
            "pending": 0,
            "skipped": 0,
        }, not_done[:3]
        assert found["credits_charged"] == len(paths) * PRICES["static"]
        assert sorted(rows) == sorted(site.url(path) for path in paths)
        for path in paths:
            row = rows[site.url(path)]
            result = orjson.loads(row.result)
            assert result["success"] is True, (path, result)
            assert result["title"] == path.strip("/").replace("/", " ").title(), path
            assert billed[site.url(path)] == 1, path
            hits = site.count(path)
            assert hits >= 1, path
            taken_over += row.attempt > 1
            if hits > 1:  # fetched again only by the attempt that took it over
                assert row.attempt > 1, path
                fetched_twice += 1
    batch_rows = {row.url: row for row in fleet.run(job_pages_of, batch_id)}
    for path in dying_pages:  # fetched by the dead worker, then by the one that took it over
        assert site.count(path) >= 2 and batch_rows[site.url(path)].attempt > 1, path

    # every scrape answered in time: a success billed once, or a clean failure billed nothing
    sent = list(callers.sent)
    assert not [one.failure for one in sent if one.failure]
    outcomes: Counter[str] = Counter()
    scrape_charges = 0
    for one in sent:
        reply = one.reply
        assert reply is not None
        assert one.elapsed <= TIMEOUT + MARGIN, (one.path, one.elapsed)
        url = site.url(one.path)
        lost = header(reply, "X-Request-Id") is None  # HAProxy's own answer
        if reply.status == 200 and reply.json["success"]:
            assert reply.json["engine"] == one.engine
            if one.engine == "js":
                caller, n = one.path.split("/")[3:]
                assert reply.json["title"] == f"Rendered {caller} {n}"
            assert billed[url] == 1, one.path
            scrape_charges += PRICES[one.engine]
            outcomes[f"{one.engine} success"] += 1
            continue
        if lost:  # its instance died with it
            assert reply.status == 502, (reply.status, reply.body)
            assert header(reply, "X-Error-Code") == "unavailable"
            assert set(reply.json) == {"error"} and one.sent_at < gone_at
            assert billed[url] <= (0 if one.path.startswith("/held/") else 1), one.path
            scrape_charges += billed[url] * PRICES[one.engine]
            outcomes[f"{one.engine} lost with its instance, billed {billed[url]}"] += 1
            continue
        if reply.status == 200:
            assert reply.json["error_code"] in FAILURE_CODES, reply.json
            outcomes[f"{one.engine} failed: {reply.json['error_code']}"] += 1
        else:
            assert set(reply.json) == {"error"}, reply.body
            assert header(reply, "X-Error-Code") in ERROR_CODES, reply.headers
            outcomes[f"{one.engine} {reply.status} {header(reply, 'X-Error-Code')}"] += 1
        assert billed[url] == 0, one.path
    assert outcomes["static lost with its instance, billed 0"]  # the held one, at least
    before = sum(one.sent_at < killed_at for one in sent)
    assert before and len(sent) - before  # the scrapes went on across the kills

    # the ledger, exact to the credit
    summary = accounts.summary(account_id)
    charged = sum(row.credits for row in charges)
    assert charged == (CRAWL_PAGES + BATCH_PAGES) * PRICES["static"] + scrape_charges
    assert summary["balance"] == CREDITS - charged
    assert accounts.entries_sum(account_id) == summary["balance"]

    # the rate limit, one for all instances: one burst let through, not three
    let_through, refused, took = limit
    assert BURST <= let_through <= BURST + RATE * took + 1, limit
    assert accounts.summary(probe_account)["balance"] == 0
    assert not fleet.run(charges_of, probe_account)

    for key in (job_key, probe_key, *caller_keys):
        for prefix in LIMIT_PREFIXES:
            fleet.redis.delete(prefix + keys.hash_key(key))
    print(
        f"fleet: {time.monotonic() - clock:.0f} s in the test, the jobs took {jobs_took:.0f} s;"
        f" {taken_over} pages taken over, {fetched_twice} fetched twice; {len(sent)} scrapes:"
        f" {dict(outcomes)}; the limit let {let_through} through and refused {refused}"
        f" in {took:.1f} s"
    )
