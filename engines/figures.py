"""A scenario's figures: the caption, unit and format of each value its result reports, declared once.

Why here: the summary card, a report and `--json` readers all list what a load scenario reported (target and
achieved rate, late queries, time to first token …). Each scenario says on its registration (engines.scenarios)
which keys of its result are figures for people and how they read, and which are detail kept for the JSON and
the history; every surface reads that declaration instead of a table of every scenario's keys (MLPerf LoadGen
keeps a scenario's results in one place the same way). A key a scenario reports without declaring it is still
listed, under its own name, so a new figure is never hidden. Standard library only: the console and the widgets
read it without importing an engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MISSING = "—"
NOTES = ("note", "note_dropped", "scenario_note")  # sentences a scenario reports: shown as notes, not figures
# Counted by the summary's throughput figure (console.analysis.summary), so never listed twice
SHOWN_ELSEWHERE = ("samples", "samples_per_s")


@dataclass(frozen=True)
class Figure:
    """One value a scenario reports: `key` in its result, the `caption` people read, its `unit`, and `format`,
    a str.format pattern for a number (e.g. "{:.0%}"); "" leaves numbers to the surface's own style."""

    key: str
    caption: str
    unit: str = ""
    format: str = ""

    def text(self, value: Any, number: Callable[[Any], str]) -> str:
        """The value as people read it: yes/no, text as it is, a number in `format` (else `number(value)`,
        the surface's style) with its unit; `MISSING` for a number that was not measured."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, str):
            return value
        finite = isinstance(value, (int, float)) and math.isfinite(value)
        text = self.format.format(value) if self.format and finite else number(value)
        return f"{text} {self.unit}" if self.unit and text != MISSING else text


@dataclass(frozen=True)
class Figures:
    """What a scenario (or a part several scenarios share) reports: `shown`, its figures in reading order, and
    `detail`, keys kept for the JSON and the history that the card does not list. Parts add up with `+`."""

    shown: tuple[Figure, ...] = ()
    detail: tuple[str, ...] = ()

    def __add__(self, other: Figures) -> Figures:
        return Figures(self.shown + other.shown, self.detail + other.detail)

    def rows(self, block: Mapping[str, Any]) -> list[tuple[Figure, Any]]:
        """(figure, value) for each figure `block` (a summary's "scenario" dict) carries: the declared ones in
        their order, then any other plain value under its own name; never detail, notes or nested blocks."""
        declared = {figure.key: figure for figure in self.shown}
        hidden = set(self.detail) | set(NOTES) | set(SHOWN_ELSEWHERE)
        others = [Figure(key, key.replace("_", " ").capitalize()) for key, value in block.items()
                  if key not in declared and key not in hidden
                  and (value is None or isinstance(value, (bool, int, float, str)))]
        return [(figure, block[figure.key]) for figure in self.shown if figure.key in block] + \
            [(figure, block[figure.key]) for figure in others]

    def keys(self) -> list[str]:
        return [figure.key for figure in self.shown]
