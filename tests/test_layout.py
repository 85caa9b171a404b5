"""The import rules that keep the architecture what docs/architecture.md draws.

The service is a few parts in one order, lowest first; a module imports modules of its own part
or of lower parts only, never of a higher one, and no module imports itself back through others
(a loop). Type-only imports count: a loop through ``TYPE_CHECKING`` is still two modules that
cannot be read, or moved, one without the other. The Scrapy components are named by the engine
only through Scrapy's settings (dotted paths), as Scrapy itself names them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from harness.service import ROOT

FRONTS = ("service.api", "service.firecrawl", "service.dashboard", "service.reference")
# The parts, lowest first.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # pure libraries of the scrape: HTML, anti-bot rules, addresses; they know no service
    ("libraries", ("service.extraction", "service.antibot", "service.egress")),
    # the vocabulary every part shares: request models, formats/engines/tiers, errors, settings
    ("core", ("service.core",)),
    ("database", ("service.db",)),
    ("billing", ("service.billing",)),
    # one scrape: its order, result, timings and the bridge to the one Scrapy crawler
    ("scrape", ("service.scrape",)),
    # what Scrapy runs, named by the engine through its settings only
    (
        "scrapy components",
        ("service.browser", "service.impersonation", "spiders", "middlewares", "pipelines"),
    ),
    # search: the operator's backend, and its results scraped through the scrape path
    ("search", ("service.search",)),
    # the API's jobs: batch, crawl, map, their queue and webhooks
    ("jobs", ("service.jobs",)),
    # what every HTTP front shares: the site, JSON bodies and errors, the root that hands each
    # path to its front, and the operations the native and the Firecrawl API both call
    ("web", ("service.web",)),
    # the HTTP fronts, siblings: the API, Firecrawl's API, the dashboard, the reference page
    ("front", FRONTS),
    # the running process: CLI, server, daemon, workers, logs and metrics
    ("process", ("service.process", "twisted.plugins")),
)
COMPONENTS = ("spiders", "middlewares", "pipelines")
# distributions and tools beside the service, each with its own rule
OTHERS = {
    "bench": ("bench",),
    "harness": ("harness",),
    "client": ("scrapespy",),
    "tests": ("tests",),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[:3] == ["clients", "python", "src"]:
        parts = parts[3:]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    roots = ("service", "spiders", "middlewares", "pipelines", "bench", "harness", "tests")
    for root in (*roots, "clients/python/src/scrapespy", "twisted/plugins"):
        for path in sorted((ROOT / root).rglob("*.py")):
            inside = path.relative_to(ROOT).parts
            if any(part.startswith(".") for part in inside):  # bench/.venv-scrapyrt and the like
                continue
            if "migrations" in inside and "versions" in inside:
                continue
            found[module_name(path)] = path
    return found


def _resolved(name: str) -> str | None:
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> set[str]:
    path = modules()[module]
    return imports_in(module, path, path.read_text(encoding="utf-8"))


def imports_in(module: str, path: Path, source: str) -> set[str]:
    """The modules of the repository that ``source``, the text of ``module`` at ``path``,
    imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` names the module; anything else names ``base``
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules()]
            names = submodules if len(submodules) == len(node.names) else [base, *submodules]
        for name in names:
            target = _resolved(name)
            if target is not None and target != module:
                found.add(target)
    return found


def part_of(module: str) -> int | None:
    for index, (_, prefixes) in enumerate(PARTS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def service_modules() -> Iterator[str]:
    yield from (m for m in modules() if part_of(m) is not None or m == "service")


def test_every_module_of_the_service_has_a_part() -> None:
    stray = [m for m in modules() if m.split(".")[0] == "service" and m != "service"]
    assert [m for m in stray if part_of(m) is None] == []


def test_no_module_imports_a_higher_part() -> None:
    offences = []
    for module in service_modules():
        own = part_of(module) or 0
        for target in sorted(imports_of(module)):
            other = part_of(target)
            if other is not None and other > own:
                offences.append(f"{module} ({PARTS[own][0]}) imports {target} ({PARTS[other][0]})")
    assert offences == []


def loops() -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in imports_of(node):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in modules():
        if module not in index:
            visit(module)
    return found


def test_no_import_loops() -> None:
    assert loops() == []


def distributions_imported(module: str) -> set[str]:
    """The top-level names of every absolute import in ``module``, type-only ones included."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


# What the libraries leave to the parts above them: the crawler and the database.
NOT_IN_LIBRARIES = (
    "scrapy",
    "scrapy_playwright",
    "playwright",
    "sqlalchemy",
    "psycopg2",
    "psycopg",
)


def test_the_libraries_import_no_scrapy_and_no_database() -> None:
    """A library's error is its own; a Scrapy component raises it as Scrapy's (the egress guard's
    ``BlockedRequest`` is the egress library's ``EgressBlocked`` as an ``IgnoreRequest``)."""
    libraries = [m for m in service_modules() if part_of(m) == 0]
    assert "service.egress.addresses" in libraries
    offences = [
        f"{m} imports {name}"
        for m in libraries
        for name in sorted(distributions_imported(m))
        if name in NOT_IN_LIBRARIES
    ]
    assert offences == []


def front_of(module: str) -> str | None:
    return next((f for f in FRONTS if module == f or module.startswith(f + ".")), None)


def front_crossings(imports: dict[str, set[str]]) -> list[str]:
    """Imports from one front into another, of a map of each module's imports."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(imports.items())
        for target in sorted(targets)
        if front_of(module) is not None
        and front_of(target) is not None
        and front_of(target) != front_of(module)
    ]


def test_no_front_imports_another_front() -> None:
    """The fronts are siblings: what two of them share lives below them (service.web), and the
    process mounts each one on the site's root (service.process.server)."""
    assert front_crossings({m: imports_of(m) for m in service_modules()}) == []


def test_a_front_importing_another_is_caught() -> None:
    """The rule sees an import back into another front, a type-only one included, as the
    native API's app once imported the Firecrawl routes and the reference page."""
    path = modules()["service.api.app"]
    source = path.read_text(encoding="utf-8") + (
        "\nif TYPE_CHECKING:\n    from service.reference.page import Reference\n"
        "from service.firecrawl import routes\n"
    )
    found = imports_in("service.api.app", path, source)
    assert front_crossings({"service.api.app": found}) == [
        "service.api.app imports service.firecrawl.routes",
        "service.api.app imports service.reference.page",
    ]


def test_the_scrapy_components_do_not_import_one_another_upstream() -> None:
    """Middlewares run before the spider's callbacks and the pipelines: they name neither."""
    offences = [
        f"{m} imports {t}"
        for m in modules()
        if m.startswith("middlewares")
        for t in imports_of(m)
        if t.split(".")[0] in ("spiders", "pipelines")
    ]
    assert offences == []


@pytest.mark.parametrize(
    ("family", "forbidden"),
    [
        # the client is a distribution of its own: httpx, pydantic and the standard library only
        ("client", ("service", "spiders", "middlewares", "pipelines", "harness", "bench")),
        # the test harness starts the real service as a process: it never imports the service's
        # parts above the vocabulary, so a test's process holds no engine of its own
        ("harness", ("bench",)),
        ("bench", ("tests",)),
        # the tests prove the service; the benchmarks measure it: neither runs the other
        ("tests", ("bench",)),
    ],
)
def test_tools_beside_the_service_stay_beside_it(family: str, forbidden: tuple[str, ...]) -> None:
    prefixes = OTHERS[family]
    offences = [
        f"{m} imports {t}"
        for m in modules()
        if m.split(".")[0] in prefixes
        for t in imports_of(m)
        if t.split(".")[0] in forbidden
    ]
    assert offences == []


def test_the_service_never_imports_tests_bench_or_harness() -> None:
    offences = [
        f"{m} imports {t}"
        for m in service_modules()
        for t in imports_of(m)
        if t.split(".")[0] in ("bench", "harness", "tests")
    ]
    assert offences == []
