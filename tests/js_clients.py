"""Run the JavaScript Firecrawl clients of ``tests/js`` (``make js`` installs them) as a user's
program would, against a service, and read what they print.

Each script takes its call as one JSON argument, finds the service in ``FIRECRAWL_API_URL`` and
the key in ``FIRECRAWL_API_KEY`` (the variables both clients read), and prints its answer as
JSON on the last line of stdout. Without Node or the installed packages the tests skip, except
under CI, where that is a failure (as an unreachable PostgreSQL is).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from harness.service import ROOT

JS = ROOT / "tests" / "js"
PACKAGES = ("@mendable/firecrawl-js", "firecrawl-mcp", "@modelcontextprotocol/sdk")


def node() -> str:
    """The ``node`` executable, once the pinned packages are installed; else skip (fail on CI)."""
    found = shutil.which("node")
    missing = [name for name in PACKAGES if not (JS / "node_modules" / name).is_dir()]
    problem = (
        "node is not on PATH"
        if found is None
        else f"{', '.join(missing)} not installed in tests/js (run `make js`)"
        if missing
        else None
    )
    if problem is None:
        assert found is not None
        return found
    if os.environ.get("CI"):
        pytest.fail(problem)
    pytest.skip(problem)


def run(
    script: str,
    call: Any,
    *,
    base: str,
    key: str | None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> Any:
    """What ``tests/js/<script>`` printed for ``call``, against the service at ``base``."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("FIRECRAWL_", "SCRAPESPY_"))
    }
    environ["FIRECRAWL_API_URL"] = base
    if key is not None:
        environ["FIRECRAWL_API_KEY"] = key
    environ.update(env or {})
    done = subprocess.run(
        [node(), str(JS / script), json.dumps(call)],
        cwd=JS,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, (
        f"{script} exited {done.returncode}\nstdout:\n{done.stdout[-3000:]}\n"
        f"stderr:\n{done.stderr[-3000:]}"
    )
    return json.loads(lines[-1])
