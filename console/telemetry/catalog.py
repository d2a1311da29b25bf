"""What a metric name means, from the metrics every registered source declares (``Source.metric_specs``).

Used where rows are drawn or accounted (the plot routes, energy), never in the sampler. The catalog follows
:data:`console.telemetry.registry.SOURCES` as it is now: registering a source (or a test monkeypatching the
registry) is all it takes for its metrics to be routed and counted. Specs are tried in registry order and
the first match wins.
"""

from __future__ import annotations

import logging
from typing import Any

from . import registry
from .metadata import MetricSpec, ResolvedMetric

log = logging.getLogger(__name__)


class Catalog:
    """The declared metrics of a fixed set of sources; resolved names are memoised (rows repeat names)."""

    def __init__(self, declared: list[tuple[str, MetricSpec]]) -> None:
        self.declared = declared
        self._memo: dict[str, ResolvedMetric | None] = {}

    def resolve(self, metric: str) -> ResolvedMetric | None:
        """The spec that declares ``metric``, templates filled; None when no source declares it."""
        try:
            return self._memo[metric]
        except KeyError:
            pass
        found = None
        for source, spec in self.declared:
            match = spec.match(metric)
            if match is not None:
                found = ResolvedMetric.of(metric, source, spec, match)
                break
        if len(self._memo) < 100_000:  # bounded: metric names are few, but never trust a stream
            self._memo[metric] = found
        return found

    def plot_sources(self, plot: str) -> tuple[str, ...]:
        """The sources that declare a metric drawn on ``plot``, in registry order."""
        return tuple(dict.fromkeys(source for source, spec in self.declared if spec.plot == plot))


_cache: tuple[tuple[tuple[str, Any], ...], Catalog] | None = None


def current() -> Catalog:
    """The catalog of the sources registered now (rebuilt only when the registry changed)."""
    global _cache
    snapshot = tuple(registry.SOURCES.items())
    if _cache is not None and _cache[0] == snapshot:
        return _cache[1]
    declared: list[tuple[str, MetricSpec]] = []
    for name in registry.SOURCES:
        try:
            cls = registry.load_source_class(name)
        except Exception as exc:  # a broken plug-in is reported by describe_sources(); routing goes on
            log.warning("telemetry source %r cannot be loaded, its metrics are not routed: %r", name, exc)
            continue
        declared += [(name, spec) for spec in getattr(cls, "metric_specs", ())]
    catalog = Catalog(declared)
    _cache = (snapshot, catalog)
    return catalog


def undeclared(source_cls: type, infos: list[Any]) -> list[str]:
    """What is wrong between the metrics a source reports (``MetricInfo``) and its ``metric_specs``.

    Empty when every reported metric is declared with the same unit and method. A check for tests and for
    plug-in authors: an undeclared metric is recorded but never drawn or counted.
    """
    problems = []
    specs = getattr(source_cls, "metric_specs", ())
    for info in infos:
        spec = next((s for s in specs if s.match(info.name)), None)
        if spec is None:
            problems.append(f"{info.name}: not declared in {source_cls.__name__}.metric_specs")
        elif (spec.unit, spec.method) != (info.unit, info.method):
            problems.append(f"{info.name}: reported in {info.unit} ({info.method}) but declared in {spec.unit} "
                            f"({spec.method}) by {spec.pattern!r}")
    return problems
