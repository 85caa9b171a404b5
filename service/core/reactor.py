"""Install the asyncio reactor before anything imports ``twisted.internet.reactor``.

Klein imports the reactor at import time, and scrapy-playwright refuses any other reactor, so
every entry point calls :func:`install` first.
"""

from __future__ import annotations

from typing import Any

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


def install() -> None:
    import sys

    from scrapy.utils.reactor import install_reactor, is_asyncio_reactor_installed

    if "twisted.internet.reactor" in sys.modules:
        if not is_asyncio_reactor_installed():
            raise RuntimeError("a reactor other than asyncio is already installed")
        return
    install_reactor(ASYNCIO_REACTOR)


def running() -> Any:
    """The installed reactor, typed loosely: Twisted's interfaces type it per interface."""
    from twisted.internet import reactor

    return reactor
