"""Estimated CPU and memory power: a TDP model for machines without an energy counter, always ``estimated``.

The model (linear in utilisation, the same shape as Cloud Carbon Footprint's and CodeCarbon's CPU models):

    cpu.power.estimated = idle + (TDP - idle) × u,    idle = IDLE_FRACTION × TDP

- ``u`` is the busy fraction of all logical CPUs over the interval since the previous sample (from
  ``psutil.cpu_times()`` deltas: everything but idle and iowait), so the value is the model's mean power over
  that interval, stamped at its end.
- ``TDP`` is the whole machine's: the user's ``LABCONSOLE_CPU_TDP_W`` (or the constructor's ``tdp_w``) when set,
  else the per-socket figure from :data:`TDP_TABLE` (matched on the CPU model name, longest entry first) times
  the number of sockets. An unknown CPU is *unavailable* ("set LABCONSOLE_CPU_TDP_W"), never guessed.
- ``IDLE_FRACTION`` = 0.3: package idle power is roughly a quarter to a third of TDP on recent server parts
  (Cloud Carbon Footprint's per-vCPU min/max coefficients imply ~0.2; CodeCarbon's flat model uses 0.5).
- TDP is a thermal design figure, not a power limit: turbo can exceed it for a while, and a memory-bound
  workload at "100 %" draws less. Errors of ±30 % are normal: use it to compare runs on one machine, and a
  RAPL or NVML counter when a real number is needed.

``mem.power.estimated`` = ``MEM_W_PER_GIB`` × installed GiB (0.375 W/GiB, CodeCarbon's 3 W per 8 GB), constant:
DRAM power follows bandwidth, which this model does not see.
"""

from __future__ import annotations

import os
import platform

import psutil

from .base import MetricInfo, Sample, Source
from .metadata import Energy, MetricSpec

ENV_TDP = "LABCONSOLE_CPU_TDP_W"
ESTIMATED = "estimated"
IDLE_FRACTION = 0.3
MEM_W_PER_GIB = 0.375

# Per-socket TDP (W) by a substring of the CPU model name; desktop parts: base power (PBP). The longest
# matching entry wins ("Gold 6248R" before "Gold 6248"). Extend freely; the env var covers anything else.
TDP_TABLE: dict[str, float] = {
    # AMD EPYC 9004 (Genoa/Bergamo) and 7003/7002 (Milan/Rome)
    "EPYC 9754": 360, "EPYC 9654": 360, "EPYC 9554": 360, "EPYC 9454": 290, "EPYC 9354": 280,
    "EPYC 9334": 210, "EPYC 9254": 200, "EPYC 9124": 200,
    "EPYC 7763": 280, "EPYC 7713": 225, "EPYC 7543": 225, "EPYC 7513": 200, "EPYC 7443": 200,
    "EPYC 7313": 155, "EPYC 7742": 225, "EPYC 7702": 200, "EPYC 7502": 180, "EPYC 7452": 155,
    # Intel Xeon Scalable
    "Xeon(R) Platinum 8480": 350, "Xeon(R) Platinum 8468": 350, "Xeon(R) Platinum 8380": 270,
    "Xeon(R) Platinum 8358": 250, "Xeon(R) Platinum 8280": 205, "Xeon(R) Platinum 8168": 205,
    "Xeon(R) Gold 6430": 270, "Xeon(R) Gold 6338": 205, "Xeon(R) Gold 6326": 185, "Xeon(R) Gold 6248R": 205,
    "Xeon(R) Gold 6248": 150, "Xeon(R) Gold 6230": 125, "Xeon(R) Gold 6154": 200, "Xeon(R) Gold 6130": 125,
    # Workstation / desktop
    "Threadripper PRO 5995WX": 280, "Threadripper 3990X": 280,
    "Ryzen 9 7950X": 170, "Ryzen 9 7900X": 170, "Ryzen 9 5950X": 105,
    "i9-14900K": 125, "i9-13900K": 125, "i9-12900K": 125, "i7-12700K": 125,
}


def lookup_tdp(model_name: str) -> float | None:
    """Per-socket TDP from :data:`TDP_TABLE` for this model name, None when no entry matches."""
    text = " ".join(model_name.split())
    for key in sorted(TDP_TABLE, key=len, reverse=True):
        if key in text or key.replace("(R)", "") in text:
            return float(TDP_TABLE[key])
    return None


def cpu_identity(cpuinfo: str = "/proc/cpuinfo") -> tuple[str, int]:
    """(model name, number of sockets); sockets = distinct ``physical id`` values, at least 1."""
    model, sockets = "", set()
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "physical id":
                    sockets.add(value.strip())
    except OSError:
        pass
    return (model or platform.processor() or platform.machine()), max(1, len(sockets))


class EstimatedPowerSource(Source):
    """``cpu.power.estimated`` and ``mem.power.estimated`` (W), method ``estimated``. See the module docstring."""

    name = "estimated"
    _NOTE = "ESTIMATE from a TDP × utilisation model, not a measurement"
    metric_specs = (
        MetricSpec(r"cpu\.power\.estimated", "W", "power", "CPU (estimated)", "estimated",
                   Energy("cpu", "cpu", group_order=2, note=_NOTE)),
        MetricSpec(r"mem\.power\.estimated", "W", "power", "memory (estimated)", "estimated",
                   Energy("cpu", "memory", part_order=1, group_order=2, note=_NOTE)),
    )

    def __init__(self, tdp_w: float | None = None, *, model_name: str | None = None,
                 sockets: int | None = None, idle_fraction: float = IDLE_FRACTION) -> None:
        self._tdp_arg = tdp_w
        self._model_arg, self._sockets_arg = model_name, sockets
        self.idle_fraction = idle_fraction
        self.tdp_w: float | None = None
        self.tdp_origin = ""
        self._why = "not opened"
        self._mem_w = 0.0
        self._prev: tuple[float, float] | None = None

    # ---- Public API

    def open(self) -> None:
        model, sockets = cpu_identity()
        model = self._model_arg if self._model_arg is not None else model
        sockets = self._sockets_arg or sockets
        env = os.environ.get(ENV_TDP, "").strip()
        if self._tdp_arg is not None:
            tdp, origin = float(self._tdp_arg), "set by the caller"
        elif env:
            try:
                tdp = float(env)
            except ValueError:
                tdp = -1.0
            if not tdp > 0:
                self._why = f"{ENV_TDP}={env!r} is not a positive number of watts"
                return
            origin = f"{ENV_TDP}={env}"
        else:
            per_socket = lookup_tdp(model)
            if per_socket is None:
                self._why = (f"TDP of {model!r} is not in the table: set {ENV_TDP} to the machine's total CPU "
                             "TDP in watts (all sockets) for an estimate")
                return
            tdp = per_socket * sockets
            origin = f"table: {model}, {per_socket:g} W × {sockets} socket(s)"
        if not tdp > 0:
            self._why = f"TDP must be a positive number of watts, got {tdp!r}"
            return
        self.tdp_w, self.tdp_origin = tdp, origin
        self._mem_w = MEM_W_PER_GIB * psutil.virtual_memory().total / float(1 << 30)
        self._prev = _busy_total()
        self._why = ""

    def available(self) -> tuple[bool, str]:
        return (self._why == ""), self._why

    def metrics(self) -> list[MetricInfo]:
        tdp, idle = self.tdp_w or 0.0, (self.tdp_w or 0.0) * self.idle_fraction
        return [
            MetricInfo("cpu.power.estimated", "W", f"ESTIMATE: idle + (TDP - idle) × CPU busy fraction, TDP "
                       f"{tdp:g} W ({self.tdp_origin}), idle {idle:g} W ({self.idle_fraction:.0%} of TDP); "
                       "mean over the sample interval", ESTIMATED),
            MetricInfo("mem.power.estimated", "W", f"ESTIMATE: {MEM_W_PER_GIB} W per GiB installed, constant "
                       "(does not follow memory traffic)", ESTIMATED),
        ]

    def sample(self, t_ns: int) -> list[Sample]:
        cur = _busy_total()
        prev, self._prev = self._prev, cur
        if prev is None or self.tdp_w is None:
            return []
        busy, total = cur[0] - prev[0], cur[1] - prev[1]
        if total <= 0:
            return []
        u = min(1.0, max(0.0, busy / total))
        idle = self.tdp_w * self.idle_fraction
        return [(t_ns, self.name, "cpu.power.estimated", idle + (self.tdp_w - idle) * u, "W", ESTIMATED),
                (t_ns, self.name, "mem.power.estimated", self._mem_w, "W", ESTIMATED)]


def _busy_total() -> tuple[float, float]:
    """(busy, total) CPU seconds over all logical CPUs; independent of psutil.cpu_percent's shared state."""
    t = psutil.cpu_times()
    total = sum(t)
    # guest time is already inside user on Linux; do not count it twice
    total -= getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
    idle = t.idle + getattr(t, "iowait", 0.0)
    return total - idle, total
