"""The ``scrapespy`` command: run the service and administer accounts, keys and credits; scrape
a page through the API (``scrapespy scrape URL``) and serve the MCP server (``scrapespy mcp``).

Admin commands work while the server runs, against the same database. ``scrape`` and ``mcp`` are
clients of a running service (``SCRAPESPY_URL``, ``SCRAPESPY_API_KEY``), through the Python client
of clients/python, imported only for them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from service.billing import accounts, keys, ledger
from service.core.config import Config, ConfigError
from service.core.vocabulary import AUTO, ENGINES, TIERS
from service.db import Database

log = logging.getLogger("scrapespy")


def _database(config: Config, *, migrate: bool = True) -> Database:
    database = Database(config.database_url, threads=1)
    if migrate:
        database.upgrade()
    return database


def configure_logging(level: str, fmt: str = "json") -> None:
    """The service's own handler on stderr, not Scrapy's root handler: a crawler replaces that
    one with its own, in Scrapy's text format, so its start-up lines (settings and components,
    pretty-printed over many lines) broke the JSON lines."""
    from scrapy.utils.log import configure_logging as scrapy_logging

    from service.process.observability import log_through

    scrapy_logging({"LOG_LEVEL": level, "LOG_INSTALL_ROOT_HANDLER": False})
    log_through(logging.StreamHandler(), level, fmt)


def serve(config: Config, host: str, port: int, inherited_fd: int | None = None) -> int:
    from service.core.reactor import install

    install()
    configure_logging(config.log_level, config.log_format)

    from service.core.reactor import running
    from service.process.daemon import ScrapespyService

    reactor = running()
    service = ScrapespyService(config, host, port, inherited_fd=inherited_fd)
    reactor.callWhenRunning(service.startService)
    reactor.addSystemEventTrigger("before", "shutdown", service.stopService)
    reactor.run(installSignalHandlers=True)
    return service.exit_code


def _print_json(data: Any) -> None:
    print(json.dumps(data, sort_keys=True))


def parser() -> argparse.ArgumentParser:
    """The command line: the service's own commands, the admin's, and the client's."""
    parser = argparse.ArgumentParser(prog="scrapespy", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_service_commands(sub)
    _add_account_commands(sub)
    _add_key_commands(sub)
    _add_client_commands(sub)
    _add_credit_commands(sub)
    return parser


def _add_service_commands(sub: Any) -> None:
    p_serve = sub.add_parser("serve", help="run the HTTP service")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8080)
    p_serve.add_argument(
        "--workers", type=int, default=1, help="processes sharing the listening socket"
    )
    p_serve.add_argument("--inherit-fd", type=int, default=None, help=argparse.SUPPRESS)

    p_browser = sub.add_parser(
        "browser",
        help="run one Playwright browser server on the system Chromium, for another host's "
        "SCRAPESPY_BROWSER_ENDPOINTS; prints its ws endpoint",
    )
    p_browser.add_argument("--port", type=int, required=True)
    p_browser.add_argument("--host", default="127.0.0.1")
    p_browser.add_argument(
        "--token-env",
        default="SCRAPESPY_BROWSER_ENDPOINT_TOKEN",
        help="the variable holding the token clients must send (none set: no token asked)",
    )

    p_db = sub.add_parser("db", help="database schema")
    p_db.add_argument("action", choices=["upgrade"])


def _add_account_commands(sub: Any) -> None:
    p_acc = sub.add_parser("accounts", help="manage accounts")
    acc = p_acc.add_subparsers(dest="action", required=True)
    p_create = acc.add_parser("create")
    p_create.add_argument("email")
    p_create.add_argument("--password-stdin", action="store_true")
    p_show = acc.add_parser("show")
    p_show.add_argument("email")
    p_show.add_argument("--json", action="store_true")
    p_unlock = acc.add_parser("unlock-residential")
    p_unlock.add_argument("email")


def _add_key_commands(sub: Any) -> None:
    p_keys = sub.add_parser("keys", aliases=["key"], help="API keys (several per account)")
    k = p_keys.add_subparsers(dest="action", required=True)
    p_list = k.add_parser("list", help="the account's keys: id, label, prefix, cap, use")
    p_list.add_argument("email")
    p_list.add_argument("--json", action="store_true")
    p_new = k.add_parser("create", help="one more key for the account (shown once)")
    p_new.add_argument("email")
    p_new.add_argument("--label", default="")
    p_new.add_argument("--cap", default="", help="monthly cap in credits (default: none)")
    p_regen = k.add_parser(
        "regenerate", help="a new secret for a key (the only one by default); the old one stops"
    )
    p_regen.add_argument("email")
    p_regen.add_argument("--key", help="the key's id or prefix (when the account has several)")
    p_label = k.add_parser("label", help="relabel a key")
    p_label.add_argument("email")
    p_label.add_argument("key", help="the key's id or prefix")
    p_label.add_argument("label")
    p_cap = k.add_parser("cap", help="set a key's monthly cap in credits, or 'none'")
    p_cap.add_argument("email")
    p_cap.add_argument("key", help="the key's id or prefix")
    p_cap.add_argument("cap")
    p_revoke = k.add_parser("revoke", help="stop a key for good")
    p_revoke.add_argument("email")
    p_revoke.add_argument("key", help="the key's id or prefix")


def _add_client_commands(sub: Any) -> None:
    p_scrape = sub.add_parser(
        "scrape",
        help="scrape a page through the API (SCRAPESPY_API_KEY, SCRAPESPY_URL); print markdown",
        description="Scrape URL through a running service and print its markdown (or the whole "
        "result as JSON). With --select, the markdown format prints the selected values instead, "
        "a 'name: value' line each. Exit status 1 when the scrape or the request failed (the "
        "error on stderr), 2 for a usage error or a missing SCRAPESPY_API_KEY.",
    )
    p_scrape.add_argument("url")
    p_scrape.add_argument("--engine", choices=[*ENGINES, AUTO], default=None)
    p_scrape.add_argument("--proxy", choices=[*TIERS, AUTO], default=None)
    p_scrape.add_argument("--format", choices=["markdown", "json"], default="markdown")
    p_scrape.add_argument(
        "--main", action="store_true", help="only the page's main content (only_main_content)"
    )
    p_scrape.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="NAME=CSS",
        help="extract what a CSS selector matches under NAME (repeatable)",
    )
    p_scrape.add_argument("--timeout", type=float, default=None, help="seconds, at most 120")

    sub.add_parser("mcp", help="serve the MCP server over stdio (SCRAPESPY_API_KEY, SCRAPESPY_URL)")


def _add_credit_commands(sub: Any) -> None:
    p_credits = sub.add_parser("credits", help="credits")
    c = p_credits.add_subparsers(dest="action", required=True)
    p_grant = c.add_parser("grant")
    p_grant.add_argument("email")
    p_grant.add_argument("credits", type=int)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "scrape":
        from service.process.client_commands import scrape

        return scrape(args)
    if args.command == "mcp":
        from service.process.client_commands import serve_mcp

        return serve_mcp()
    try:
        config = Config.from_env()
    except ConfigError as exc:
        print(f"scrapespy: {exc}", file=sys.stderr)
        return 2

    if args.command == "browser":
        from service.browser.server import exec_server

        exec_server(
            host=args.host,
            port=args.port,
            token=os.environ.get(args.token_env, ""),
            chromium_path=config.chromium_path,
            max_heap_mb=config.browser_max_heap_mb or None,
        )

    if args.command == "serve":
        if args.workers > 1 and args.inherit_fd is None:
            from service.process.workers import supervise

            configure_logging(config.log_level, config.log_format)
            return supervise(config, args.host, args.port, args.workers)
        return serve(config, args.host, args.port, inherited_fd=args.inherit_fd)

    database = _database(config)
    try:
        return _admin(args, config, database)
    except accounts.NoSuchAccount as exc:
        print(f"scrapespy: no account with email {exc.args[0]!r}", file=sys.stderr)
        return 1
    except accounts.AccountExists as exc:
        print(f"scrapespy: an account with email {exc.args[0]!r} already exists", file=sys.stderr)
        return 1
    except keys.KeyRefused as exc:
        print(f"scrapespy: {exc}", file=sys.stderr)
        return 1
    finally:
        database.stop()


def _admin(args: argparse.Namespace, config: Config, database: Database) -> int:
    run = database.run_sync
    if args.command == "db":
        print("database is up to date")
        return 0
    if args.command == "accounts" and args.action == "create":
        password_hash = None
        if args.password_stdin:
            from service.billing.passwords import hash_password

            password_hash = hash_password(sys.stdin.readline().rstrip("\n"))
        account_id = run(
            accounts.create,
            args.email,
            trials=config.residential_trials,
            password_hash=password_hash,
        )
        print(f"created account {accounts.normalise_email(args.email)} (id {account_id})")
        return 0
    account_id = run(accounts.find_id, args.email)
    if args.command == "accounts" and args.action == "show":
        summary = run(accounts.summary, account_id)
        if args.json:
            _print_json(summary)
        else:
            for name, value in summary.items():
                print(f"{name}: {value}")
        return 0
    if args.command == "accounts" and args.action == "unlock-residential":
        run(accounts.unlock_residential, account_id)
        print(f"residential proxies unlocked for {args.email}")
        return 0
    if args.command in ("keys", "key"):
        return _keys(args, database, account_id)
    if args.command == "credits":
        if args.credits <= 0:
            print("scrapespy: credits must be a positive integer", file=sys.stderr)
            return 2
        run(ledger.credit, account_id, args.credits, kind="grant", reference="cli")
        print(f"granted {args.credits} credits to {args.email}")
        return 0
    return 2


def _keys(args: argparse.Namespace, database: Database, account_id: int) -> int:
    run = database.run_sync
    if args.action == "list":
        listed = run(keys.listed, account_id)
        if args.json:
            _print_json([_key_json(key) for key in listed])
        for info in [] if args.json else listed:
            capped = "none" if info.monthly_cap is None else info.monthly_cap
            used = info.last_used_at.isoformat() if info.last_used_at else "never"
            print(
                f"{info.id}\t{info.prefix}…\t{info.label or '-'}\tcap {capped}\t"
                f"spent this month {info.spent_this_month}\tlast used {used}"
            )
        return 0
    if args.action == "create":
        key = run(keys.create, account_id, label=args.label, cap=keys.parse_cap(args.cap))
        print("New API key (shown once; the account's other keys keep working):")
        print(key)
        return 0
    if args.action == "regenerate":
        key_id = None if args.key is None else run(keys.find, account_id, args.key)
        key = run(keys.regenerate, account_id, key_id)
        print("New API key (shown once; the previous key no longer works):")
        print(key)
        return 0
    key_id = run(keys.find, account_id, args.key)
    if args.action == "label":
        run(keys.relabel, account_id, key_id, args.label)
        print(f"key {key_id} relabelled")
    elif args.action == "cap":
        limit = keys.parse_cap(args.cap)
        run(keys.set_cap, account_id, key_id, limit)
        print(f"key {key_id}: " + ("no cap" if limit is None else f"monthly cap {limit} credits"))
    else:
        run(keys.revoke, account_id, key_id)
        print(f"key {key_id} revoked")
    return 0


def _key_json(key: keys.KeyInfo) -> dict[str, Any]:
    return {
        "id": key.id,
        "label": key.label,
        "prefix": key.prefix,
        "created_at": key.created_at.isoformat(),
        "last_used_at": key.last_used_at.isoformat() if key.last_used_at else None,
        "monthly_cap": key.monthly_cap,
        "spent_this_month": key.spent_this_month,
    }


if __name__ == "__main__":
    raise SystemExit(main())
