"""What a scrape extracts from a fetched HTML page: the standard fields and user selectors.

:mod:`~service.extraction.selectors` compiles and runs the caller's CSS selectors,
:mod:`~service.extraction.fields` extracts the standard fields (``extract``), and
:mod:`~service.extraction.text` gives the text of an element as a reader sees it, and
:mod:`~service.extraction.outputs` adds the outputs a request asks for (markdown, cleaned
HTML, main content, the tags kept). This library half (no Twisted, no Scrapy) is re-exported
here. The worker processes that run it off the reactor thread are
:mod:`service.extraction.pool`; that module is not imported here, as it is also the workers'
entry point (``python -m service.extraction.pool``).
"""

from __future__ import annotations

from service.extraction.fields import empty_fields, extract
from service.extraction.selectors import (
    CompiledSelectors,
    InvalidSelector,
    compile_selectors,
    compile_tags,
    selectors_from_wire,
    selectors_to_wire,
)

__all__ = [
    "CompiledSelectors",
    "InvalidSelector",
    "compile_selectors",
    "compile_tags",
    "empty_fields",
    "extract",
    "selectors_from_wire",
    "selectors_to_wire",
]
