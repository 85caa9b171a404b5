"""Every setting's bounds admit its own default: an operator who writes the documented default
into the environment gets the service that starts without it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from service.core.config import ENGINES, TIERS, Config, ConfigError

# the variables whose field is not their name without the prefix, lowercased
FIELD_OF = {
    "SCRAPESPY_TRUST_X_FORWARDED_FOR": "trust_forwarded_for",
    **{
        f"SCRAPESPY_COST_{engine.upper()}_{tier.upper()}": f"costs.{engine}.{tier}"
        for engine in ENGINES
        for tier in TIERS
    },
}
# a file to read, whose default is no file at all
NO_DEFAULT = {"SCRAPESPY_PROXIES_DATACENTER_FILE", "SCRAPESPY_PROXIES_RESIDENTIAL_FILE"}


class Reads(Mapping[str, str]):
    """An empty environment that remembers which variables were looked up."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __getitem__(self, name: str) -> str:
        self.names.append(name)
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        self.names.append(name)
        return default

    def __contains__(self, name: object) -> bool:
        self.names.append(str(name))
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def variables() -> list[str]:
    reads = Reads()
    Config.from_env(reads)
    return sorted(set(reads.names) - NO_DEFAULT)


def field_of(name: str) -> str:
    return FIELD_OF.get(name) or name.removeprefix("SCRAPESPY_").lower()


def value_of(config: Config, field: str) -> Any:
    found: Any = config
    for part in field.split("."):
        found = found[part] if isinstance(found, dict) else getattr(found, part)
    return found


def as_text(value: Any) -> str:
    """How an operator writes ``value`` in the environment."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def test_every_variable_names_a_field() -> None:
    fields = {f.name for f in dataclasses.fields(Config)}
    names = variables()
    assert len(names) > 50
    for name in names:
        assert field_of(name).split(".")[0] in fields, f"{name}: name its field in FIELD_OF"


@pytest.mark.parametrize("name", variables())
def test_a_variable_set_to_its_default_is_accepted_and_gives_the_default(name: str) -> None:
    default = value_of(Config(), field_of(name))
    text = as_text(default)
    try:
        configured = Config.from_env({name: text})
    except ConfigError as error:
        pytest.fail(f"{name}={text} (its default) is refused: {error}")
    assert value_of(configured, field_of(name)) == default, name


def test_a_crawl_delay_may_be_zero_and_not_below() -> None:
    assert Config.from_env({"SCRAPESPY_CRAWL_DELAY_SECONDS": "0"}).crawl_delay_seconds == 0
    with pytest.raises(ConfigError, match="at least 0"):
        Config.from_env({"SCRAPESPY_CRAWL_DELAY_SECONDS": "-1"})


@pytest.mark.parametrize(
    "name", ["SCRAPESPY_RATE_LIMIT_PER_SECOND", "SCRAPESPY_WEBHOOK_TIMEOUT_SECONDS"]
)
@pytest.mark.parametrize("text", ["0", "-2", "nan", "inf"])
def test_a_rate_or_a_period_must_be_a_finite_number_above_zero(name: str, text: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Config.from_env({name: text})
