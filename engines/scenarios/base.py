"""What a scenario plug-in declares: its options (a dataclass of `option` fields), the form it shows, the figures
its result reports (engines.figures) and the validity rules it is judged by.

Options shared by several scenarios live in the small base classes here, so a flag such as
`--warmup-until-stable` means the same everywhere; each scenario subclasses what it takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engines.figures import Figure, Figures
from engines.options import SpecError, option

if TYPE_CHECKING:
    from engines.spec import RunSpec

DEFAULT_WARMUP_CAP_S = 30.0
# The validity rules a scenario is judged by (console.analysis.validity): duration, count and stability, or
# LoadGen's server rules (its latency bound at the percentile with no query dropped; stability only reported).
STABILITY, LATENCY_BOUND = "stability", "latency-bound"

# Figures several scenarios report, declared once: a warm-up until stable, and a rate of queries
WARMUP_FIGURES = Figures((Figure("warmup_elapsed_s", "Warm-up until stable", "s"),),
                         detail=("warmup_until_stable", "warmup_stabilised", "warmup_cap_s"))
RATE_FIGURES = Figures((Figure("target_qps", "Target rate", "queries/s"),
                        Figure("achieved_qps", "Achieved rate", "queries/s")))
QUERY_FIGURES = Figures((Figure("queries", "Queries"), Figure("samples_per_query", "Samples per query")))


@dataclass(frozen=True)
class ScenarioInfo:
    """A scenario as the console sees it. `extra_fields` are other RunSpec paths its form section shows
    (e.g. generate's prompt and output token counts, which the backend needs too: they are part of what the run
    measures, so its fingerprint holds them). `figures`: what its result reports, for the summary card, reports
    and `--json` readers. `validity`: STABILITY or LATENCY_BOUND, the rules its runs are judged by."""

    name: str
    label: str
    module: str
    options: type
    summary: str = ""
    extra_fields: tuple[str, ...] = ()
    figures: Figures = Figures()
    validity: str = STABILITY

    def __post_init__(self) -> None:
        if self.validity not in (STABILITY, LATENCY_BOUND):
            raise ValueError(f"scenario {self.name}: validity must be {STABILITY!r} or {LATENCY_BOUND!r}, "
                             f"not {self.validity!r}")


@dataclass
class NoOptions:
    """A scenario with no options of its own."""

    def check(self, spec: RunSpec) -> None:
        """Nothing to check beyond the fields."""


@dataclass
class WarmupOptions:
    warmup_until_stable: bool = option(
        False, flag="--warmup-until-stable", label="Warm up until stable",
        help="warm up until the last three 100-ms windows agree within 10%% (instead of --warmup seconds), "
             "at most --warmup-cap seconds")
    warmup_cap_s: float | None = option(None, flag="--warmup-cap", metavar="S", maximum=3600, unit="s",
                                        label="Warm-up cap (s)",
                                        help=f"with --warmup-until-stable: the most warm-up seconds "
                                             f"(default {DEFAULT_WARMUP_CAP_S:g})")

    def check(self, spec: RunSpec) -> None:
        if self.warmup_cap_s is not None and not self.warmup_until_stable:
            raise SpecError("scenario_options.warmup_cap_s", "caps a warm-up until stable; turn on "
                            "warmup_until_stable too, or set warmup_s for a fixed warm-up")


@dataclass
class LoadOptions(WarmupOptions):
    """Scenarios that issue queries (offline, server, multi-stream): they measure inference only."""

    max_queries: int | None = option(None, flag="--max-queries", metavar="N", label="Max queries",
                                     help="offline, server, multi-stream: stop after N queries even before "
                                          "--duration")

    def check(self, spec: RunSpec) -> None:
        super().check(spec)
        if spec.mode != "inference":
            raise SpecError("mode", f"scenario {spec.scenario} measures inference; use mode inference")
