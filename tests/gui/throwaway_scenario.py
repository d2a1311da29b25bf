"""A throwaway scenario, as a plug-in author writes one: this module plus one registration line
(`scenarios.register(throwaway_scenario.INFO)`, which tests/gui/test_scenario_figures.py does).

Bursts: `bursts` bursts of `calls_per_burst` back-to-back calls. It declares two figures of its own on its
registration; nothing in the console, the widgets or the report names it, yet they list both figures.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engines.figures import Figure, Figures
from engines.options import option
from engines.scenarios import _timing
from engines.scenarios.base import NoOptions, ScenarioInfo


@dataclass
class BurstsOptions(NoOptions):
    bursts: int = option(3, flag="--bursts", metavar="N", label="Bursts", help="bursts: how many bursts")
    calls_per_burst: int = option(4, flag="--calls-per-burst", metavar="N", label="Calls per burst",
                                  help="bursts: back-to-back calls in one burst")


INFO = ScenarioInfo("bursts", "Bursts", __name__, BurstsOptions, summary="bursts of back-to-back calls",
                    figures=Figures((Figure("calls_per_burst", "Calls per burst", "calls"),
                                     Figure("full_bursts", "Bursts completed", format="{:.0%}"))))


def run(model: Any, spec: Any, emit: Callable[[dict[str, Any]], None],
        cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Call the model in bursts; the `result` event's fields, with the scenario's own figures."""
    options, clock = spec.scenario_options, time.perf_counter_ns
    starts, durations = array("q"), array("q")
    begin, done = clock(), 0
    for _ in range(options.bursts):
        if cancelled():
            break
        for _ in range(options.calls_per_burst):
            start = clock()
            model.infer()
            starts.append(start)
            durations.append(clock() - start)
        done += 1
    _timing.ship_arrays(emit, starts, durations, len(starts))
    return {"iterations": len(starts), "measured_s": (clock() - begin) / 1e9, "warmup_iterations": 0,
            "first_inference_ms": None, "batch": spec.batch,
            "calls_per_burst": options.calls_per_burst, "full_bursts": done / options.bursts}
