"""An extraction worker's CPU per page, by output, on the benchmark's 20 pages (issue 20).

python -m bench.extract_cost [ROUNDS]

Each variant is the worker's whole answer to one request (``service.extraction.pool.answer``:
decode, parse, fields, outputs, encode), timed with the process's CPU clock, so that other loads
on the machine weigh less than on a wall clock; the figure is the best of ``ROUNDS`` rounds
(default 30) over the 20 pages. At static c=32 the machine's cores are saturated, so this CPU,
with the reactor thread's, is what the markdown contender's throughput pays against the plain
one's (bench/README.md).
"""

from __future__ import annotations

import sys
import time

from harness.pages import article
from service.extraction.outputs import OutputOptions
from service.extraction.worker import answer, encode_request

VARIANTS: dict[str, OutputOptions | None] = {
    "plain": None,
    "markdown + only_main_content": OutputOptions(frozenset({"markdown"}), True),
    "html + only_main_content": OutputOptions(frozenset({"html"}), True),
    "only_main_content": OutputOptions(frozenset(), True),
    "markdown (whole page)": OutputOptions(frozenset({"markdown"})),
}


def best_ms(frames: list[bytes], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for frame in frames:
            answer(frame)
        best = min(best, (time.process_time() - start) / len(frames))
    return best * 1000


def main(rounds: int = 30) -> None:
    pages = [article(i) for i in range(20)]
    plain = None
    for name, options in VARIANTS.items():
        # a request's payload, without the 4-byte length that frames it on the pipe
        frames = [
            encode_request(page, f"http://127.0.0.1/article-{i}.html", None, options)[4:]
            for i, page in enumerate(pages)
        ]
        ms = best_ms(frames, rounds)
        plain = ms if plain is None else plain
        added = "" if options is None else f"  (+{ms - plain:.3f} ms over plain)"
        print(f"{name:<30} {ms:6.3f} ms/page{added}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
