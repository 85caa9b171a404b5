"""A usage row as the billing pipeline writes it for a billed success (pipelines.billing.usage_row),
for tests and benchmarks that settle holds without scraping."""

from __future__ import annotations

from typing import Any

from service.db.tables import UsageRow


def a_success(account_id: int, **values: Any) -> UsageRow:
    row = UsageRow(
        account_id=account_id,
        url="http://example.com/",
        engine="static",
        tier_requested="none",
        tier_used="none",
        status_code=200,
        success=True,
        blocked=False,
        error=None,
        elapsed_ms=12,
    )
    return row._replace(**values)
