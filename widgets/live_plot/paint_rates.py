"""How fast the live plots paint: the full-speed frame interval, the quiet rates while a run measures, and the one
paint state every plot item reads (whether painting is quiet now, whether this tick may move the time axis).

The state lives here, below the hub and the items, so the hub (which changes it) and the items (which read it) do
not import each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

REFRESH_INTERVAL_MS = 100


@dataclass(frozen=True)
class PaintRates:
    """How the live plots paint while a run measures: the latency trace every `latency_ms`, telemetry plots (and
    their per-core lines) every `telemetry_ms`, and every curve decimated to min/max blocks of `block_px` pixels.

    The defaults (2 Hz, 1 Hz, 4 px) keep a trace that moves and shows every spike at a fraction of a full frame's
    cost; the window reads them from its settings (console.ui.settings, "paint/..." keys).
    """

    latency_ms: int = 500
    telemetry_ms: int = 1000
    block_px: int = 4

    def __post_init__(self) -> None:
        for name in ("latency_ms", "telemetry_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < REFRESH_INTERVAL_MS:
                raise ValueError(f"paint rate {name}={value!r}: must be a whole number of milliseconds "
                                 f">= {REFRESH_INTERVAL_MS} (the full-speed frame interval); use a lower rate")
        if not isinstance(self.block_px, int) or not 1 <= self.block_px <= 64:
            raise ValueError(f"paint block_px={self.block_px!r}: must be a whole number of pixels from 1 to 64")

    def for_sampler(self, sampler_hz: float | None) -> PaintRates:
        """These rates with telemetry no faster than a sampler at `sampler_hz` delivers (None: unknown, as is)."""
        if not sampler_hz or sampler_hz <= 0:
            return self
        return replace(self, telemetry_ms=max(self.telemetry_ms, math.ceil(1000.0 / sampler_hz)))


class PaintState:
    """What every live plot reads while it draws: one instance, :data:`state`, changed only by the refresh hub."""

    __slots__ = ("quiet", "axis_tick")

    def __init__(self) -> None:
        self.quiet: PaintRates | None = None  # set while a run measures (set_quiet); None: full-speed painting
        # While quiet: whether this tick may move the time axis. Only ticks on which the telemetry plots redraw too
        # do, so the plots linked to the latency plot's axis repaint once per telemetry frame, not again at each
        # latency frame.
        self.axis_tick = True


state = PaintState()


def quiet_rates() -> PaintRates | None:
    """The rates in force while a run measures; None while the plots paint at full speed."""
    return state.quiet
