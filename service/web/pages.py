"""What the fronts' HTML pages share: static files served with a version of their content (the
favicon is this package's own, shown by the dashboard and the reference alike), and how a
number of credits is written."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).with_name("static")

CONTENT_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    version: str


def load_assets(folder: Path) -> dict[str, Asset]:
    """The files of ``folder`` a page may link to, by name, with the shared ones (the favicon)."""
    assets = {}
    for path in sorted([*STATIC.iterdir(), *folder.iterdir()]):
        if path.is_file() and path.suffix in CONTENT_TYPES:
            body = path.read_bytes()
            version = hashlib.sha256(body).hexdigest()[:10]
            assets[path.name] = Asset(body, CONTENT_TYPES[path.suffix], version)
    return assets


def credits_text(value: int) -> str:
    return f"{value:,}".replace(",", "\u202f")
