"""The operator's proxies of one tier (:class:`ProxyPool`): parsed from the settings with their
country, picked round-robin over the healthy ones, benched after a failure that is theirs or after
``SCRAPESPY_PROXY_MAX_STRIKES`` strikes in a row. :mod:`middlewares.proxy_pool` sends requests
through them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from service.core.places import split_tag

# the middleware's logger: what an operator filters on for the pools' health
logger = logging.getLogger("middlewares.proxy_pool")


class Proxy:
    """One proxy of a pool. ``url`` carries the credentials: only ``label`` is ever shown."""

    def __init__(
        self,
        key: str,
        url: str,
        server: str,
        label: str,
        user: str,
        password: str,
        country: str | None = None,
    ):
        self.key = key
        self.country = country
        self.url = url
        self.server = server
        self.label = label
        self.username = user
        self.password = password
        self.benched_until = 0.0
        self.strikes = 0

    @classmethod
    def parse(cls, raw: str, tier: str, index: int) -> Proxy:
        """Read an operator's proxy entry, ``[cc=]URL`` (service.core.places); errors name the
        entry, never its credentials."""
        where = f"{tier} proxy #{index + 1}"
        try:
            country, text = split_tag(raw)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if "://" not in text:
            text = "http://" + text
        try:
            parts = urlsplit(text)
            host, port = parts.hostname, parts.port
        except ValueError:
            raise ValueError(f"{where} is not a valid proxy URL") from None
        if not host:
            raise ValueError(f"{where} has no host")
        label = f"[{host}]:{port or 80}" if ":" in host else f"{host}:{port or 80}"
        if parts.scheme != "http":
            raise ValueError(f"{where} ({label}): only http:// proxies are supported")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"{where} ({label}): a proxy URL has no path or query")
        return cls(
            key=f"{tier}/{index}",
            url=text,
            server=f"http://{label}",
            label=label,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            country=country,
        )

    def playwright_settings(self) -> dict[str, str]:
        settings = {"server": self.server}
        if self.username:
            settings["username"] = self.username
            settings["password"] = self.password
        return settings

    def __repr__(self) -> str:
        return f"<Proxy {self.key} {self.label}>"


class ProxyPool:
    """The proxies of one tier, handed out round-robin, benched ones skipped. A request that
    names a country gets that country's proxies only; one that names none, any of them."""

    def __init__(
        self,
        tier: str,
        proxies: Iterable[Proxy],
        *,
        bench_seconds: float = 60.0,
        max_strikes: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.tier = tier
        self.proxies = list(proxies)
        self.bench_seconds = bench_seconds
        self.max_strikes = max_strikes
        self.clock = clock
        self._by_key = {proxy.key: proxy for proxy in self.proxies}
        self._by_country: dict[str | None, list[Proxy]] = {None: self.proxies}
        for proxy in self.proxies:
            if proxy.country is not None:
                self._by_country.setdefault(proxy.country, []).append(proxy)
        self._next: dict[str | None, int] = {}

    @classmethod
    def from_urls(cls, tier: str, urls: Iterable[str], **kwargs: Any) -> ProxyPool:
        return cls(tier, (Proxy.parse(url, tier, i) for i, url in enumerate(urls)), **kwargs)

    def __len__(self) -> int:
        return len(self.proxies)

    def get(self, key: str | None) -> Proxy | None:
        return self._by_key.get(key) if key else None

    def available(self, proxy: Proxy, exclude: Collection[str] = ()) -> bool:
        return proxy.key not in exclude and proxy.benched_until <= self.clock()

    def pick(
        self, exclude: Collection[str] = (), prefer: str | None = None, country: str | None = None
    ) -> Proxy | None:
        """A healthy proxy not in ``exclude``, in ``country`` when given; ``prefer`` keeps a
        redirect (or a session) on its proxy, when that proxy is in ``country``."""
        preferred = self.get(prefer)
        if (
            preferred is not None
            and (country is None or preferred.country == country)
            and self.available(preferred, exclude)
        ):
            return preferred
        proxies = self._by_country.get(country, ())
        count, start = len(proxies), self._next.get(country, 0)
        for step in range(count):
            index = (start + step) % count
            proxy = proxies[index]
            if self.available(proxy, exclude):
                self._next[country] = (index + 1) % count
                return proxy
        return None

    def bench(self, proxy: Proxy, reason: str) -> None:
        proxy.strikes = 0
        proxy.benched_until = self.clock() + self.bench_seconds
        logger.warning(
            "%s proxy %s benched for %g s: %s", self.tier, proxy.label, self.bench_seconds, reason
        )

    def strike(self, proxy: Proxy, reason: str) -> bool:
        """Count a failure that may not be the proxy's; True when it got the proxy benched."""
        proxy.strikes += 1
        if proxy.strikes >= self.max_strikes:
            self.bench(proxy, f"{reason} ({self.max_strikes} failures in a row)")
            return True
        logger.info("%s proxy %s failed: %s", self.tier, proxy.label, reason)
        return False

    def succeeded(self, proxy: Proxy) -> None:
        proxy.strikes = 0


def shown(proxy: Proxy) -> str:
    return proxy.label if proxy.country is None else f"{proxy.country}={proxy.label}"
