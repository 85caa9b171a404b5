"""Job ids as Firecrawl shows them.

Firecrawl's job ids are dashed UUIDs (its OpenAPI description's ``format: uuid``; its
controllers make them with ``uuidv4()``). A native job's id is a UUID's 32 hex digits
(service.jobs.batches, service.jobs.crawls), so the Firecrawl routes and webhooks show the same
UUID with its dashes (:func:`shown_id`) and take either form back (:func:`native_id`): one job,
two spellings, nothing stored twice.
"""

from __future__ import annotations

import uuid

MAX_ID_CHARS = 64  # what a path's id is cut to before it is looked up


def shown_id(public_id: str) -> str:
    """The job's id as Firecrawl shows it: the dashed UUID of the native id."""
    try:
        return str(uuid.UUID(hex=public_id))
    except ValueError:  # not a UUID's hex digits: shown as it is
        return public_id


def native_id(job_id: str) -> str:
    """The native id of the job a Firecrawl route names, dashed (as shown) or not; what is not
    a UUID is looked up as it is, and found by no job."""
    try:
        return uuid.UUID(job_id[:MAX_ID_CHARS]).hex
    except ValueError:
        return job_id[:MAX_ID_CHARS]


def page_id(public_id: str, position: int) -> str:
    """The id of a job's page, a UUID as Firecrawl's scrape ids are: the same for the same page
    of the job at every call."""
    try:
        job = uuid.UUID(hex=public_id)
    except ValueError:
        return f"{public_id}-{position}"
    return str(uuid.uuid5(job, str(position)))
