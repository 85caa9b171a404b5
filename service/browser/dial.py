"""How the browser egress guard reaches a target (service.browser.egress): the target's public
addresses, resolved on the loop's resolver thread, a connection to the first that answers, or a
tunnel through the operator's upstream proxy. Each failure is a :class:`Refusal` naming why, as the
route remembers it.
"""

from __future__ import annotations

import asyncio
import socket

from service.browser.wire import Upstream, authority, response_status
from service.egress.addresses import is_public_address, parse_host_literal

HEAD_LIMIT = 64 * 1024

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Refusal(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def public_addresses(
    host: str, port: int, *, allow_private: bool, timeout: float
) -> tuple[list[str], int]:
    """The public addresses ``host`` stands for, and how many private ones were dropped;
    refuses when none is left."""
    name = host.lower().rstrip(".")
    literal = parse_host_literal(host)
    if literal is not None:
        if not (allow_private or is_public_address(literal)):
            raise Refusal("blocked")
        return [str(literal)], 0
    if not name or any(c in name for c in "/\\@ \t"):
        raise Refusal("bad_request")
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(name, port, type=socket.SOCK_STREAM), timeout
        )
    except (OSError, UnicodeError, TimeoutError):
        raise Refusal("unresolvable") from None
    found = list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))
    allowed = [a for a in found if allow_private or is_public_address(a)]
    if found and not allowed:
        raise Refusal("blocked")
    if not allowed:
        raise Refusal("unresolvable")
    return allowed, len(found) - len(allowed)


async def connect_any(addresses: list[str], port: int, timeout: float) -> Stream:
    reason = "unreachable"
    for address in addresses:
        try:
            return await connect_one(address, port, timeout)
        except Refusal as refusal:
            reason = refusal.reason
    raise Refusal(reason)


async def connect_one(host: str, port: int, timeout: float) -> Stream:
    try:
        return await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=HEAD_LIMIT), timeout
        )
    except ConnectionRefusedError:
        raise Refusal("refused") from None
    except TimeoutError:
        raise Refusal("timeout") from None
    except OSError:
        raise Refusal("unreachable") from None


async def upstream_tunnel(
    upstream: Upstream,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    host: str,
    port: int,
    timeout: float,
) -> None:
    target = authority(host, port).encode()
    head = b"CONNECT " + target + b" HTTP/1.1\r\nHost: " + target + b"\r\n"
    if upstream.authorization:
        head += b"Proxy-Authorization: " + upstream.authorization + b"\r\n"
    writer.write(head + b"\r\n")
    try:
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        writer.transport.abort()
        raise Refusal("proxy") from None
    status = response_status(answer)
    if status != 200:
        writer.transport.abort()
        # 407: our credentials were refused (the proxy's fault); anything else may be the
        # target's, as for a static download's TunnelError.
        raise Refusal("proxy" if status == 407 else "proxy_midway")
