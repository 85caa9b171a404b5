"""PostgreSQL: the settlement answers the account's balance after it

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 09:50:00

Every answer of ``POST /scrape`` carries the balance once its scrape was settled
(``X-Credits-Remaining``). ``scrapespy_settle`` already reads it when it claims the hold (for the
charge's ledger entry); it now returns it too, and reads it when the hold was settled before (by
the watchdog or the sweeper), so that the figure comes back in the settlement's own round trip
rather than from another query per scrape. A function's result type cannot be changed in place:
the function is dropped and made again, in this migration's one transaction. SQLite has no
functions: ``service.ledger.settle`` reads the balance in its own transaction.
"""

from collections.abc import Sequence
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SIGNATURE = (
    "scrapespy_settle(integer, bigint, boolean, timestamptz, boolean, integer, text, varchar,"
    " varchar, varchar, integer, boolean, boolean, text, integer)"
)

RETURNS = "RETURNS TABLE (charged bigint, trial_consumed boolean, settled_here boolean)"
# not "balance": an output column is a variable in the body, where accounts.balance is read
RETURNS_BALANCE = (
    "RETURNS TABLE (charged bigint, trial_consumed boolean, settled_here boolean,"
    " balance_after bigint)"
)
ANSWER = "    RETURN QUERY SELECT v_charged, v_consumed, v_claimed;"
ANSWER_BALANCE = """    IF NOT v_claimed THEN
        SELECT a.balance INTO v_balance FROM accounts a WHERE a.id = p_account_id;
    END IF;
    RETURN QUERY SELECT v_charged, v_consumed, v_claimed, v_balance;"""


def _sibling(stem: str) -> ModuleType:
    """Another migration of this folder (alembic loads them by path, not as a package)."""
    spec = spec_from_file_location(
        f"scrapespy_migration_{stem}", Path(__file__).with_name(stem + ".py")
    )
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _settle_of_0007() -> str:
    """``scrapespy_settle`` as migration 0007 left it."""
    settle: str = _sibling("0007_several_api_keys").SETTLE
    return settle


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    settle = _settle_of_0007()
    assert settle.count(RETURNS) == 1 and settle.count(ANSWER) == 1
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
    op.execute(settle.replace(RETURNS, RETURNS_BALANCE).replace(ANSWER, ANSWER_BALANCE))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
    op.execute(_settle_of_0007())
