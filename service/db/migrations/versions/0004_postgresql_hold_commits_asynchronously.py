"""PostgreSQL: the hold commits without waiting for its WAL flush; the settlement checks the account

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 20:40:00

Each of a scrape's two statements waited for the server to flush its commit to disk. The hold
does not need to: it only reserves credits. With ``synchronous_commit`` off for the hold's own
transaction, a crash of the database server can lose the last holds committed (well under a
second's worth), and a lost hold comes out like a released one: nothing was charged, and the
credits it reserved are free again. The balance cannot go negative, and nothing that was charged
is lost, because every settlement still commits durably, and its flush writes out every hold
committed before it as well.

One thing changes for the settlement: after such a crash the server may hand out a lost hold's
id again, to a new hold. A scrape still holding the lost id must not settle that new hold, so
``scrapespy_settle`` now claims a hold only when it belongs to the account the scrape ran for
(the usage row's account, which the service always sends). SQLite has no functions and commits
every transaction the same way: nothing to do there.
"""

from collections.abc import Sequence
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# ``set_config(..., true)`` lasts until the end of the transaction the function runs in (a
# function without its own SET clause does not undo it), so the commit that follows reads it
ASYNC_COMMIT = "    PERFORM set_config('synchronous_commit', 'off', true);\n"

CLAIM = """     WHERE id = p_hold_id AND status = 'held'
    RETURNING account_id, amount, trial INTO v_account, v_amount, v_trial;"""
CLAIM_OWN = """     WHERE id = p_hold_id AND status = 'held'
       AND (p_account_id IS NULL OR account_id = p_account_id)
    RETURNING account_id, amount, trial INTO v_account, v_amount, v_trial;"""


def _sibling(stem: str) -> ModuleType:
    """Another migration of this folder (alembic loads them by path, not as a package)."""
    spec = spec_from_file_location(
        f"scrapespy_migration_{stem}", Path(__file__).with_name(stem + ".py")
    )
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _migrations() -> tuple[str, str]:
    """Migration 0003's authorize-and-hold and 0002's settlement, as they were written."""
    authorize: str = _sibling("0003_postgresql_authorize_hold").AUTHORIZE_HOLD
    settle: str = _sibling("0002_postgresql_ledger_functions").SETTLE
    return authorize, settle


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    authorize, settle = _migrations()
    assert authorize.count("BEGIN\n") == 1 and settle.count(CLAIM) == 1
    op.execute(authorize.replace("BEGIN\n", "BEGIN\n" + ASYNC_COMMIT))
    op.execute(settle.replace(CLAIM, CLAIM_OWN))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    authorize, settle = _migrations()
    op.execute(authorize)
    op.execute(settle)
