"""``twistd scrapespy``: the service as a Twisted daemon, configured like ``scrapespy serve``.

    twistd -n scrapespy --port 8080                 # foreground
    twistd --pidfile var/scrapespy.pid --logfile var/scrapespy.log scrapespy --port 8080

twistd installs its reactor before it builds the service; scrapy-playwright needs asyncio's, so
this plugin installs it when twistd lists its plugins (or give ``twistd -r asyncio``).
"""

from __future__ import annotations

import sys

from twisted.application.service import IServiceMaker
from twisted.plugin import IPlugin
from twisted.python import usage
from zope.interface import implementer

if "twisted.internet.reactor" not in sys.modules:
    from twisted.internet import asyncioreactor

    asyncioreactor.install()


class Options(usage.Options):
    optParameters = [
        ["host", None, "127.0.0.1", "interface to listen on"],
        ["port", "p", 8080, "port to listen on", int],
    ]


@implementer(IServiceMaker, IPlugin)
class ScrapespyServiceMaker:
    tapname = "scrapespy"
    description = "scrapespy: the prepaid web scraping API"
    options = Options

    def makeService(self, options: Options):  # noqa: N802 - Twisted's name
        from scrapy.utils.reactor import is_asyncio_reactor_installed

        if not is_asyncio_reactor_installed():
            raise SystemExit("scrapespy needs the asyncio reactor: run twistd -r asyncio scrapespy")
        from service.core.config import Config
        from service.process.daemon import ScrapespyService
        from service.process.observability import log_to_twisted

        config = Config.from_env()
        # twistd owns the log file and captures stdout; Python logging goes into it directly
        log_to_twisted(config.log_level, config.log_format)
        return ScrapespyService(config, options["host"], int(options["port"]))


service_maker = ScrapespyServiceMaker()
