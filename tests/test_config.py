"""The operator's configuration: read from the environment in one place, with one default each."""

from __future__ import annotations

import ast

import pytest

from harness.service import ROOT
from service.core.config import Config, ConfigError
from service.scrape.engine import crawler_settings

PACKAGES = ("service", "middlewares", "pipelines", "spiders")
OURS = ("SCRAPESPY_", "STRIPE_")


def _is_environ(node: ast.expr) -> bool:
    """``os.environ`` or a bare ``environ``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id == "environ"


def _ours(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and str(node.value).startswith(OURS)


def environment_reads(source: str) -> list[int]:
    """Lines of ``source`` that read one of the service's variables from the environment."""
    found = []
    for node in ast.walk(ast.parse(source)):
        read = False
        if isinstance(node, ast.Call) and node.args and _ours(node.args[0]):
            func = node.func
            read = (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value)
            )
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            read = _is_environ(node.value) and _ours(node.slice)
        elif isinstance(node, ast.Compare) and _ours(node.left):
            read = any(_is_environ(right) for right in node.comparators)
        if read:
            found.append(node.lineno)
    return found


def test_the_scan_finds_every_way_of_reading_the_environment():
    source = (
        "import os\n"
        "a = os.environ.get('SCRAPESPY_A', '1')\n"
        "b = os.environ['SCRAPESPY_B']\n"
        "c = os.getenv('STRIPE_C')\n"
        "d = 'SCRAPESPY_D' in os.environ\n"
        "child = {**os.environ, 'SCRAPESPY_WORKER_INDEX': '1'}\n"  # a child's, not a read
        "e = os.environ.get('HOME')\n"
    )
    assert environment_reads(source) == [2, 3, 4, 5]


def test_only_the_config_reads_the_services_variables_from_the_environment():
    readers = {}
    scanned = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    assert ROOT / "service" / "core" / "config.py" in scanned and len(scanned) > 20
    for path in scanned:
        lines = environment_reads(path.read_text(encoding="utf-8"))
        if lines and path != ROOT / "service" / "core" / "config.py":
            readers[str(path.relative_to(ROOT))] = lines
    assert readers == {}, "read these through service.core.config.Config instead"


def test_an_empty_environment_gives_the_defaults():
    assert Config.from_env({}) == Config()


def test_empty_and_padded_values_are_read_like_the_documented_ones():
    config = Config.from_env(
        {
            "SCRAPESPY_ROBOTS_TTL_SECONDS": " 90 ",
            "SCRAPESPY_LOG_LEVEL": "warning",
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "yes",
            "SCRAPESPY_PUBLIC_URL": "https://api.example.com/",
            "SCRAPESPY_MAX_PAGES": "",
        }
    )
    assert config.robots_ttl_seconds == 90 and config.log_level == "WARNING"
    assert config.allow_private_targets is True
    assert config.public_url == "https://api.example.com"
    assert config.max_pages == Config.max_pages
    assert Config.from_env({"SCRAPESPY_MAX_RAW_HTML_BYTES": "1000"}).max_raw_html_bytes == 1000
    assert Config.from_env({}).max_raw_html_bytes == 2 * 1024 * 1024
    with pytest.raises(ConfigError, match="SCRAPESPY_ROBOTS_TTL_SECONDS must be at least 1"):
        Config.from_env({"SCRAPESPY_ROBOTS_TTL_SECONDS": "0"})


def test_the_services_crawler_takes_its_settings_from_the_config_it_was_started_with(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("SCRAPESPY_ROBOTS_TTL_SECONDS", "11")
    monkeypatch.setenv("SCRAPESPY_LOG_LEVEL", "DEBUG")
    config = Config(
        robots_ttl_seconds=42,
        allow_private_targets=True,
        max_pages=7,
        log_level="ERROR",
        max_raw_html_bytes=4096,
        proxies_datacenter=("http://user:pw@10.0.0.9:3128",),
    )
    settings = crawler_settings(config)
    assert settings.getfloat("SCRAPESPY_ROBOTS_TTL_SECONDS") == 42.0
    assert settings.getbool("SCRAPESPY_ALLOW_PRIVATE_TARGETS") is True
    assert settings.getint("SCRAPESPY_MAX_PAGES") == 7
    assert settings.getint("SCRAPESPY_MAX_RAW_HTML_BYTES") == 4096
    assert settings.get("LOG_LEVEL") == "ERROR"
    assert settings.getlist("SCRAPESPY_EGRESS_ALLOW_HOSTS") == ["10.0.0.9"]


def test_a_model_endpoint_needs_its_model_and_its_key_stays_out_of_the_config_s_repr():
    with pytest.raises(ConfigError, match="SCRAPESPY_LLM_MODEL"):
        Config.from_env({"SCRAPESPY_LLM_BASE_URL": "http://127.0.0.1:11434/v1"})
    config = Config.from_env(
        {
            "SCRAPESPY_LLM_BASE_URL": "http://127.0.0.1:11434/v1/",
            "SCRAPESPY_LLM_MODEL": "qwen2.5:7b",
            "SCRAPESPY_LLM_API_KEY": "sk-operator-secret",
        }
    )
    assert config.model_configured and config.llm_base_url == "http://127.0.0.1:11434/v1"
    assert "sk-operator-secret" not in repr(config)
    assert not Config.from_env({}).model_configured


def test_the_static_fingerprint_is_scrapy_unless_chrome_is_chosen() -> None:
    assert Config.from_env({}).static_fingerprint == "scrapy"
    assert (
        Config.from_env({"SCRAPESPY_STATIC_FINGERPRINT": "Chrome"}).static_fingerprint == "chrome"
    )
    with pytest.raises(ConfigError, match="SCRAPESPY_STATIC_FINGERPRINT must be one of"):
        Config.from_env({"SCRAPESPY_STATIC_FINGERPRINT": "firefox"})
