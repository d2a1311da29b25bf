"""The phases of a run, in one table: the name on the wire, its words in the window and in messages, its colour.

The worker sends the `name` (engines.protocol checks it); the progress line shows `title`, the plots label their
shaded band with `label` in `color`, and the runner says "worker killed by SIGSEGV during `during`". One table, so
a phase added here is spelled and coloured the same everywhere. Colours are plain hex strings:
this module is read by the worker too, which never imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    name: str  # on the wire: phase events, progress events, the stored summary's "phases"
    label: str  # short, on the plots' shaded bands
    title: str  # the Run page's progress line
    during: str  # in sentences: "... during model loading"
    color: str  # hex, readable as a faint band on a light or a dark background
    shaded: bool = True  # False: no band of its own (finishing ends the last band)


PHASES: tuple[Phase, ...] = (
    Phase("loading", "loading", "Loading model", "model loading", "#f2a900"),
    Phase("warmup", "warm-up", "Warming up", "warm-up", "#ff7043"),
    Phase("measuring", "measuring", "Measuring", "measurement", "#43a047"),
    # After the timed measurement, never inside it: the engine's profiler runs apart (analyze).
    Phase("profiling", "profiling", "Profiling", "profiling", "#8e24aa"),
    Phase("finishing", "finishing", "Finishing", "finishing", "#9e9e9e", shaded=False),
)
NAMES: tuple[str, ...] = tuple(phase.name for phase in PHASES)
# Before the worker's first phase event: it is still starting.
START_UP = Phase("", "start-up", "Starting worker", "start-up", "#9e9e9e", shaded=False)

_BY_NAME = {phase.name: phase for phase in PHASES}


def get(name: str | None) -> Phase:
    """The phase called `name`; None or "" is the worker's start-up; an unknown name keeps its own words."""
    if not name:
        return START_UP
    return _BY_NAME.get(name) or Phase(name, name, name[:1].upper() + name[1:], name, START_UP.color)
