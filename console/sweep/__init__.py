"""Sweeps: one action runs a grid of configurations, each point an ordinary stored run, grouped as one sweep.

One module per job, in the order a sweep goes through them:

- `axes`: what a sweep can vary and `SweepError`, which names the option at fault;
- `grid`: `SweepGrid`, parsed from comma-separated text, each value checked on its own;
- `expansion`: `expand`, every point a validated RunSpec before anything runs, impossible points with why;
- `running`: `SweepRun`, the points one at a time through RunSession, `sweep_status`;
- `knee`: `analyse`, where throughput stops rising (the rule is in that module's docstring);
- `labels` and `presentation`: the same record for people (labels, knee line, charts) and for the CLI's JSON.

Qt-free: the window drives `SweepRun` from a plain thread and marshals `on_point` to the GUI itself.
Import from here (`from console.sweep import SweepRun`); the modules' split is not part of the interface.
"""

from console.sweep.axes import AXIS_OPTIONS, SweepError
from console.sweep.expansion import expand
from console.sweep.grid import SweepGrid
from console.sweep.knee import KNEE_FRACTION, analyse
from console.sweep.labels import format_rate, impossible_lines, point_label
from console.sweep.presentation import chart_data, knee_text, record_from_history, report
from console.sweep.running import SweepRun, sweep_status

__all__ = [
    "AXIS_OPTIONS", "KNEE_FRACTION", "SweepError", "SweepGrid", "SweepRun",
    "analyse", "chart_data", "expand", "format_rate", "impossible_lines", "knee_text", "point_label",
    "record_from_history", "report", "sweep_status",
]
