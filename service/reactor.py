"""Install the asyncio reactor before anything imports ``twisted.internet.reactor``.

Klein imports the reactor at import time, and scrapy-playwright refuses any other reactor, so
every entry point calls :func:`install` first.
"""

from __future__ import annotations

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


def install() -> None:
    from scrapy.utils.reactor import install_reactor, is_asyncio_reactor_installed

    import sys

    if "twisted.internet.reactor" in sys.modules:
        if not is_asyncio_reactor_installed():
            raise RuntimeError("a reactor other than asyncio is already installed")
        return
    install_reactor(ASYNCIO_REACTOR)
