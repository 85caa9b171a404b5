"""No Docker engine runs here: the image's files and commands are checked by running the same
commands outside it."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.service import ROOT

DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instruction(name: str) -> str:
    text = DOCKERFILE.replace("\\\n", " ")
    found = re.findall(rf"^{name}\s+(.*)$", text, re.MULTILINE)
    assert found, f"no {name} in the Dockerfile"
    return found[-1].strip()


def test_image_runs_as_a_non_root_user_with_a_data_volume():
    assert instruction("USER") not in ("root", "0")
    assert "/data" in instruction("VOLUME")
    assert "sqlite:////data/" in instruction("ENV")
    assert instruction("EXPOSE") == "8080"
    assert "chromium" in instruction("RUN").split() or "chromium" in DOCKERFILE


def test_the_package_the_image_installs_carries_everything_it_needs(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("scrapespy-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "service/db/migrations/env.py",
        "service/db/migrations/versions/0001_initial_schema.py",
        "twisted/plugins/scrapespy_plugin.py",
        "spiders/feed.py",
        "middlewares/egress_guard.py",
        "pipelines/billing.py",
        "service/reference/templates/reference.html",  # GET /docs, and its assets
        "service/reference/static/reference.css",
        "service/reference/static/reference.js",
        "service/web/static/favicon.svg",  # the dashboard's and the reference's
    ):
        assert needed in names, needed
    copied = " ".join(re.findall(r"^COPY\s+(.*)$", DOCKERFILE, re.MULTILINE))
    for package in ("service", "spiders", "middlewares", "pipelines", "twisted"):
        assert package in copied.split(), package


def test_the_command_serves_and_the_healthcheck_passes(tmp_path, database_url):
    command = shlex.split(" ".join(re.findall(r'"([^"]*)"', instruction("CMD"))))
    assert command[:2] == ["scrapespy", "serve"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = command[1:]
    args[args.index("--host") + 1] = "127.0.0.1"
    args[args.index("--port") + 1] = str(port)
    proc_env = {**os.environ, "SCRAPESPY_DATABASE_URL": database_url}
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("scrapespy")), *args],
        env=proc_env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        healthcheck = (
            instruction("HEALTHCHECK").split("CMD", 1)[1].strip().replace("8080", str(port))
        )
        for _ in range(100):
            ok = subprocess.run(
                ["sh", "-c", healthcheck.replace("python ", f"{sys.executable} ", 1)],
                capture_output=True,
                timeout=10,
            )
            if ok.returncode == 0:
                break
            subprocess.run(["sleep", "0.2"])
        assert ok.returncode == 0, ok.stderr
    finally:
        server.terminate()
        assert server.wait(30) == 0
