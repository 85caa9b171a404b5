"""The recipe's load balancer (deploy/haproxy.cfg) on 127.0.0.1, in front of local instances.

The file is the recipe's own with only what Docker gives it replaced: the instances' addresses
(one ``server`` line per instance for the ``server-template`` that Docker's DNS fills) and the
port it listens on. Used by the tests of the recipe and by ``bench.capacity``.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

from harness.service import call

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def local_config(ports: list[int], listen: int, folder: Path) -> Path:
    """deploy/haproxy.cfg with the instances on 127.0.0.1 instead of Docker's DNS."""
    text = (DEPLOY / "haproxy.cfg").read_text()
    servers = "\n".join(f"    server api{n} 127.0.0.1:{port}" for n, port in enumerate(ports))
    text, found = re.subn(r"^\s*server-template api \d+ api:8080$", servers, text, flags=re.M)
    assert found == 1, "deploy/haproxy.cfg has no server-template line"
    text, found = re.subn(r" init-addr none resolvers docker$", "", text, flags=re.M)
    assert found == 1, "deploy/haproxy.cfg does not resolve through Docker's DNS"
    text, found = re.subn(r"^\s*bind :8080$", f"    bind 127.0.0.1:{listen}", text, flags=re.M)
    assert found == 1, "deploy/haproxy.cfg does not bind :8080"
    path = folder / "haproxy.cfg"
    path.write_text(text)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_haproxy(
    ports: list[int], folder: Path, ready_seconds: float = 60
) -> tuple[subprocess.Popen[bytes], str]:
    """HAProxy with the recipe's configuration in front of ``ports``, and its base URL, once it
    answers ``/healthz`` (it raises past ``ready_seconds``)."""
    listen = free_port()
    proxy = subprocess.Popen(
        ["haproxy", "-db", "-f", str(local_config(ports, listen, folder))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{listen}"
    deadline = time.monotonic() + ready_seconds
    while True:
        try:
            if call("GET", f"{base}/healthz", timeout=5).status == 200:
                return proxy, base
        except OSError:
            pass
        if time.monotonic() > deadline:
            proxy.terminate()
            raise RuntimeError("HAProxy never answered /healthz")
        time.sleep(0.2)
