"""The extraction worker's side of the pipe: ``python -m service.extraction.pool`` runs
:func:`serve` (service.extraction.pool starts it and sends the pages).

Frames, both directions: a 4-byte big-endian length, then the payload. A request's payload is
``orjson(header) + b"\\0" + page`` where the page is the decoded text re-encoded as UTF-8; the
reply is the orjson of the fields (``service.extraction.fields.extract``) or ``{"error": "..."}``
(with ``too_large``, the message, for a page past a bound of service.extraction.bounds); an
empty frame first says the worker has started. A header
with ``outputs`` (``service.extraction.outputs.OutputOptions``) asks for markdown, html or main
content too: the reply's fields then carry them (``extract_page``). A header with ``document``
(its kind) carries a document's bytes as they were received instead of a page, converted by
:mod:`service.extraction.documents`; one it refuses is replied ``{"error", "refused", "code"}``.
A header with ``part`` (``[i, k]``) asks for the measured lines of the i-th of k runs of a PDF's
pages, one with ``join`` for the fields of a PDF from those shares (service.extraction.split).
The fields are cut to the worker's bounds here, before they cross the pipe.

A worker's memory is bounded (:func:`limit_memory`, ``SCRAPESPY_EXTRACT_MAX_MEMORY_MB``): a page or
document whose conversion runs out of it is replied ``too_large`` and the worker then exits, so
that the pool starts a fresh one rather than go on in a heap a failed allocation left behind.
A converter that aborts on a failed allocation (pdfium does) takes the worker with it; the pool
answers that document ``document_unreadable``.
"""

from __future__ import annotations

import resource
import struct
from typing import Any

import orjson

from service.extraction.bounds import (
    AnswerBounds,
    PageTooLarge,
    answer_too_large,
    bounded,
    check_parse,
)
from service.extraction.documents import DocumentRefused, convert, convert_parts, pdf_part
from service.extraction.fields import extract
from service.extraction.outputs import OutputOptions, extract_page
from service.extraction.selectors import CompiledSelectors, selectors_from_wire, selectors_to_wire

__all__ = [
    "FRAME_LENGTH",
    "answer",
    "convert_within",
    "encode_document",
    "encode_join",
    "encode_part",
    "encode_request",
    "extract_within",
    "limit_memory",
    "serve",
]

FRAME_LENGTH = struct.Struct(">I")


def encode_request(
    text: str,
    url: str,
    selectors: CompiledSelectors | None,
    options: OutputOptions | None = None,
) -> bytes:
    meta: dict[str, Any] = {"url": url, "selectors": selectors_to_wire(selectors)}
    if options is not None:
        meta["outputs"] = options.to_wire()
    header = orjson.dumps(meta)
    payload = header + b"\0" + text.encode("utf-8", "surrogatepass")
    return FRAME_LENGTH.pack(len(payload)) + payload


def encode_document(
    body: bytes,
    kind: str,
    url: str,
    selectors: CompiledSelectors | None,
    options: OutputOptions | None = None,
) -> bytes:
    meta: dict[str, Any] = {"url": url, "selectors": selectors_to_wire(selectors), "document": kind}
    if options is not None:
        meta["outputs"] = options.to_wire()
    payload = orjson.dumps(meta) + b"\0" + body
    return FRAME_LENGTH.pack(len(payload)) + payload


def encode_part(body: bytes, part: int, parts: int) -> bytes:
    """One worker's share of a PDF converted by several (service.extraction.split)."""
    payload = orjson.dumps({"part": [part, parts]}) + b"\0" + body
    return FRAME_LENGTH.pack(len(payload)) + payload


def encode_join(
    shares: list[dict[str, Any]],
    selectors: CompiledSelectors | None,
    options: OutputOptions | None = None,
) -> bytes:
    """The shares of a PDF (:func:`encode_part`'s replies, in order) to join into its fields."""
    meta: dict[str, Any] = {"selectors": selectors_to_wire(selectors), "join": True}
    if options is not None:
        meta["outputs"] = options.to_wire()
    payload = orjson.dumps(meta) + b"\0" + orjson.dumps(shares)
    return FRAME_LENGTH.pack(len(payload)) + payload


def limit_memory(megabytes: int) -> None:
    """Bounds this process's address space to ``megabytes`` MiB (0: no bound): an allocation
    past it fails (Python raises MemoryError) instead of growing the worker without end."""
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def memory_too_large(bounds: AnswerBounds, what: str = "page") -> str:
    return (
        f"the {what} needs more than the {bounds.max_memory_mb} MiB of memory an extraction "
        "worker may use (SCRAPESPY_EXTRACT_MAX_MEMORY_MB)"
    )


def answer(payload: bytes, bounds: AnswerBounds | None = None) -> bytes:
    """A worker's reply to one request payload: the fields, or the reason there are none."""
    return _answer(payload, bounds or AnswerBounds())[0]


def _answer(payload: bytes, bounds: AnswerBounds) -> tuple[bytes, bool]:
    """The reply, and whether the worker ran out of memory making it (it then exits)."""
    exhausted = False
    what = "page"
    try:
        header, page = payload.split(b"\0", 1)
        meta = orjson.loads(header)
        if "part" in meta:
            what = "document"
            part, parts = meta["part"]
            fields = pdf_part(page, part, parts, bounds.document_pages)
        elif "join" in meta:
            what = "document"
            options = OutputOptions.from_wire(meta.get("outputs"))
            formats = options.formats if options is not None else frozenset()
            shares = orjson.loads(page)
            fields = bounded(
                convert_parts(shares, selectors_from_wire(meta["selectors"]), formats), bounds
            )
        elif "document" in meta:
            what = "document"
            fields = convert_within(
                page,
                meta["document"],
                selectors_from_wire(meta["selectors"]),
                OutputOptions.from_wire(meta.get("outputs")),
                bounds,
            )
        else:
            fields = extract_within(
                page.decode("utf-8", "surrogatepass"),
                meta["url"],
                selectors_from_wire(meta["selectors"]),
                OutputOptions.from_wire(meta.get("outputs")),
                bounds,
            )
        body = orjson.dumps(fields)
        if len(body) > bounds.answer_bytes:
            raise answer_too_large(len(body), bounds)
    except MemoryError:
        exhausted = True
        too_large = memory_too_large(bounds, what)
        body = orjson.dumps({"error": "PageTooLarge", "too_large": too_large, "exhausted": True})
    except PageTooLarge as exc:
        body = orjson.dumps({"error": "PageTooLarge", "too_large": str(exc)})
    except DocumentRefused as exc:
        body = orjson.dumps({"error": "DocumentRefused", "refused": str(exc), "code": exc.code})
    except Exception as exc:  # never take the worker down: report, and take the next page
        body = orjson.dumps({"error": f"{exc.__class__.__name__}"})
    return FRAME_LENGTH.pack(len(body)) + body, exhausted


def extract_within(
    text: str,
    url: str,
    selectors: CompiledSelectors | None,
    options: OutputOptions | None,
    bounds: AnswerBounds,
) -> dict[str, Any]:
    """The page's fields and outputs cut to ``bounds``; raises :class:`PageTooLarge` for a page,
    or an answer, past them."""
    check_parse(text, bounds)
    if options is None:
        return bounded(extract(text, url, selectors), bounds)
    return bounded(extract_page(text, url, selectors, options), bounds)


def convert_within(
    body: bytes,
    kind: str,
    selectors: CompiledSelectors | None,
    options: OutputOptions | None,
    bounds: AnswerBounds,
) -> dict[str, Any]:
    """A document's fields cut to ``bounds``; raises :class:`PageTooLarge` past them and
    :class:`DocumentRefused` for one that cannot be converted."""
    formats = options.formats if options is not None else frozenset()
    return bounded(convert(body, kind, selectors, formats, bounds.document_pages), bounds)


def serve(stdin: Any, stdout: Any, bounds: AnswerBounds | None = None) -> None:
    """The worker's loop: one request in, one reply out, until the parent closes stdin (or a
    request ran it out of memory)."""
    bounds = bounds or AnswerBounds()
    stdout.write(FRAME_LENGTH.pack(0))  # ready: the pool sends pages from now on
    stdout.flush()
    while True:
        head = stdin.read(FRAME_LENGTH.size)
        if len(head) < FRAME_LENGTH.size:
            return
        (size,) = FRAME_LENGTH.unpack(head)
        payload = stdin.read(size)
        if len(payload) < size:
            return
        reply, exhausted = _answer(payload, bounds)
        del payload
        stdout.write(reply)
        stdout.flush()
        if exhausted:
            return
