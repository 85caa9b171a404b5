"""One table of settings (service.core.settings): the Config, the crawler's Scrapy settings, the
components and docs/operations.md all take their names and defaults from it."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest
from scrapy.settings import Settings

from harness.service import ROOT
from service.core.config import Config, ConfigError
from service.core.settings import (
    BEGIN,
    BY_ENV,
    DOCS,
    END,
    SETTINGS,
    markdown,
    shown_default,
)
from service.scrape import scrapy_settings
from service.scrape.engine import crawler_settings
from service.scrape.scrapy_settings import default_settings, from_config

COMPONENTS = ("middlewares", "pipelines", "spiders", "service")
# settings.get("SCRAPESPY_X", default), .getint(...), .getfloat(...), ... with a second argument
WITH_DEFAULT = re.compile(
    r"""settings\s*\.\s*get[a-z]*\(\s*(f?["']SCRAPESPY_[^"']*["'])\s*,\s*(?!\))""", re.S
)
# Config fields that no single row fills: derived from other rows or from the environment
DERIVED = {"costs", "public_url_configured"}


def test_the_scan_finds_a_default_written_in_a_component():
    source = (
        'a = settings.getfloat("SCRAPESPY_A", 1.0)\n'
        "b = crawler.settings.getint(\n    'SCRAPESPY_B',\n    cls.b,\n)\n"
        'c = settings.getbool(f"SCRAPESPY_{name}", default=True)\n'
        'ok = settings.getint("SCRAPESPY_OK")\n'
        'ok = settings.getlist( "SCRAPESPY_OK" )\n'
        'ok = settings.getint("DOWNLOAD_MAXSIZE", 1)\n'
    )
    found = [match.group(1) for match in WITH_DEFAULT.finditer(source)]
    assert found == ['"SCRAPESPY_A"', "'SCRAPESPY_B'", 'f"SCRAPESPY_{name}"']


def test_no_component_writes_a_default_of_its_own():
    scanned = [path for package in COMPONENTS for path in sorted((ROOT / package).rglob("*.py"))]
    assert len(scanned) > 50
    found = {}
    for path in scanned:
        text = path.read_text(encoding="utf-8")
        hits = [match.group(1) for match in WITH_DEFAULT.finditer(text)]
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert found == {}, "the default belongs in service.core.settings.SETTINGS"


def test_rows_are_unique_and_whole():
    for attribute in ("env", "scrapy", "field"):
        names = [getattr(row, attribute) for row in SETTINGS if getattr(row, attribute)]
        assert len(names) == len(set(names)), attribute
    for row in SETTINGS:
        assert row.env or row.scrapy, row
        assert row.doc and "\n" not in row.doc, row.name
        if row.field is None and row.env and row.kind != "file":
            pytest.fail(f"{row.name}: a variable without a Config field")
        if row.minimum is not None or row.maximum is not None:
            assert row.kind in ("int", "float"), row.name


def test_every_config_field_has_its_row_and_its_rows_default():
    fields = {f.name: f for f in dataclasses.fields(Config)}
    rows = {row.field.split(".")[0] for row in SETTINGS if row.field}
    assert set(fields) - DERIVED == rows - DERIVED
    config = Config()
    for row in SETTINGS:
        if row.field is None:
            continue
        value: object = config
        for part in row.field.split("."):
            value = value[part] if isinstance(value, dict) else getattr(value, part)  # type: ignore[index]
        assert value == row.default_value(), row.name


def test_the_environment_is_read_through_the_rows():
    assert Config.from_env({}) == Config()
    config = Config.from_env(
        {
            "SCRAPESPY_ROBOTS_TTL_SECONDS": "90",
            "SCRAPESPY_COST_JS_RESIDENTIAL": "30",
            "SCRAPESPY_PUBLIC_URL": "https://api.example.com/",
            "SCRAPESPY_PAYMENTS": "DEMO",
        }
    )
    assert config.robots_ttl_seconds == 90 and config.costs["js"]["residential"] == 30
    assert config.public_url == "https://api.example.com" and config.public_url_configured
    assert config.payments == "demo"
    with pytest.raises(ConfigError, match="js costs must not decrease"):
        Config.from_env({"SCRAPESPY_COST_JS_NONE": "26"})


def test_the_crawler_gets_every_scrapy_setting_of_the_table():
    config = Config(robots_ttl_seconds=42, proxies_residential=("http://10.0.0.8:3128",))
    settings = crawler_settings(config)
    for row in SETTINGS:
        if row.scrapy:
            assert row.scrapy in settings, row.scrapy
    assert settings.getfloat("SCRAPESPY_ROBOTS_TTL_SECONDS") == 42.0
    assert "SCRAPESPY_ROBOTS_TTL" not in settings
    assert settings.getlist("SCRAPESPY_PROXIES_RESIDENTIAL") == ["http://10.0.0.8:3128"]
    assert settings.getlist("SCRAPESPY_EGRESS_ALLOW_HOSTS") == ["10.0.0.8"]
    assert settings.getbool("SCRAPESPY_ANTIBOT_ENABLED") is True
    assert settings.getint("SCRAPESPY_ROBOTS_MAX_SITES") == 10_000


def test_the_default_settings_are_the_tables_and_the_projects():
    defaults = default_settings()
    assert defaults == from_config(Config())
    assert set(defaults) == {row.scrapy for row in SETTINGS if row.scrapy}
    bare = Settings(defaults)
    assert bare.getfloat("SCRAPESPY_BROWSER_SETTLE_SECONDS") == 2.0
    assert bare.getint("SCRAPESPY_MAX_RAW_HTML_BYTES") == Config.max_raw_html_bytes
    # what scrapy shell and scrapy crawl read (this process's environment sets none of these)
    for name in (
        "SCRAPESPY_BROWSER_SPARES",
        "SCRAPESPY_PROXY_ATTEMPTS",
        "SCRAPESPY_ROBOTS_MAX_SITES",
    ):
        assert getattr(scrapy_settings, name) == defaults[name]


def test_the_project_settings_do_not_reach_into_the_browser():
    source = (ROOT / "service" / "scrape" / "scrapy_settings.py").read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "service.browser" in line]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, service.scrape.scrapy_settings; "
            "print(sorted(m for m in sys.modules if m.startswith('service.browser')))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def documented() -> dict[str, str]:
    """The names and defaults docs/operations.md's settings tables show."""
    text = DOCS.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = {}
    for line in table.splitlines():
        match = re.match(r"\| `([A-Z0-9_]+)` \| (.*?) \|", line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} is listed twice"
            rows[match.group(1)] = match.group(2)
    return rows


def test_the_docs_list_exactly_the_tables_settings_and_defaults():
    expected = {row.name: shown_default(row) for row in SETTINGS}
    assert documented() == expected
    assert set(BY_ENV) <= set(documented())


def test_the_docs_hold_the_rendered_table():
    text = DOCS.read_text(encoding="utf-8")
    table = text.split(BEGIN + "\n", 1)[1].split(END, 1)[0]
    assert table == f"\n{markdown()}\n", "run: python -m service.core.settings --write"


def test_the_table_is_printed_by_its_module():
    done = subprocess.run(
        [sys.executable, "-m", "service.core.settings"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == markdown()


def test_every_setting_a_component_reads_is_a_row():
    read = re.compile(r"""settings\s*\.\s*get[a-z]*\(\s*["'](SCRAPESPY_[A-Z_]+)["']""")
    names = set()
    for package in COMPONENTS:
        for path in (ROOT / package).rglob("*.py"):
            names.update(read.findall(path.read_text(encoding="utf-8")))
    assert len(names) > 15
    assert names - {row.scrapy for row in SETTINGS} == set()
