"""A run against its configuration's baseline: faster, slower, equivalent or undecided, with the ratio's interval.

The comparison is console.analysis.compare (ratio of medians with a block-bootstrap interval, and Mann-Whitney
U on the same blocks' medians; a difference only when both agree and the ratio leaves the noise band, equivalent
only when the whole interval lies inside it). What changed around the measurement
(engine or driver version, device) is listed beside the verdict. Qt-free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from console.analysis.compare import compare
from console.analysis.fingerprint import differences

MIN_ITERATIONS = 2


def verdict(run: dict[str, Any], run_latency_ns: np.ndarray, baseline: dict[str, Any],
            baseline_latency_ns: np.ndarray) -> dict[str, Any]:
    """The `baseline` block of a run's summary: {run_id, verdict, ratio, ci95, p_value, explanation, changed}."""
    block: dict[str, Any] = {"run_id": baseline["run_id"], "verdict": None, "ratio": None, "ci95": None,
                             "p_value": None}
    if min(len(run_latency_ns), len(baseline_latency_ns)) < MIN_ITERATIONS:
        block["explanation"] = (f"not compared: the run has {len(run_latency_ns)} and the baseline "
                                f"{len(baseline_latency_ns)} measured iterations (at least {MIN_ITERATIONS} each)")
        return block
    result = compare(np.asarray(baseline_latency_ns) / 1e6, np.asarray(run_latency_ns) / 1e6)
    block.update({key: result[key] for key in ("verdict", "ratio", "ci95", "p_value", "explanation", "mde",
                                                "noise")})
    block["changed"] = [d for d in differences(baseline, run) if d["kind"] == "environment"]
    return block


def stored_baseline(reader: Any, run: dict[str, Any]) -> tuple[dict[str, Any], np.ndarray] | None:
    """The baseline run stored for the run's configuration and its latencies, from `reader` (a history reader the
    caller opened); None when it has none (or is it)."""
    baseline = reader.baseline_of(run["fingerprint"])
    if baseline is None or baseline["run_id"] == run["run_id"]:
        return None
    return baseline, reader.latencies(baseline["run_id"])[1]
