"""The packages' import rules, which keep the architecture what docs/architecture.md says."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.service import ROOT

# package -> the packages of this repository it must never import
FORBIDDEN = {
    "service": {"middlewares", "tests", "bench", "harness"},
    "middlewares": {"pipelines", "spiders", "tests", "bench", "harness"},
    "harness": {"tests", "bench"},
    "bench": {"tests"},
    "tests": {"bench"},
    # the client is a distribution of its own: httpx, pydantic and the standard library only
    "clients": {"service", "middlewares", "pipelines", "spiders", "harness", "tests", "bench"},
}
# The engine bridge is the one place that feeds the crawler: it names the feed spider.
ALLOWED = {("service/scrape/engine.py", "spiders")}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_what_its_layer_may(package: str) -> None:
    offences = []
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for name in imported_packages(path) & FORBIDDEN[package]:
            if (relative, name) not in ALLOWED:
                offences.append(f"{relative} imports {name}")
    assert offences == []
