"""The benchmark's target: a fast Twisted static server in a process of its own.

python -m bench.site FOLDER PORT
"""

from __future__ import annotations

import sys

from twisted.internet import reactor
from twisted.web.server import Site
from twisted.web.static import File


def main() -> None:
    folder, port = sys.argv[1], int(sys.argv[2])
    site = Site(File(folder))
    site.noisy = False
    site.log = lambda request: None  # type: ignore[method-assign]
    reactor.listenTCP(port, site, interface="127.0.0.1", backlog=1024)  # type: ignore[attr-defined]
    print("ready", flush=True)
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
