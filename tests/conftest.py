from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import Accounts, ServiceProcess
from tests.sites import TargetSite


@pytest.fixture(scope="session")
def site() -> Iterator[TargetSite]:
    target = TargetSite().start()
    yield target
    target.stop()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("db") / "scrapespy.db"
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def service(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    workdir: Path = tmp_path_factory.mktemp("service")
    proc = ServiceProcess(database_url, workdir).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def accounts(database_url: str) -> Iterator[Accounts]:
    made = Accounts(database_url)
    yield made
    made.close()
