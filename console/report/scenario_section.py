"""The report's scenario section: for each run, what its load scenario reported (target and achieved rate, late and
dropped queries, time to first token, time waiting for data …), each figure with the caption, unit and format its
scenario declares on its registration (engines.scenarios, engines.figures), as the summary card shows them.

Why here and not in the key-figures table: each scenario reports figures of its own, and a new one brings its own
without a change to the report. Qt-free, plain blocks.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from engines import scenarios
from engines.figures import MISSING

__all__ = ["scenario_blocks"]


# ---- Public API
def scenario_blocks(report: Any, block: Any) -> list[Any]:
    """A heading and a Figure | Value table per run whose scenario reported figures (`block` is the report's
    Block class); none for runs that reported none."""
    blocks = []
    for view in report.runs:
        name = view.spec.get("scenario") or view.run.get("scenario")
        reported = view.summary.get("scenario")
        rows = scenarios.figures_of(name).rows(reported) if isinstance(reported, dict) else []
        if rows:
            blocks += [block("heading", f"Scenario figures — run {view.letter} ({name or 'scenario not recorded'})"),
                       block("table", headers=["Figure", "Value"],
                             rows=[[figure.caption, figure.text(value, _number)] for figure, value in rows])]
    return blocks


# ---- Private API
def _number(value: Any) -> str:
    """Three significant digits (whole numbers with separators from 1,000 up); "—" when not measured."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return MISSING
    if isinstance(value, numbers.Integral) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"
