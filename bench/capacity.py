"""Capacity figures: what a page costs each piece of a deployment, and what 1M and 10M pages a
day need; bench/results/capacity.json, rendered into docs/capacity.md.

    .venv/bin/python -m bench.capacity           # a few minutes; BENCH_CAPACITY_SECONDS per load
    .venv/bin/python -m bench.capacity --doc     # docs/capacity.md again from the committed JSON

On one PostgreSQL database of its own, instances as the recipe (deploy/) runs them:

- **per core**: static scrapes at c=32 and js scrapes at c=4 against one instance, driven by wrk;
  pages a second over the CPU seconds the instance's whole process tree (the service, its
  extraction workers, its browser) spent, i.e. pages a second a fully used core gives;
- **per browser server**: js scrapes at c=4 through one ``scrapespy browser`` server
  (``SCRAPESPY_BROWSER_ENDPOINTS``); the server's tree and the instance's CPU apart;
- **PostgreSQL per page**: a fixed number of scrapes of each engine, one by one, with the
  database's ``log_statement = all``: the statements it ran (its server log), the transactions
  and rows written (``pg_stat_database``), the WAL its records took (``pg_waldump`` between two
  positions, so another database's writes in the same seconds do not count), each less what the
  same instance did idle (its job queue's polls) for as long, and the database's growth, all per
  page; and PostgreSQL's own CPU per page (its backends' processes);
- **through the load balancer**: static c=32 through the recipe's HAProxy in front of two
  instances, against one instance directly, in turns within this run (the ratio to read).

Every figure is a measurement of this machine; docs/capacity.md derives the table of machines
from them (:func:`render`), so the document never says more than the JSON does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.contenders import postgres_database, scrapespy
from bench.run import RESULTS, wrk
from bench.site import serve, server_name, tear_down
from harness.balancer import start_haproxy
from harness.pages import write_pages
from harness.procinfo import cpu_seconds
from harness.service import call

SECONDS = float(os.environ.get("BENCH_CAPACITY_SECONDS", "10"))
PAGES_FOR_POSTGRES = int(os.environ.get("BENCH_CAPACITY_PG_PAGES", "200"))
TURNS = 3
IDLE_SECONDS = 10
FLUSH_SECONDS = 11
RECIPE_ENV = {  # what deploy/k8s/api.yaml and deploy/compose.yaml set on an instance
    "SCRAPESPY_EXTRACT_WORKERS": "2",
    "SCRAPESPY_DB_THREADS": "2",
    "SCRAPESPY_MAX_PAGES": "4",
}
_RECORD = re.compile(r"len \(rec/tot\):\s*\d+/\s*(?P<tot>\d+), tx:\s*(?P<tx>\d+)")
PG_WALDUMP = Path(os.environ.get("BENCH_PG_WALDUMP", "/usr/lib/postgresql/15/bin/pg_waldump"))
PG_WAL = Path(os.environ.get("BENCH_PG_WAL", "/var/lib/postgresql/15/main/pg_wal"))
POSTGRES_LOG = Path(
    os.environ.get("BENCH_POSTGRES_LOG", "/var/log/postgresql/postgresql-15-main.log")
)
JSON = RESULTS / "capacity.json"
DOC = Path(__file__).resolve().parent.parent / "docs" / "capacity.md"
DAY = 86_400
PEAK = 3  # the busiest hour's rate over the day's average that the table provisions for
POSTGRES_CORES = 16  # one PostgreSQL machine's cores, where the table names its limit


def loaded(pids: list[int], base: str, concurrency: int, env: dict[str, str]) -> dict[str, Any]:
    """wrk at ``concurrency`` for SECONDS; the CPU of each tree in ``pids`` over it."""
    before = [cpu_seconds(pid) for pid in pids]
    out = wrk("scrapespy.lua", base, concurrency, env, SECONDS)
    cpu = [cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
    pages = max(out["requests"] - out["failed"] - out["socket_errors"], 0)
    seconds = out["duration_us"] / 1e6
    return {
        "pages": pages,
        "failed": out["failed"] + out["socket_errors"],
        "pages_per_second": round(pages / seconds, 1),
        "p50_ms": round(out["p50_us"] / 1000, 1),
        "cpu_ms_per_page": [round(c / max(pages, 1) * 1000, 2) for c in cpu],
    }


def per_core(cpu_ms_per_page: float) -> float:
    return round(1000 / cpu_ms_per_page, 1) if cpu_ms_per_page else 0.0


class Postgres:
    """What one database of the server did between two readings."""

    def __init__(self, database_url: str):
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url

        url = make_url(database_url)
        self.name = url.database
        self.admin = create_engine(url, isolation_level="AUTOCOMMIT")

    def reading(self) -> dict[str, Any]:
        from sqlalchemy import text

        with self.admin.connect() as conn:
            row = conn.execute(
                text(
                    "SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + tup_deleted,"
                    " pg_current_wal_lsn()::text, pg_database_size(datname), datid"
                    " FROM pg_stat_database WHERE datname = :name"
                ),
                {"name": self.name},
            ).one()
            conn.execute(text("SELECT pg_stat_clear_snapshot()"))
        transactions, rows, lsn, size, oid = row
        self.oid = int(oid)
        return {
            "transactions": float(transactions),
            "rows_written": float(rows),
            "lsn": lsn,
            "size_bytes": float(size),
        }

    def wal_bytes(self, start: str, end: str) -> int:
        """The WAL this database's records took between two positions (``pg_waldump``): records
        on its relations, and the commits of the transactions that wrote them."""
        done = subprocess.run(
            [PG_WALDUMP, "-p", str(PG_WAL), "-s", start, "-e", end],
            capture_output=True,
            text=True,
            timeout=300,
        )
        ours = f"/{self.oid}/"
        writers: set[str] = set()
        total = 0
        for line in done.stdout.splitlines():
            found = _RECORD.search(line)
            if found is None:
                continue
            size, tx = int(found["tot"]), found["tx"]
            if ours in line:
                total += size
                writers.add(tx)
            elif tx in writers and "desc: COMMIT" in line:
                total += size
        return total

    def backends_cpu(self) -> float:
        """CPU seconds of the server processes now serving this database."""
        from sqlalchemy import text

        with self.admin.connect() as conn:
            pids = conn.execute(
                text(
                    "SELECT pid FROM pg_stat_activity"
                    " WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": self.name},
            ).scalars()
            return sum(cpu_seconds(pid) for pid in pids)

    def log_statements(self, on: bool) -> None:
        from sqlalchemy import text

        with self.admin.connect() as conn:
            value = "all" if on else "none"
            conn.execute(text(f"ALTER DATABASE \"{self.name}\" SET log_statement = '{value}'"))

    def statements_logged(self, since: int, until: int) -> int:
        """Statements of this database in the server's log between two of its sizes."""
        pattern = re.compile(rf"@{re.escape(self.name)} LOG:  (statement|execute [^:]*):")
        with POSTGRES_LOG.open("rb") as log:
            log.seek(since)
            lines = log.read(until - since).decode("utf-8", "replace").splitlines()
        return sum(1 for line in lines if pattern.search(line))


def log_size() -> int:
    return POSTGRES_LOG.stat().st_size


def postgres_per_page(
    pg: Postgres, database_url: str, work: Path, target: str, engine: str, page: str
) -> dict[str, Any]:
    """PAGES_FOR_POSTGRES scrapes of ``engine``, one by one, on an instance started after the
    database logs every statement: what the database did for each page."""
    pg.log_statements(True)
    (work / f"pg-{engine}").mkdir()
    proc, key = scrapespy(database_url, work / f"pg-{engine}", extra_env=RECIPE_ENV)
    try:
        body = {"url": f"{target}{page}", "engine": engine}
        call("POST", proc.url("/scrape"), body, key=key, timeout=120)  # warm: robots.txt, browser
        # what the instance does with no scrape (the job queue's polls, heartbeats), subtracted;
        # a backend sends its statistics within FLUSH_SECONDS of going idle
        time.sleep(FLUSH_SECONDS)
        idle = pg.reading(), log_size(), time.monotonic()
        time.sleep(IDLE_SECONDS)
        start, mark, cpu0 = pg.reading(), log_size(), pg.backends_cpu()
        idle_seconds = time.monotonic() - idle[2]
        idle_statements = pg.statements_logged(idle[1], mark)
        started = time.monotonic()
        for n in range(PAGES_FOR_POSTGRES):
            url = f"{target}/article-{n % 20}.html" if engine == "static" else f"{target}{page}"
            answer = call("POST", proc.url("/scrape"), {**body, "url": url}, key=key, timeout=120)
            assert answer.status == 200 and answer.json["success"], answer.body[:300]
        cpu = pg.backends_cpu() - cpu0
        time.sleep(FLUSH_SECONDS)
        end, until = pg.reading(), log_size()
        took = time.monotonic() - started
        statements = pg.statements_logged(mark, until) - idle_statements / idle_seconds * took
    finally:
        proc.stop()
        pg.log_statements(False)
    n = PAGES_FOR_POSTGRES

    def marginal(name: str) -> float:
        idle_rate = (start[name] - idle[0][name]) / idle_seconds
        return (end[name] - start[name] - idle_rate * took) / n

    idle_wal = pg.wal_bytes(idle[0]["lsn"], start["lsn"]) / idle_seconds
    wal = (pg.wal_bytes(start["lsn"], end["lsn"]) - idle_wal * took) / n

    return {
        "pages": n,
        "statements_per_page": round(statements / n, 1),
        "idle_statements_per_second": round(idle_statements / idle_seconds, 2),
        "transactions_per_page": round(marginal("transactions"), 1),
        "rows_written_per_page": round(marginal("rows_written"), 1),
        "wal_bytes_per_page": round(wal),
        "growth_bytes_per_page": round((end["size_bytes"] - start["size_bytes"]) / n),
        "postgres_cpu_ms_per_page": round(cpu / n * 1000, 2),
    }


def browser_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """One ``scrapespy browser`` on a free port, and the ws endpoint it prints."""
    from harness.balancer import free_port

    port = free_port()
    scrapespy_cli = shutil.which("scrapespy", path=str(Path(sys.executable).parent))
    assert scrapespy_cli is not None
    server = subprocess.Popen(
        [scrapespy_cli, "browser", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=(work / "browser.log").open("ab"),
    )
    assert server.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = server.stdout.readline().decode()
        if found := re.search(r"ws://\S+", line):
            return server, found.group(0)
        if not line and server.poll() is not None:
            break
    server.kill()
    raise RuntimeError("scrapespy browser printed no endpoint")


def measure() -> dict[str, Any]:
    made = postgres_database()
    if made is None:
        raise SystemExit("bench.capacity needs PostgreSQL on 127.0.0.1:5432")
    database_url, drop = made
    work = Path(tempfile.mkdtemp(prefix="scrapespy-capacity-"))
    write_pages(work / "site")
    site, target = serve(work / "site")
    cleanups: list[Any] = [drop]
    results: dict[str, Any] = {
        "seconds_per_load": SECONDS,
        "machine": {"cores": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]},
        "site": server_name(),
        "env": RECIPE_ENV,
    }
    env = {"BENCH_TARGET": target}
    try:
        instances = []
        for n in range(2):
            (work / f"i{n}").mkdir()
            proc, key = scrapespy(database_url, work / f"i{n}", extra_env=RECIPE_ENV)
            cleanups.append(proc.stop)
            instances.append(proc)
        env["BENCH_KEY"] = key
        one = instances[0]
        js = {**env, "BENCH_ENGINE": "js", "BENCH_PAGE": "/js.html"}
        wrk("scrapespy.lua", one.base, 8, env, 2)  # warm-up: robots.txt, connections
        results["static"] = loaded([one.process.pid], one.base, 32, env)
        results["static"]["pages_per_core_second"] = per_core(
            results["static"]["cpu_ms_per_page"][0]
        )
        print(f"  static c=32: {results['static']}", flush=True)
        wrk("scrapespy.lua", one.base, 1, js, 3)  # the browser's launch
        results["js"] = loaded([one.process.pid], one.base, 4, js)
        results["js"]["pages_per_core_second"] = per_core(results["js"]["cpu_ms_per_page"][0])
        print(f"  js c=4: {results['js']}", flush=True)

        # the hop: HAProxy in front of both instances against the first one alone, in turns
        proxy, balanced = start_haproxy([int(p.base.rsplit(":", 1)[1]) for p in instances], work)
        cleanups.append(proxy.terminate)
        wrk("scrapespy.lua", balanced, 8, env, 2)
        turns: dict[str, list[float]] = {"direct": [], "balanced": []}
        for _ in range(TURNS):
            turns["direct"].append(wrk("scrapespy.lua", one.base, 32, env, SECONDS)["requests"])
            turns["balanced"].append(wrk("scrapespy.lua", balanced, 32, env, SECONDS)["requests"])
        results["balancer"] = {
            "static_c32_pages_direct": turns["direct"],
            "static_c32_pages_balanced_two_instances": turns["balanced"],
            "ratio": round(
                statistics.median(
                    b / d for b, d in zip(turns["balanced"], turns["direct"], strict=True)
                ),
                2,
            ),
        }
        print(f"  balancer: {results['balancer']}", flush=True)
        for proc in instances:
            proc.stop()

        # one browser server, and an instance that renders on it
        server, endpoint = browser_server(work)
        cleanups.append(server.kill)
        (work / "remote").mkdir()
        remote, _ = scrapespy(
            database_url,
            work / "remote",
            extra_env={**RECIPE_ENV, "SCRAPESPY_BROWSER_ENDPOINTS": endpoint},
            credits=None,
        )
        cleanups.append(remote.stop)
        wrk("scrapespy.lua", remote.base, 1, js, 3)
        out = loaded([remote.process.pid, server.pid], remote.base, 4, js)
        instance_ms, browser_ms = out["cpu_ms_per_page"]
        results["browser_server"] = {
            **out,
            "instance_pages_per_core_second": per_core(instance_ms),
            "browser_pages_per_core_second": per_core(browser_ms),
        }
        print(f"  browser server c=4: {results['browser_server']}", flush=True)
        remote.stop()
        server.kill()

        pg = Postgres(database_url)
        results["postgres"] = {
            "static": postgres_per_page(
                pg, database_url, work, target, "static", "/article-0.html"
            ),
            "js": postgres_per_page(pg, database_url, work, target, "js", "/js.html"),
        }
        print(f"  postgres: {results['postgres']}", flush=True)
    finally:
        tear_down(cleanups, site, work)
    return results


# --------------------------------------------------------------------------------------------
# The document


def need(pages_per_day: int, results: dict[str, Any], engine: str) -> dict[str, Any]:
    """What ``pages_per_day`` of ``engine`` need at PEAK times the day's average rate."""
    rate = pages_per_day / DAY * PEAK
    pg = results["postgres"][engine]
    if engine == "static":
        api_cores = rate / results["static"]["pages_per_core_second"]
        browser_cores = 0.0
    else:
        remote = results["browser_server"]
        api_cores = rate / remote["instance_pages_per_core_second"]
        browser_cores = rate / remote["browser_pages_per_core_second"]
    pg_cores = rate * pg["postgres_cpu_ms_per_page"] / 1000
    return {
        "peak_pages_per_second": round(rate, 1),
        "api_cores": api_cores,
        "api_instances": max(2, _up(api_cores)),  # one core each, two at least (the recipe's)
        "browser_cores": browser_cores,
        "browser_servers": _up(browser_cores / 2) if browser_cores else 0,  # two cores each
        "postgres_cores": pg_cores,
        "postgres_statements_per_second": round(rate * pg["statements_per_page"]),
        "wal_mb_per_second": rate * pg["wal_bytes_per_page"] / 1e6,
        "growth_gb_per_day": pages_per_day * pg["growth_bytes_per_page"] / 1e9,
    }


def _up(x: float) -> int:
    return int(-(-x // 1))


def render(results: dict[str, Any]) -> str:
    static, js, remote, lb = (results[k] for k in ("static", "js", "browser_server", "balancer"))
    pg = results["postgres"]
    lines = [
        "# Capacity",
        "",
        "What a page costs each piece of a deployment (deploy/), measured by `python -m "
        "bench.capacity` (part of `make bench`) on a "
        f"{results['machine']['cores']}-core machine, and what 1M and 10M pages a day need. "
        "This file is written from bench/results/capacity.json (`python -m bench.capacity "
        "--doc`); every number below is that file's or arithmetic on it.",
        "",
        "## Per page",
        "",
        "| | static | js |",
        "|---|---|---|",
        f"| pages a second per core of an API instance (its whole process tree) | "
        f"{static['pages_per_core_second']} | {js['pages_per_core_second']} |",
        f"| pages a second of one instance on this machine (static c=32, js c=4) | "
        f"{static['pages_per_second']} | {js['pages_per_second']} |",
        f"| with the browser apart (`scrapespy browser`): pages a second per core of the "
        f"instance / of the browser server | - | {remote['instance_pages_per_core_second']} / "
        f"{remote['browser_pages_per_core_second']} |",
    ]
    for label, key in (
        ("PostgreSQL statements", "statements_per_page"),
        ("PostgreSQL transactions", "transactions_per_page"),
        ("rows written", "rows_written_per_page"),
        ("WAL bytes written", "wal_bytes_per_page"),
        ("database growth, bytes", "growth_bytes_per_page"),
        ("PostgreSQL CPU, ms", "postgres_cpu_ms_per_page"),
    ):
        lines.append(f"| {label} per page | {pg['static'][key]} | {pg['js'][key]} |")
    lines += [
        "",
        f"Through the recipe's HAProxy in front of two instances, static c=32 served "
        f"{lb['ratio']}x the pages of one instance reached directly, in {TURNS} turns of "
        f"{results['seconds_per_load']:g} s each ({results['machine']['cores']} cores share "
        "both instances, HAProxy and the load: the figure says what the hop costs, not what a "
        "second machine adds).",
        "",
        "## What 1M and 10M pages a day need",
        "",
        f"Provisioned for a peak of {PEAK}x the day's average rate; one API instance is one "
        "core (deploy/k8s/api.yaml asks for one), at least two for availability; a browser "
        "server two cores. Static and js are shown apart: a mix needs the sum.",
        "",
        "| pages a day | engine | peak pages/s | API cores (instances) | browser cores (servers) "
        "| PostgreSQL cores | statements/s | WAL MB/s | database growth GB/day |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for volume in (1_000_000, 10_000_000):
        for engine in ("static", "js"):
            n = need(volume, results, engine)
            lines.append(
                f"| {volume // 1_000_000}M | {engine} | {n['peak_pages_per_second']} | "
                f"{n['api_cores']:.2f} ({n['api_instances']}) | "
                f"{n['browser_cores']:.2f} ({n['browser_servers']}) | "
                f"{n['postgres_cores']:.2f} | {n['postgres_statements_per_second']} | "
                f"{n['wal_mb_per_second']:.2f} | {n['growth_gb_per_day']:.1f} |"
            )
    lines += ["", "## The first bottleneck", "", bottleneck(results), ""]
    return "\n".join(lines)


def bottleneck(results: dict[str, Any]) -> str:
    """What stops growth first: API instances and browser servers grow by adding machines;
    PostgreSQL is one writer, so the pages a day at which it needs POSTGRES_CORES name it."""
    out = []
    for engine in ("static", "js"):
        per_page = results["postgres"][engine]["postgres_cpu_ms_per_page"] / 1000
        ceiling = POSTGRES_CORES / per_page / PEAK * DAY if per_page else float("inf")
        out.append(f"{engine}: about {ceiling / 1e6:.0f}M pages a day")
    return (
        "API instances, job workers and browser servers share nothing but PostgreSQL and Redis, "
        "so they grow by adding machines; PostgreSQL is the one writer every page settles in, "
        f"so it is the first bottleneck. A {POSTGRES_CORES}-core PostgreSQL spends its cores on "
        f"the ledger and the jobs' rows at: {'; '.join(out)} (at the peak above). Before that, "
        "its storage must take the growth above for the retention kept (docs/operations.md: "
        "usage rows and job results are what grows); the WAL rate is well within one disk's. "
        "For js, browser servers are the largest bill of machines well before PostgreSQL."
    )


def main(argv: list[str]) -> int:
    if "--doc" not in argv:
        results = measure()
        RESULTS.mkdir(exist_ok=True)
        JSON.write_text(json.dumps(results, indent=2) + "\n")
    DOC.write_text(render(json.loads(JSON.read_text())))
    print(DOC.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
