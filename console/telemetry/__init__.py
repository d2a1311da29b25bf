"""Telemetry: sources (psutil, NVML, RAPL powercap, AMD SMI, an estimated power model) polled by a sampler process.

Every source says what it measures (unit, method: measured | integrated | estimated) and, for what it lacks, why;
a sensor that is not there is reported as unavailable with the reason, never as 0. Every source also declares
its metrics' metadata (``metric_specs``: unit, plot, energy role), which the plots and energy accounting read.

Qt-free (import-linter enforces it). Timestamps are ``time.perf_counter_ns()``, the system-wide monotonic
clock the engine workers also use, so samples and latencies share one time axis.
"""

from .base import METHODS, Every, MetricInfo, Sample, Source
from .metadata import PLOTS, Energy, MetricSpec, PlotSpec
from .registry import SOURCES, create_sources, describe, describe_sources, source_names
from .sampler import DEFAULT_RATE_HZ, MAX_RATE_HZ, MIN_RATE_HZ, Sampler, sampler_main, validate_rate

__all__ = [
    "DEFAULT_RATE_HZ",
    "Energy",
    "Every",
    "MAX_RATE_HZ",
    "METHODS",
    "MIN_RATE_HZ",
    "SOURCES",
    "MetricInfo",
    "MetricSpec",
    "PLOTS",
    "PlotSpec",
    "Sample",
    "Sampler",
    "Source",
    "create_sources",
    "describe",
    "describe_sources",
    "sampler_main",
    "source_names",
    "validate_rate",
]
