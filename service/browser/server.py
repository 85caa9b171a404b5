"""``scrapespy browser``: one Playwright browser server on the system Chromium, for a service's
``SCRAPESPY_BROWSER_ENDPOINTS`` (:mod:`service.browser.pool`).

Python's Playwright has no ``launch_server``; its bundled driver (Node and playwright-core) has.
The command becomes that Node process (``exec``: killing the command's pid kills the server,
and Chromium, which Playwright drives through a pipe, goes with it), running :data:`SCRIPT`:
``chromium.launchServer`` with the options the service's own launch uses
(:func:`service.browser.launch.chromium_launch_options`, ``SCRAPESPY_CHROMIUM_PATH`` and
``SCRAPESPY_BROWSER_MAX_HEAP_MB``), and Chromium's own proxy pointed at a closed port: every
context the service makes has the service's egress guard as its proxy, and whatever Chromium
would send outside a context goes nowhere.

With a token (the variable ``--token-env`` names, ``SCRAPESPY_BROWSER_ENDPOINT_TOKEN`` by
default) the server listens behind a small front in the same Node process that lets a
WebSocket through only with ``Authorization: Bearer <token>`` (or ``?token=<token>``) and
answers 401 otherwise; the token is compared in constant time and never printed. The server
prints its endpoint (``ws://host:port/``, without the token) on one line once it listens.
"""

from __future__ import annotations

import json
import os
import sys

from service.browser.launch import chromium_launch_options

# Chromium's own traffic, outside the service's contexts, goes to this closed port.
NOWHERE = "http://127.0.0.1:9"

SCRIPT = r"""
const http = require('http');
const net = require('net');
const crypto = require('crypto');
const { chromium } = require(process.env.SCRAPESPY_PW_PACKAGE);
const options = JSON.parse(process.env.SCRAPESPY_PW_OPTIONS);
const host = process.env.SCRAPESPY_PW_HOST;
const port = Number(process.env.SCRAPESPY_PW_PORT);
const token = process.env.SCRAPESPY_PW_TOKEN || '';
delete process.env.SCRAPESPY_PW_TOKEN;

function allowed(req) {
  const url = new URL(req.url || '/', 'http://localhost');
  const auth = req.headers['authorization'] || '';
  const given = auth.startsWith('Bearer ') ? auth.slice(7) : (url.searchParams.get('token') || '');
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(token).digest();
  return given.length > 0 && crypto.timingSafeEqual(a, b);
}

(async () => {
  let inner;
  if (!token) {
    inner = await chromium.launchServer({ ...options, host, port, wsPath: '/' });
  } else {
    inner = await chromium.launchServer({ ...options, host: '127.0.0.1', port: 0,
      wsPath: '/' + crypto.randomBytes(16).toString('hex') });
    const target = new URL(inner.wsEndpoint());
    const front = http.createServer((req, res) => { res.writeHead(426); res.end(); });
    front.on('upgrade', (req, socket, head) => {
      if (!allowed(req)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      const upstream = net.connect(Number(target.port), '127.0.0.1', () => {
        const lines = [`GET ${target.pathname} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) {
          if (req.rawHeaders[i].toLowerCase() !== 'authorization')
            lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        }
        upstream.write(lines.join('\r\n') + '\r\n\r\n');
        if (head && head.length) upstream.write(head);
        socket.pipe(upstream).pipe(socket);
      });
      upstream.setNoDelay(true);
      socket.setNoDelay(true);
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
    });
    await new Promise((resolve, reject) => {
      front.once('error', reject);
      front.listen(port, host, resolve);
    });
  }
  const shown = host.includes(':') ? `[${host}]` : host;
  console.log(`ws://${shown}:${port}/`);
  const stop = async () => { try { await inner.close(); } finally { process.exit(0); } };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
})().catch((error) => { console.error(`scrapespy browser: ${error.message}`); process.exit(1); });
"""


def server_options(
    chromium_path: str, *, max_heap_mb: int | None = None, as_root: bool | None = None
) -> dict:
    """The launch options of the server's Chromium: the local launch's, its own proxy closed."""
    options = chromium_launch_options(
        chromium_path,
        as_root=os.geteuid() == 0 if as_root is None else as_root,
        max_heap_mb=max_heap_mb,
    )
    closed = [f"--proxy-server={NOWHERE}", "--proxy-bypass-list=<-loopback>"]
    options["args"] = [*options["args"], *closed]
    return {
        "executablePath": options["executable_path"],
        "headless": options["headless"],
        "args": options["args"],
        "ignoreDefaultArgs": options["ignore_default_args"],
    }


def exec_server(
    *, host: str, port: int, token: str, chromium_path: str, max_heap_mb: int | None
) -> None:
    """Become the Node process of the browser server (does not return)."""
    from patchright._impl._driver import compute_driver_executable

    node, cli = compute_driver_executable()
    env = dict(os.environ)
    env.update(
        SCRAPESPY_PW_PACKAGE=os.path.dirname(str(cli)),
        SCRAPESPY_PW_OPTIONS=json.dumps(server_options(chromium_path, max_heap_mb=max_heap_mb)),
        SCRAPESPY_PW_HOST=host,
        SCRAPESPY_PW_PORT=str(port),
        SCRAPESPY_PW_TOKEN=token,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(str(node), [str(node), "-e", SCRIPT], env)
