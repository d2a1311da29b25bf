"""Telemetry: sources (psutil now; NVML, RAPL, estimated power next) polled by a sampler process.

Qt-free (import-linter enforces it). Timestamps are ``time.perf_counter_ns()``, the system-wide monotonic
clock the engine workers also use, so samples and latencies share one time axis.
"""

from .base import METHODS, MetricInfo, Sample, Source
from .registry import SOURCES, create_sources, describe, describe_sources, source_names
from .sampler import DEFAULT_RATE_HZ, MAX_RATE_HZ, MIN_RATE_HZ, Sampler, sampler_main, validate_rate

__all__ = [
    "DEFAULT_RATE_HZ",
    "MAX_RATE_HZ",
    "METHODS",
    "MIN_RATE_HZ",
    "SOURCES",
    "MetricInfo",
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
