"""What the jobs and crawl benchmarks share: a minimal keep-alive HTTP/1.1 client of the
service on asyncio streams (a batch costs it one POST and its polls), the job statuses that end
a job, and the report's rows."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")


class Connection:
    """One keep-alive HTTP/1.1 connection to the service (Twisted answers chunked)."""

    def __init__(self, base: str, key: str):
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.key = key
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        data = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"X-API-Key: {self.key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        status_line = await self.reader.readline()
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                chunks.append(await self.reader.readexactly(size + 2))
            await self.reader.readline()
            return int(status_line.split()[1]), b"".join(c[:-2] for c in chunks)
        length = int(headers.get("content-length", "0"))
        return int(status_line.split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def verdict(ok: bool | None, failed: int = 0) -> str:
    if failed:
        return f"NOT MEASURED: {failed} pages failed"
    return "-" if ok is None else ("meets the bar" if ok else "MISSES the bar")


def row(name: str, figure: str, bar: str, said: str) -> str:
    return f"{name:<52}{figure:>8}  {bar:<10}{said}".rstrip()
