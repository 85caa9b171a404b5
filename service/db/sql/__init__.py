"""The current PL/pgSQL functions of PostgreSQL, one file each: the one copy of their text.

Each ``<function>.sql`` here is the function as the database at the newest migration has it,
and the migration that made that version (the newest one to define the function) loads it with
:func:`load`: each current function is written out once, here, and nowhere else. Older
migrations keep the text of the versions they made, frozen in their own module (0002's hold and
settlement, 0003's authorize-and-hold, 0013's page functions): a database upgraded one step at
a time goes through each of those versions, and a downgrade brings them back, so they are
history, not copies of the current text.

The money moves three ways, and these functions are one of them: ``service.billing.ledger``
holds and settles on SQLite through the statements of ``service.db.hot``, and on PostgreSQL
calls these (``pg_*`` in service.db.hot). tests/test_ledger_properties.py drives the same
operations through each way and checks they agree, and that a database at the newest migration
has exactly these definitions; tests/test_billing_backends.py compares SQLite's ledger with
PostgreSQL's after the same random sequences. The amounts come from service.billing.rules;
what of its settlement rule the functions apply themselves, and why, is
docs/decisions/0003-billing-rules.md.

To change a function:

1. copy this file's text, as it is, into the migration that loads it now, as that migration's
   own constant in place of the :func:`load` call (its version becomes history);
2. edit the file;
3. add a migration whose ``upgrade`` executes ``load(name)`` and whose ``downgrade`` executes
   the text frozen in step 1, and name the new revision in the file's first line.

Every file starts with ``CREATE OR REPLACE FUNCTION``, so that it can be executed again on a
database that has the function (a changed result type needs a ``DROP FUNCTION`` first, as
migration 0007 does). Comments before it stay out of the database; keep them free of ``:``
(SQLAlchemy's ``text`` reads ``:name`` as a parameter).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent

# every function of the service's schema, in the order a fresh database creates them
FUNCTIONS = (
    "scrapespy_hold",
    "scrapespy_authorize_hold",
    "scrapespy_settle",
    "scrapespy_settle_balance",
    "scrapespy_start_page",
    "scrapespy_finish_crawl_page",
    "scrapespy_finish_page",
    "scrapespy_settle_finish_page",
)
# the crawl lock's trigger function (migration 0010) is made with its triggers, which have no
# ``CREATE OR REPLACE``, and moves no money: it stays in that migration, its one copy
ELSEWHERE = ("scrapespy_crawl_lock_freed",)


def load(name: str) -> str:
    """The ``CREATE OR REPLACE FUNCTION`` statement of the current ``name``."""
    if name not in FUNCTIONS:
        raise KeyError(f"no such function: {name}")
    return (HERE / f"{name}.sql").read_text(encoding="utf-8")


def body(name: str) -> str:
    """What PostgreSQL keeps of ``name``'s definition as its source (``pg_proc.prosrc``): the
    text between its ``$$`` quotes."""
    parts = load(name).split("$$")
    assert len(parts) == 3, name
    return parts[1]
