"""The benchmark's target: nginx when it is installed, else a fast Twisted static server, in a
process of its own.

    python -m bench.site FOLDER PORT [DELAY]

nginx serves the pages with one worker process and far less CPU than Twisted does: on a 2-core
machine the target's CPU is taken from every contender alike, and with Twisted's server the
target, not the contenders, set the throughput at concurrency 32. ``BENCH_SITE=twisted`` keeps
the Twisted server. With ``DELAY`` (seconds), Twisted's server answers each page that late
(bench.jobs' two instances on a site where waiting, not the CPU, sets the pace).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

NGINX_CONF = """\
daemon off;
master_process off;
{user}
worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/error.log crit;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    types {{ text/html html; text/plain txt; application/json json; image/jpeg jpg; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {state}/body;
    proxy_temp_path {state}/proxy;
    fastcgi_temp_path {state}/fastcgi;
    uwsgi_temp_path {state}/uwsgi;
    scgi_temp_path {state}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        root {folder};
    }}
}}
"""


def server_name() -> str:
    """Which server ``main`` runs: ``nginx`` or ``twisted``."""
    if os.environ.get("BENCH_SITE") != "twisted" and shutil.which("nginx"):
        return "nginx"
    return "twisted"


def run_nginx(folder: str, port: int) -> None:
    nginx = shutil.which("nginx")
    assert nginx is not None
    state = Path(tempfile.mkdtemp(prefix="bench-nginx-"))
    conf = state / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user="user root;" if os.geteuid() == 0 else "",  # else nginx drops to nobody
            state=state,
            port=port,
            folder=Path(folder).resolve(),
        )
    )
    # replaces this process: the benchmark's SIGTERM reaches nginx itself
    os.execv(nginx, [nginx, "-p", str(state), "-c", str(conf), "-e", str(state / "error.log")])


def run_twisted(folder: str, port: int) -> None:
    from twisted.internet import reactor
    from twisted.web.server import Site
    from twisted.web.static import File

    site = Site(File(folder))
    site.noisy = False
    site.log = lambda request: None  # type: ignore[method-assign]
    reactor.listenTCP(port, site, interface="127.0.0.1", backlog=1024)  # type: ignore[attr-defined]
    print("ready", flush=True)
    reactor.run()  # type: ignore[attr-defined]


def run_late(folder: str, port: int, delay: float) -> None:
    """Twisted's server answering each of the folder's files ``delay`` seconds late, as a far
    site does: what then limits a client is how many pages it has in flight, not its CPU."""
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import NOT_DONE_YET, Site

    root = Path(folder)
    pages = {f"/{path.relative_to(root)}".encode(): path.read_bytes() for path in root.rglob("*")}

    class Late(Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> Any:
            body = pages.get(request.path)

            def answer() -> None:
                if body is None:
                    request.setResponseCode(404)
                else:
                    request.setHeader(b"content-type", b"text/html")
                    request.write(body)
                request.finish()

            reactor.callLater(delay, answer)  # type: ignore[attr-defined]
            return NOT_DONE_YET

    site = Site(Late())
    site.noisy = False
    site.log = lambda request: None  # type: ignore[method-assign]
    reactor.listenTCP(port, site, interface="127.0.0.1", backlog=1024)  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]


def serve(folder: Path, delay: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
    """This module in a process of its own, serving ``folder`` on a free port (each page
    ``delay`` seconds late, when given): the process and the site's base URL, once it answers."""
    from bench.contenders import free_port, wait_port

    port = free_port()
    late = [str(delay)] if delay else []
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.site", str(folder), str(port), *late],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.DEVNULL,
    )
    wait_port(port)
    return process, f"http://127.0.0.1:{port}"


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(10)


def tear_down(cleanups: list[Any], process: subprocess.Popen[bytes], work: Path) -> None:
    """A benchmark's end: its ``cleanups`` in reverse (one that fails does not stop the others),
    then the site's ``process``, then its ``work`` folder."""
    for cleanup in reversed(cleanups):
        try:
            cleanup()
        except Exception:
            pass
    stop(process)
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    folder, port = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3:
        run_late(folder, port, float(sys.argv[3]))
    elif server_name() == "nginx":
        run_nginx(folder, port)
    else:
        run_twisted(folder, port)


if __name__ == "__main__":
    main()
