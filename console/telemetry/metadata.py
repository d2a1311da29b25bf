"""What a telemetry metric is: its unit, the plot it is drawn on, and whether it counts toward a run's energy.

A source declares the metrics it can emit in ``Source.metric_specs``, one :class:`MetricSpec` per metric or
per family of per-device metrics (a regular expression such as ``(gpu\\d+)\\.power\\.instant``). The plot
routes (``console/ui/telemetry_routes.py``) and energy accounting (``console/analysis/energy.py``) read these
declarations through the registry, so a new source is one module plus one registry line and nothing else.

The plots themselves are a fixed vocabulary (:data:`PLOTS`): a spec names one of them by key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .methods import METHODS


@dataclass(frozen=True)
class PlotSpec:
    """One telemetry plot, the same on the System page and the Run page."""

    key: str
    title: str
    y_label: str
    unit: str
    y_range: tuple[float, float] | None = None


PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec("util", "Utilization", "utilization", "%", (0, 100)),
    PlotSpec("power", "Power", "power", "W"),
    PlotSpec("memory", "Memory", "memory", "GiB"),
    PlotSpec("temperature", "Temperature", "temperature", "°C"),
    PlotSpec("clocks", "Clocks", "clock", "MHz"),
    PlotSpec("io", "Disk, network and PCIe", "throughput", "MB/s"),
)
PLOT_KEYS: tuple[str, ...] = tuple(p.key for p in PLOTS)

# Energy methods, best first. A measured J metric is a hardware counter, a measured W metric is integrated
# over time, anything from a model is an estimate.
ENERGY_METHODS: tuple[str, ...] = ("counter", "integrated", "estimated")


@dataclass(frozen=True)
class Energy:
    """How a power (W) or energy-counter (J) metric counts toward the energy of one device group.

    ``group`` and ``part`` are templates filled with the spec's pattern groups (``"{0}"`` → ``gpu0``).
    Within a group, metrics of one method and one ``preference`` are summed (RAPL's package and dram zones);
    a lower ``preference`` is tried first (instant power before a moving average). ``note`` is said whenever
    this metric's energy is used (``{metric}`` is replaced by the metric's name).
    """

    group: str
    part: str = "{group}"
    preference: int = 0
    part_order: int = 0  # where this part sits in a scope such as "package-0+dram-0"
    group_order: int = 0  # groups are listed by (group_order, name): accelerators before the CPU
    note: str = ""


@dataclass(frozen=True)
class MetricSpec:
    """The metadata of one metric, or of a family of per-device metrics matched by ``pattern``.

    ``pattern`` is a regular expression the whole metric name must match; its groups fill ``label`` (the
    series name in the plot, e.g. ``"{0} instant"``) and the :class:`Energy` templates. ``plot`` is a key of
    :data:`PLOTS`, or None for a metric no plot shows. ``method`` is how the source obtains the value.
    """

    pattern: str
    unit: str
    plot: str | None = None
    label: str = ""
    method: str = "measured"
    energy: Energy | None = None
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"MetricSpec {self.pattern!r}: method must be one of {METHODS}, got {self.method!r}")
        if self.plot is not None and self.plot not in PLOT_KEYS:
            raise ValueError(f"MetricSpec {self.pattern!r}: unknown plot {self.plot!r}; use one of {PLOT_KEYS} "
                             "or None for a metric no plot shows")
        if self.energy is not None and self.energy_method is None:
            raise ValueError(f"MetricSpec {self.pattern!r}: an energy metric must be measured or estimated, in J "
                             f"(a counter) or W (power); got method {self.method!r}, unit {self.unit!r}")
        object.__setattr__(self, "_regex", re.compile(self.pattern))

    @property
    def energy_method(self) -> str | None:
        """``counter``, ``integrated`` or ``estimated`` for an energy metric; None otherwise."""
        if self.energy is None or self.unit not in ("J", "W"):
            return None
        if self.method == "estimated":
            return "estimated"
        if self.method == "measured":
            return "counter" if self.unit == "J" else "integrated"
        return None

    def match(self, metric: str) -> re.Match[str] | None:
        return self._regex.fullmatch(metric)


@dataclass(frozen=True)
class ResolvedMetric:
    """A concrete metric name resolved against the spec that declares it (templates filled in)."""

    metric: str
    source: str  # the registered source whose spec matched
    spec: MetricSpec
    label: str
    energy_group: str | None
    energy_part: str | None

    @classmethod
    def of(cls, metric: str, source: str, spec: MetricSpec, match: re.Match[str]) -> ResolvedMetric:
        groups = match.groups()
        label = spec.label.format(*groups) if spec.label else metric
        group = part = None
        if spec.energy is not None:
            group = spec.energy.group.format(*groups)
            part = spec.energy.part.format(*groups, group=group)
        return cls(metric, source, spec, label, group, part)
