"""What an extraction's failure says (service.extraction.pool): a worker that overran its page's
time or died, a page past the bounds (``too_large``), a document its converter refused or died on.
"""

from __future__ import annotations

from service.extraction.bounds import PageTooLarge

PROCESSING_FAILED = "the page could not be processed"
PROCESSING_TIMED_OUT = "the page took too long to process"


class ExtractionFailed(Exception):
    """The page could not be extracted: its worker timed out or died."""


class ExtractionTooLarge(ExtractionFailed, PageTooLarge):
    """The page is past a bound of service.extraction.bounds: a ``too_large`` failure."""


class DocumentFailed(ExtractionFailed):
    """A document the worker refused (service.extraction.documents); ``code`` says why."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def crash_message(limit: int | None) -> str:
    """Why a document's conversion stopped when its worker died of a signal: past the worker's
    memory (``limit`` MiB, SCRAPESPY_EXTRACT_MAX_MEMORY_MB), most likely, or a crashing file."""
    return "the document could not be converted: its converter stopped " + (
        f"(it needs more than the {limit} MiB of memory an extraction worker may use, "
        "SCRAPESPY_EXTRACT_MAX_MEMORY_MB, or the file crashed it)"
        if limit
        else "(the file crashed it)"
    )
