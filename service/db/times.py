"""Times as the databases give them back, and as answers write them."""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(moment: datetime) -> datetime:
    """SQLite gives naive datetimes (written in UTC); PostgreSQL gives aware ones."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def timestamp(moment: datetime) -> str:
    """An answer's time: ISO 8601 in UTC with microseconds, ``Z`` for the zone."""
    return as_utc(moment).isoformat(timespec="microseconds").replace("+00:00", "Z")
