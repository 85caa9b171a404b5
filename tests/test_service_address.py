"""What the service tells its callers about its own address (a job's ``status_url``, ``/docs``,
``/openapi.json``) is where it listens, unless the operator set ``SCRAPESPY_PUBLIC_URL``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.balancer import free_port
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite


@pytest.fixture
def no_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    # ServiceProcess hands the service this process's environment
    monkeypatch.delenv("SCRAPESPY_PUBLIC_URL", raising=False)


@pytest.fixture
def started(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, no_public_url: None
) -> Iterator[ServiceProcess]:
    own_port, env = request.param
    proc = own_port_started(database_url, tmp_path, env) if own_port else None
    proc = proc or ServiceProcess(database_url, tmp_path, env=env).start()
    yield proc
    proc.stop()


def own_port_started(database_url: str, workdir: Path, env: dict[str, str]) -> ServiceProcess:
    """The service on a port chosen here. The port is free when chosen, but the suite's other
    services (port 0) can take it before this one binds it: then another port, a few times."""
    for _ in range(5):
        proc = ServiceProcess(database_url, workdir, env=env, args=("--port", str(free_port())))
        try:
            return proc.start()
        except RuntimeError as failed:
            if "Address already in use" not in str(failed):
                raise
    raise AssertionError("five free ports were all taken before the service could bind one")


def told_address(proc: ServiceProcess, key: str, site: TargetSite) -> tuple[str, str, str]:
    """The job's status_url, /docs's "The service's address is ..." and /openapi.json's server."""
    made = call("POST", proc.url("/batch"), {"urls": [site.url("/article")]}, key=key)
    assert made.status == 202, made.body
    page = call("GET", proc.url("/docs")).body.decode()
    shown = re.search(r'id="base-url">([^<]*)<', page)
    assert shown is not None
    server = call("GET", proc.url("/openapi.json")).json["servers"][0]["url"]
    return made.json["status_url"], shown.group(1), server


@pytest.mark.parametrize(
    "started",
    [(True, {}), (False, {})],
    ids=["a-port-of-its-own", "port-0"],
    indirect=True,
)
def test_without_a_public_url_the_service_gives_the_address_it_listens_on(
    started: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    status_url, docs, server = told_address(started, key, site)
    assert status_url.startswith(started.base + "/jobs/"), (status_url, started.base)
    assert docs == server == started.base
    if started.args:
        assert started.base == f"http://127.0.0.1:{started.args[1]}"
    followed = call("GET", status_url, key=key)
    assert followed.status == 200, followed.body
    assert status_url.endswith("/jobs/" + followed.json["id"])


@pytest.mark.parametrize(
    "started",
    [(False, {"SCRAPESPY_PUBLIC_URL": "https://spy.example.test/"})],
    ids=["public-url"],
    indirect=True,
)
def test_a_public_url_wins_over_the_address_it_listens_on(
    started: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    status_url, docs, server = told_address(started, key, site)
    assert status_url.startswith("https://spy.example.test/jobs/")
    assert docs == server == "https://spy.example.test"
