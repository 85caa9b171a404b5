"""docs/capacity.md says what bench/results/capacity.json measured (``python -m bench.capacity``
writes both), and its table of machines scales with the pages a day."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "capacity.md"
RESULTS = ROOT / "bench" / "results" / "capacity.json"
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def measured(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(measured(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(measured(v) for v in node)) if node else set()
    if isinstance(node, bool) or not isinstance(node, int | float):
        return set()
    return {str(node)}


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_figure_per_page_is_a_measured_one() -> None:
    results = json.loads(RESULTS.read_text())
    figures = section(DOC.read_text(), "Per page")
    said = set(NUMBER.findall(figures)) - {"32", "4", "2", "3", "10"}  # loads, turns, seconds
    assert said, "no figures in docs/capacity.md"
    assert said <= measured(results), sorted(said - measured(results))
    assert str(results["balancer"]["ratio"]) in figures


def test_ten_times_the_pages_need_ten_times_the_cores() -> None:
    rows = [
        line.split("|")[1:-1]
        for line in section(DOC.read_text(), "What 1M and 10M pages a day need").splitlines()
        if re.match(r"\| 1?0?M \|", line) or line.startswith("| 1M") or line.startswith("| 10M")
    ]
    by = {(r[0].strip(), r[1].strip()): r for r in rows}
    assert set(by) == {(v, e) for v in ("1M", "10M") for e in ("static", "js")}
    for engine in ("static", "js"):
        one, ten = by["1M", engine], by["10M", engine]
        for column in (2, 3, 5):  # peak pages/s, API cores, PostgreSQL cores
            a = float(one[column].split()[0])
            b = float(ten[column].split()[0])
            assert abs(b - 10 * a) <= 0.05 * 10 * a + 0.1, (engine, column, a, b)
    assert by["1M", "js"][4].split()[0] != "0.00"  # js needs browsers; static none
    assert by["1M", "static"][4].split()[0] == "0.00"
