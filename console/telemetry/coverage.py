"""What a run's telemetry covers when the sampler died: the note a run carries instead of silent gaps.

Why: energy, utilization and memory figures are computed from whatever samples arrived. When the sampler process
dies mid-run (killed, crashed, out of memory) those figures silently describe only the first part of the run;
the note says that the sampler died, when, and which stretch of the run and of its measurement the samples cover.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any

__all__ = ["sampler_death_note"]


def sampler_death_note(death: dict[str, Any], run_t0_ns: int, sample_t_ns: Sequence[int],
                       window_ns: tuple[int, int] | None = None) -> str:
    """One sentence: how the sampler ended, when (seconds into the run) and what its samples of this run cover.

    `sample_t_ns` are the timestamps of the run's own samples; `window_ns` is the measurement window, if any.
    """
    how = _how(death.get("exitcode"))
    died_s = (int(death["t_ns"]) - run_t0_ns) / 1e9
    if died_s < 0 and not sample_t_ns:
        return (f"telemetry: the sampler process had died ({how}) {-died_s:.1f} s before this run started, so the "
                "run has no telemetry (no energy, utilization or memory figures); restart the console to sample again")
    when = f"{died_s:.1f} s into the run" if died_s >= 0 else "before this run started"
    if not sample_t_ns:
        covered = "no sample of this run arrived"
    else:
        first, last = (min(sample_t_ns) - run_t0_ns) / 1e9, (max(sample_t_ns) - run_t0_ns) / 1e9
        covered = f"its samples cover {max(first, 0.0):.1f}–{last:.1f} s of the run"
        if window_ns is not None:
            start, end = (window_ns[0] - run_t0_ns) / 1e9, (window_ns[1] - run_t0_ns) / 1e9
            inside = max(0.0, min(last, end) - max(first, start))
            share = inside / (end - start) if end > start else 0.0
            covered += f" ({share:.0%} of the measurement, {start:.1f}–{end:.1f} s)"
    return (f"telemetry: the sampler process died {when} ({how}); {covered}, nothing after. Energy, utilization and "
            "memory figures describe that part only")


def _how(exitcode: Any) -> str:
    if isinstance(exitcode, int) and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    if exitcode is None:
        return "exit code unknown"
    return f"exit code {exitcode}"
