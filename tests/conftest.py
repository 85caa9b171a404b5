"""Shared fixtures.

The suite runs against SQLite by default. With ``SCRAPESPY_TEST_DB=postgresql`` the tests that
touch the database run against a throwaway database created on the PostgreSQL server of
``SCRAPESPY_TEST_POSTGRES_URL`` (default: the local server on 127.0.0.1:5432) and dropped at the
end; the others, and those marked ``engine``, are deselected. Under CI an unreachable server
fails the run instead of skipping.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite

BACKEND = os.environ.get("SCRAPESPY_TEST_DB", "sqlite").strip().lower()
POSTGRES_URL = os.environ.get(
    "SCRAPESPY_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)
DATABASE_FIXTURES = {"database_url", "service", "accounts"}


def pytest_report_header(config: pytest.Config) -> str:
    return f"scrapespy test database: {BACKEND}"


def asked_for(config: pytest.Config, marker: str) -> bool:
    """Whether the run's ``-m`` expression selects tests because they carry ``marker``
    (``-m fleet``, ``-m "fleet or postgres"``; not ``-m "not browser"``)."""
    text = config.option.markexpr
    if not text:
        return False
    expression = Expression.compile(text)
    return expression.evaluate(lambda name, **_: name == marker) and not expression.evaluate(
        lambda name, **_: False
    )


def minutes(item: pytest.Item) -> float:
    """How long the item's file takes on a busy machine, as its ``long`` marker says."""
    marker = item.get_closest_marker("long")
    return float(marker.kwargs.get("minutes", 1)) if marker is not None else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The files that take minutes start first, longest first: pytest-xdist hands files out in
    # this order, and one handed out last would run on alone after the other worker finished.
    items.sort(key=lambda item: -minutes(item))
    keep, drop = [], []
    if BACKEND != "postgresql":
        # multi-instance and outage tests are about the production database; the fleet's proof,
        # asked for by name, runs on PostgreSQL in either pass (tests/test_e2e_fleet.py)
        fleet = asked_for(config, "fleet")
        for item in items:
            wanted = fleet and item.get_closest_marker("fleet") is not None
            (drop if item.get_closest_marker("postgres") and not wanted else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        return
    # The PostgreSQL pass runs what the database can change. What the engines make of a page
    # (``engine``: the js engine, documents, fingerprints) is the same on either database, and
    # runs once, in the SQLite pass; its billing goes through the ledger the other tests check.
    for item in items:
        uses_db = DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
        engine_only = item.get_closest_marker("engine") is not None
        postgres = item.get_closest_marker("postgres") is not None
        (keep if postgres or (uses_db and not engine_only) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def site() -> Iterator[TargetSite]:
    target = TargetSite().start()
    yield target
    target.stop()


def _postgres_database() -> Iterator[str]:
    admin_url = make_url(POSTGRES_URL)
    name = f"scrapespy_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {admin_url.host}: {exc}")
        pytest.skip(f"PostgreSQL is not reachable at {admin_url.host}")
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def a_database_of_its_own(
    database_url: str, directory: Path, backend: str = BACKEND
) -> Iterator[tuple[str, Accounts]]:
    """A database of the run's kind (``database_url``'s, or ``backend``) for some tests alone:
    no instance started by other tests (with other settings) takes their jobs' pages, so what
    they count is theirs."""
    made = _postgres_database() if backend == "postgresql" else None
    url = next(made) if made is not None else f"sqlite:///{directory / 'own.db'}"
    accounts = Accounts(url)
    yield url, accounts
    accounts.close()
    if made is not None:
        next(made, None)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if BACKEND == "postgresql":
        yield from _postgres_database()
        return
    path = tmp_path_factory.mktemp("db") / "scrapespy.db"
    yield f"sqlite:///{path}"


@pytest.fixture(scope="session")
def service(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    workdir: Path = tmp_path_factory.mktemp("service")
    proc = ServiceProcess(database_url, workdir).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def accounts(database_url: str) -> Iterator[Accounts]:
    made = Accounts(database_url)
    yield made
    made.close()
