"""Per-second rates from cumulative counters (bytes, requests, page faults, CPU seconds): the one place they
are computed, whichever reader produced the counters.
"""

from __future__ import annotations

from collections.abc import Sequence


class CounterRates:
    """Rates of a fixed group of counters over the interval since the previous reading, stamped at its end.

    The first reading only primes. A counter that goes backwards has wrapped or been reset (a device
    re-attached, a process replaced), which one reading cannot tell apart: that interval is skipped, never
    reported as a negative or huge rate, and the next interval counts from the new value.
    """

    __slots__ = ("_prev", "_t_ns")

    def __init__(self) -> None:
        self._prev: Sequence[float] | None = None
        self._t_ns = 0

    def update(self, values: Sequence[float], t_ns: int) -> list[float] | None:
        """Per-second rates since the previous reading; None when there is no usable interval."""
        prev, t_prev = self._prev, self._t_ns
        self._prev, self._t_ns = values, t_ns
        if prev is None or t_ns <= t_prev:
            return None
        per_s = 1e9 / (t_ns - t_prev)
        out = [(cur - old) * per_s for cur, old in zip(values, prev, strict=True)]
        for rate in out:
            if rate < 0:
                return None
        return out

    def reset(self) -> None:
        """Forget the previous reading: the next one primes again."""
        self._prev = None
