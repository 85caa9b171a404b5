"""Tests for service.core.places: the country table, the proxies' tags and Accept-Language."""

from __future__ import annotations

import re
import zoneinfo

import pytest

from service.core.config import Config, ConfigError
from service.core.places import (
    COUNTRIES,
    LANGUAGE_PATTERN,
    accept_language,
    countries_of,
    languages_for,
    split_tag,
    unavailable,
)
from service.scrape.scrapy_settings import proxy_hosts

OFFERED = {"datacenter": ("de", "fr"), "residential": ("de", "jp")}


def test_the_table_has_every_iso_3166_code_with_a_real_zone_and_language() -> None:
    assert len(COUNTRIES) == 249  # ISO 3166-1 alpha-2's officially assigned codes
    assert all(re.fullmatch("[a-z]{2}", code) for code in COUNTRIES)
    for code, country in COUNTRIES.items():
        zoneinfo.ZoneInfo(country.time_zone)  # raises for a zone that does not exist
        assert re.fullmatch(LANGUAGE_PATTERN, country.language), code
        assert country.language.endswith("-" + code.upper()), code
    assert COUNTRIES["de"] == ("Germany", "Europe/Berlin", "de-DE")
    assert COUNTRIES["us"].time_zone == "America/New_York"
    assert COUNTRIES["ru"].time_zone == "Europe/Moscow"


@pytest.mark.parametrize(
    ("entry", "split"),
    [
        ("de=http://u:p@h:1", ("de", "http://u:p@h:1")),
        (" US = h:8080 ", ("us", "h:8080")),
        ("http://u:p=x@h:1", (None, "http://u:p=x@h:1")),  # '=' in a password is no tag
        ("h:1", (None, "h:1")),
    ],
)
def test_split_tag(entry: str, split: tuple[str | None, str]) -> None:
    assert split_tag(entry) == split


def test_an_unknown_tag_stops_the_service_naming_the_entry_only() -> None:
    with pytest.raises(ConfigError) as refused:
        Config.from_env({"SCRAPESPY_PROXIES_DATACENTER": "de=h:1,uk=http://u:sekrit@h:2"})
    assert "SCRAPESPY_PROXIES_DATACENTER: entry #2" in str(refused.value)
    assert "'uk' is not an ISO 3166-1 alpha-2" in str(refused.value)
    assert "sekrit" not in str(refused.value)


def test_config_lists_the_countries_per_tier() -> None:
    config = Config.from_env({"SCRAPESPY_PROXIES_DATACENTER": "fr=h:1, h:2, DE=h:3, fr=h:4"})
    assert config.countries == {"datacenter": ("de", "fr"), "residential": ()}
    assert countries_of([]) == ()


def test_accept_language_weighs_the_languages_in_order() -> None:
    assert accept_language(["de-DE"]) == "de-DE"
    assert accept_language(["de-CH", "fr", "en"]) == "de-CH, fr;q=0.9, en;q=0.8"
    assert languages_for("ch", []) == ("de-CH",)
    assert languages_for("ch", ["it-CH"]) == ("it-CH",)
    assert languages_for(None, []) == ()


def test_unavailable_says_why_and_what_is_offered() -> None:
    assert unavailable("de", "datacenter", OFFERED) is None
    assert unavailable("jp", "auto", OFFERED) is None
    assert unavailable("jp", "datacenter", OFFERED) == (
        "no proxy in 'jp' in the datacenter tier; countries offered: datacenter: de, fr"
    )
    assert unavailable("br", "auto", OFFERED) == (
        "no proxy in 'br' in any proxy tier; countries offered: datacenter: de, fr; "
        "residential: de, jp"
    )
    assert "use datacenter or residential (or auto)" in str(unavailable("de", "none", OFFERED))
    assert "any proxy tier" in str(unavailable("br", "none", OFFERED))


def test_the_egress_guard_lets_tagged_proxies_through() -> None:
    config = Config(
        proxies_datacenter=("de=http://u:p@10.0.0.9:3128",),
        proxies_residential=("fr=10.0.0.10:8000", "10.0.0.11:8000"),
    )
    assert proxy_hosts(config) == ["10.0.0.10", "10.0.0.11", "10.0.0.9"]
