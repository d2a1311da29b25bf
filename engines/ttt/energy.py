"""Energy-to-train from the CPU's RAPL counters (Linux powercap `energy_uj`), read by the worker while ranks train.

Why a poller and not one read before and one after: `energy_uj` wraps at `max_energy_range_uj` (a few hundred kJ:
at 200 W, every ~20 minutes), and a difference of two reads cannot tell how many times it wrapped. Reading every
`period_s` (0.1 s) keeps each interval far shorter than a wrap, so a smaller value is exactly one wrap. The energy
of a window is taken between the last read at or before its start and the first read at or after its end: a
counter difference over a window slightly wider than asked (its length is reported beside it), never a value
interpolated or modelled.

Zones, as console.telemetry.rapl_source chooses them (engines may not import the console): `package-N` and
`dram` only (core/uncore are parts of the package, psys contains it), each zone once (the `-mmio` duplicate
skipped). No readable counter → `None` and the reason (a VM without /sys/class/powercap, root-only
`energy_uj` since Linux 5.10): never an estimate.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
import time
from typing import Any

DEFAULT_ROOT = "/sys/class/powercap"
_ZONE = re.compile(r"^(?P<ctl>[A-Za-z0-9_.-]*rapl[A-Za-z0-9_.-]*):(?P<idx>\d+(?::\d+)*)$")

__all__ = ["RaplMeter", "find_zones"]


# ---- Public API
def find_zones(root: str = DEFAULT_ROOT) -> tuple[list[dict[str, Any]], str | None]:
    """([{"zone", "name", "path", "max_uj"}], None) for every readable package/dram zone, or ([], why not)."""
    try:
        entries = sorted(os.listdir(root))
    except FileNotFoundError:
        return [], (f"no {root}: RAPL powercap is a Linux interface (driver intel_rapl_common); absent here, e.g. a "
                    "VM, a container without /sys, or not Linux")
    except OSError as exc:
        return [], f"cannot list {root}: {exc}"
    zones, seen, problems = [], set(), []
    for entry in sorted(entries, key=lambda e: ("-mmio" in e, e)):
        match = _ZONE.match(entry)
        if not match:
            continue
        path = os.path.join(root, entry)
        try:
            name = _read_text(os.path.join(path, "name"))
        except OSError:
            continue
        key = (name, match.group("idx"))  # dram zones share a name; an -mmio twin shares name and index
        if not (name.startswith("package") or name.startswith("dram")) or key in seen:
            continue
        try:
            max_uj = int(_read_text(os.path.join(path, "max_energy_range_uj")))
            int(_read_text(os.path.join(path, "energy_uj")))
        except PermissionError:
            problems.append(f"permission denied reading {path}/energy_uj (root only since Linux 5.10, "
                            f"CVE-2020-8694): run as root, or `sudo chmod o+r {root}/*/energy_uj`")
            continue
        except (OSError, ValueError) as exc:
            problems.append(f"cannot read {path}: {exc}")
            continue
        seen.add(key)
        zones.append({"zone": entry, "name": f"{name} ({entry})", "path": path, "max_uj": max_uj})
    if zones:
        return zones, None
    return [], (problems[0] if problems else f"no RAPL package or dram zone under {root}")


class RaplMeter:
    """Polls every zone's energy_uj on a thread; `energy_between(t0, t1)` gives the joules of a window on the
    system-wide monotonic clock (time.monotonic, which ranks on this machine share). Use as a context manager."""

    def __init__(self, root: str = DEFAULT_ROOT, period_s: float = 0.1) -> None:
        self.root, self.period_s = root, period_s
        self.zones, self.why = find_zones(root)
        self._times: list[float] = []
        self._totals: list[int] = []  # unwrapped µJ since the first read, summed over zones
        self._last: list[int] = []
        self._unwrapped = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return bool(self.zones)

    def __enter__(self) -> RaplMeter:
        if self.zones:
            self.read()
            self._thread = threading.Thread(target=self._poll, name="rapl-meter", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
        if self.zones:
            self.read()

    def read(self) -> None:
        """One read of every zone, unwrapped and added to the series (called by the poller; callable by hand)."""
        now = time.monotonic()
        try:
            values = [int(_read_text(os.path.join(z["path"], "energy_uj"))) for z in self.zones]
        except (OSError, ValueError):
            return  # one missed read: the next covers the interval (wraps are still one per interval)
        with self._lock:
            if self._last:
                for i, (value, zone) in enumerate(zip(values, self.zones, strict=True)):
                    delta = value - self._last[i]
                    self._unwrapped += delta if delta >= 0 else delta + zone["max_uj"]
            self._last = values
            self._times.append(now)
            self._totals.append(self._unwrapped)

    def energy_between(self, start: float, end: float) -> tuple[float | None, dict[str, Any]]:
        """(joules, {"window_s", "zones", "reads"}) between the last read ≤ start and the first read ≥ end; (None,
        {"why"}) when there is no counter or the reads do not bracket the window."""
        if not self.zones:
            return None, {"why": self.why}
        with self._lock:
            times, totals = list(self._times), list(self._totals)
        first = bisect.bisect_right(times, start) - 1
        last = bisect.bisect_left(times, end)
        if first < 0 or last >= len(times):
            return None, {"why": "the RAPL reads do not cover the training window (it began before the first read "
                                 "or ended after the last)"}
        return (totals[last] - totals[first]) / 1e6, {"window_s": times[last] - times[first],
                                                      "zones": [z["name"] for z in self.zones],
                                                      "reads": last - first + 1}

    # ---- Private API
    def _poll(self) -> None:
        while not self._stop.wait(self.period_s):
            self.read()


def _read_text(path: str) -> str:
    with open(path, encoding="ascii") as handle:
        return handle.read().strip()
