"""The 30-day chart of the usage page, laid out on the server as plain SVG geometry.

Each day is one bar of its scrapes: the charged ones at the bottom, the others (failed, blocked,
free trials) stacked above. The template draws the rectangles; no script is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.dashboard.usage import DayTotal

WIDTH = 900
HEIGHT = 180
TOP = 34
BASELINE = 146
GAP = 6


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    width: float
    charged_y: float
    charged_height: float
    free_y: float
    free_height: float
    title: str


@dataclass(frozen=True, slots=True)
class Label:
    x: float
    text: str
    anchor: str


@dataclass(frozen=True, slots=True)
class Chart:
    bars: list[Bar]
    labels: list[Label]
    scale: int
    scrapes: int
    credits: int
    width: int = WIDTH
    height: int = HEIGHT
    top: int = TOP
    baseline: int = BASELINE


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... that is at least ``value`` (at least 1)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def daily_chart(totals: list[DayTotal]) -> Chart:
    scale = nice_ceiling(max((day.scrapes for day in totals), default=0))
    slot = WIDTH / max(1, len(totals))
    plot = BASELINE - TOP
    bars = []
    for index, day in enumerate(totals):
        charged_height = plot * day.charged / scale
        free_height = plot * (day.scrapes - day.charged) / scale
        charged_y = BASELINE - charged_height
        bars.append(
            Bar(
                x=round(index * slot + GAP / 2, 2),
                width=round(slot - GAP, 2),
                charged_y=round(charged_y, 2),
                charged_height=round(charged_height, 2),
                free_y=round(charged_y - free_height, 2),
                free_height=round(free_height, 2),
                title=(
                    f"{day.day.isoformat()}: {_plural(day.scrapes, 'scrape')}, "
                    f"{day.charged} charged, {_plural(day.credits, 'credit')}"
                ),
            )
        )
    labels = []
    if totals:
        middle = len(totals) // 2
        labels = [
            Label(0, totals[0].day.strftime("%d %b"), "start"),
            Label(
                round(middle * slot + slot / 2, 2), totals[middle].day.strftime("%d %b"), "middle"
            ),
            Label(WIDTH, totals[-1].day.strftime("%d %b"), "end"),
        ]
    return Chart(
        bars=bars,
        labels=labels,
        scale=scale,
        scrapes=sum(day.scrapes for day in totals),
        credits=sum(day.credits for day in totals),
    )
