"""RunPlots, offscreen: phase bands take their label and colour from the one phase table (engines/phases.py)."""

from __future__ import annotations

import numpy as np

from console.ui.run_plots import RunPlots
from engines import phases


def test_every_phase_band_has_the_colour_of_its_phase(qtbot):
    """The live plots once relabelled `warmup` as `warm-up` and then missed the colour keyed `warmup`: the warm-up
    band was drawn in the fallback grey."""
    plots = RunPlots()
    qtbot.addWidget(plots)
    plots.handle({"type": "started", "t0_ns": 1_000_000_000})
    for i, name in enumerate(("loading", "warmup", "measuring", "profiling", "finishing")):
        plots.handle({"type": "phase", "phase": name, "t_ns": 1_000_000_000 + (i + 1) * 500_000_000})
    plots.handle({"type": "finished", "summary": {"t_end_ns": 4_000_000_000}})
    shaded = [p for p in phases.PHASES if p.shaded]
    for plot in (plots.latency, plots.cpu, plots.memory, plots.power):
        assert plot.band_labels() == [p.label for p in shaded] == ["loading", "warm-up", "measuring", "profiling"]
        assert plot.band_colors() == [p.color for p in shaded]
    assert phases.get("warmup").color != phases.START_UP.color  # not the neutral grey


def test_a_stored_run_has_the_same_bands_as_a_live_one(qtbot):
    plots = RunPlots()
    qtbot.addWidget(plots)
    run = {"run_id": "ab" * 16, "status": "completed",
           "summary": {"t0_ns": 0, "t_end_ns": 3_000_000_000,
                       "phases": [["loading", 100], ["warmup", 1_000_000_000], ["measuring", 2_000_000_000]]}}
    plots.show_stored(run, np.array([2_100_000_000]), np.array([1_000_000]), [])
    assert plots.latency.band_labels() == ["loading", "warm-up", "measuring"]
    assert plots.latency.band_colors() == [phases.get(n).color for n in ("loading", "warmup", "measuring")]
