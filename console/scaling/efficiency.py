"""Scaling efficiency E(N) = X(N) / (N · X(1)) of a data-parallel run against its 1-rank partner, with an interval.

Why these choices:
- X is global samples per measured second, the figure the run's summary already carries (the worker's
  `samples_per_s`, counted over every rank). A run stored without it is counted here as iterations × global batch ÷
  measured seconds, where the global batch of a weak-scaling run is N × its per-rank batch (never the per-rank
  batch, which would make E look N times worse).
- The interval resamples each run's measured step times (a seeded bootstrap of their means, 2000 times) and reads
  the 2.5th and 97.5th percentiles of the ratio. Consecutive steps of a training loop are autocorrelated (the same
  caches, the same data order), which an i.i.d. bootstrap ignores: the interval is a floor, never an upper bound on
  the uncertainty, and the method text says so.
- At N = 1 E is 1 by definition: the point is its own baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

RESAMPLES = 2000
SEED = 20_230_23  # fixed: the same runs give the same interval every time
CHUNK = 250  # resamples drawn at once (bounds memory for runs with many steps)


# ---- Public API
def ddp_block(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run's DDP block (summary.scenario.ddp), {} when the run has none."""
    summary = run.get("summary") or {}
    block = (summary.get("scenario") or {}).get("ddp") if isinstance(summary, Mapping) else None
    return dict(block) if isinstance(block, Mapping) else {}


def torch_options(run: Mapping[str, Any]) -> dict[str, Any]:
    """The torch engine options of the run's spec ({} when absent)."""
    spec = run.get("spec") or {}
    options = (spec.get("engine_options") or {}).get("torch") if isinstance(spec, Mapping) else None
    return dict(options) if isinstance(options, Mapping) else {}


def ranks_of(run: Mapping[str, Any]) -> int | None:
    """How many ranks the run trained on: the DDP block's count, else the spec's --ranks; None: not a DDP run."""
    ranks = ddp_block(run).get("ranks")
    if ranks is None:
        ranks = torch_options(run).get("ranks")
    return int(ranks) if isinstance(ranks, (int, float)) and not isinstance(ranks, bool) else None


def scaling_of(run: Mapping[str, Any]) -> str:
    """"strong" or "weak" (the DDP block's, else the spec's; strong by default, as --scaling is)."""
    return str(ddp_block(run).get("scaling") or torch_options(run).get("scaling") or "strong")


def global_batch(run: Mapping[str, Any]) -> int:
    """Samples per optimizer step over all ranks: the DDP block's, else from the spec (weak: N × --batch)."""
    block = ddp_block(run)
    if isinstance(block.get("global_batch"), (int, float)) and block["global_batch"] > 0:
        return int(block["global_batch"])
    batch = int((run.get("spec") or {}).get("batch") or 1)
    ranks = ranks_of(run) or 1
    return batch * ranks if scaling_of(run) == "weak" else batch


def per_rank_batch(run: Mapping[str, Any]) -> float:
    block = ddp_block(run)
    if isinstance(block.get("per_rank_batch"), (int, float)) and block["per_rank_batch"] > 0:
        return float(block["per_rank_batch"])
    return global_batch(run) / (ranks_of(run) or 1)


def samples_per_s(run: Mapping[str, Any]) -> tuple[float, str]:
    """(global samples per measured second, how it was obtained); ValueError naming the run when it has none."""
    summary = run.get("summary") or {}
    scenario = summary.get("scenario") or {}
    value = scenario.get("samples_per_s")
    if _positive(value):
        return float(value), "the run's global samples/s (every rank's samples ÷ measured seconds)"
    iterations, seconds = summary.get("iterations"), summary.get("duration_s")
    if _positive(iterations) and _positive(seconds):
        batch = global_batch(run)
        return iterations * batch / seconds, f"{iterations} steps × global batch {batch} ÷ {seconds:.3g} measured s"
    raise ValueError(f"run {_short(run)} has no throughput (no samples/s, steps or measured seconds in its "
                     "summary): only a completed run can be compared; pick another run")


def efficiency(run_n: Mapping[str, Any], run_1: Mapping[str, Any], lat_n_ns: Sequence[int] | np.ndarray,
               lat_1_ns: Sequence[int] | np.ndarray) -> dict[str, Any]:
    """E(N) of `run_n` against `run_1` (a 1-rank run of the same model and batch) with a 95% bootstrap interval
    from both runs' measured step times (`lat_*_ns`, as the history stores them).

    ValueError naming the problem when the two cannot be compared: different models, a baseline that is not one
    rank, or batches that do not match the scaling (strong: the same global batch; weak: the baseline's batch =
    the per-rank batch). The baseline's own --scaling is not compared: with one rank, strong and weak are the
    same run."""
    ranks = ranks_of(run_n)
    if ranks is None:
        raise ValueError(f"run {_short(run_n)} is not a data-parallel run (no --ranks): E(N) needs "
                         "`--mode training --ranks N`")
    scaling = scaling_of(run_n)
    x_n, how_n = samples_per_s(run_n)
    if ranks == 1:
        return {"ranks": 1, "e": 1.0, "interval_95": [1.0, 1.0], "x_n": x_n, "x_1": x_n, "speedup": 1.0,
                "baseline_run_id": run_n.get("run_id"), "scaling": scaling, "run_id": run_n.get("run_id"),
                "method": "N = 1: the run is its own baseline, so E is 1 by definition"}
    _check_comparable(run_n, run_1, ranks, scaling)
    x_1, how_1 = samples_per_s(run_1)
    e = x_n / (ranks * x_1)
    interval, note = _interval(e, np.asarray(lat_n_ns, dtype=np.float64), np.asarray(lat_1_ns, dtype=np.float64),
                               run_n, run_1)
    method = (f"E = X(N) ÷ (N·X(1)) with X = global samples per measured second ({scaling} scaling"
              + ("; X(N) counts N × the per-rank batch" if scaling == "weak" else "; the global batch is fixed")
              + f"). X({ranks}): {how_n}; X(1): {how_1}. " + note)
    result = {"ranks": ranks, "e": e, "interval_95": interval, "x_n": x_n, "x_1": x_1, "speedup": x_n / x_1,
              "baseline_run_id": run_1.get("run_id"), "scaling": scaling, "run_id": run_n.get("run_id"),
              "method": method}
    shares = _core_share(run_n), _core_share(run_1)
    if None not in shares and shares[0] != shares[1]:
        result["cores_note"] = (f"each of the {ranks} ranks ran on {shares[0]} core(s), the 1-rank baseline on "
                                f"{shares[1]}: E compares unequal core shares (strong scaling keeps the machine, "
                                "not the share; on a loaded machine a many-thread baseline can be held back)")
    if interval is not None and interval[0] > 1.0:
        result["note"] = (f"E({ranks}) lies above 1 beyond its interval: each of the {ranks} ranks did more per "
                          f"second than the 1-rank run {_short(run_1)}, so that baseline was held back (threads "
                          "oversubscribed on a loaded machine, caches, a different core share); compare the two "
                          "runs' cores and threads and the machine's load before reading E")
    return result


# ---- Private API
def _check_comparable(run_n: Mapping[str, Any], run_1: Mapping[str, Any], ranks: int, scaling: str) -> None:
    model_n, model_1 = (run_n.get("spec") or {}).get("model"), (run_1.get("spec") or {}).get("model")
    if model_n != model_1:
        raise ValueError(f"runs {_short(run_n)} ({model_n}) and {_short(run_1)} ({model_1}) train different "
                         "models: E(N) compares the same model at N ranks and at 1; pick a 1-rank run of "
                         f"{model_n}")
    base_ranks = ranks_of(run_1)
    if base_ranks != 1:
        raise ValueError(f"baseline run {_short(run_1)} ran on {base_ranks or 'no'} ranks, not 1: E(N) is "
                         f"measured against the same spec with --ranks 1")
    batch_1 = global_batch(run_1)
    expected = global_batch(run_n) if scaling == "strong" else per_rank_batch(run_n)
    if abs(batch_1 - expected) > 1e-9:
        what = "global batch" if scaling == "strong" else "per-rank batch"
        raise ValueError(f"run {_short(run_n)} is {scaling} scaling with {what} {expected:g}, but baseline "
                         f"{_short(run_1)} trained batch {batch_1}: their scaling does not match; run the baseline "
                         f"with --ranks 1 --batch {expected:g}")


def _interval(e: float, lat_n: np.ndarray, lat_1: np.ndarray, run_n: Mapping[str, Any],
              run_1: Mapping[str, Any]) -> tuple[list[float] | None, str]:
    """Seeded percentile bootstrap: E × (mean_N / mean_N*) × (mean_1* / mean_1), so the interval sits around the
    throughput-based E while its width comes from the step times."""
    short = [(_short(run), int(lat.size)) for run, lat in ((run_n, lat_n), (run_1, lat_1)) if lat.size < 2]
    if short:
        which = ", ".join(f"run {run_id} stored {count}" for run_id, count in short)
        return None, (f"Interval not available: {which} step time(s); at least 2 are needed "
                      "(measure longer: --duration or --iterations).")
    rng = np.random.default_rng(SEED)
    means_n, means_1 = _boot_means(lat_n, rng), _boot_means(lat_1, rng)
    ratios = e * (lat_n.mean() / means_n) * (means_1 / lat_1.mean())
    low, high = np.percentile(ratios, [2.5, 97.5])
    return [float(low), float(high)], (
        f"Interval: 95% percentile bootstrap ({RESAMPLES} resamples, seed {SEED}) of each run's mean measured step "
        f"time ({lat_n.size} and {lat_1.size} steps), percentiles of the ratio. Consecutive steps are "
        "autocorrelated, so the true interval is wider: read this one as a floor.")


def _boot_means(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(RESAMPLES)
    chunk = max(1, min(CHUNK, 4_000_000 // values.size))  # ≤ 4 M indices held at once
    for start in range(0, RESAMPLES, chunk):
        count = min(chunk, RESAMPLES - start)
        out[start:start + count] = values[rng.integers(0, values.size, (count, values.size))].mean(axis=1)
    return out


def _core_share(run: Mapping[str, Any]) -> int | None:
    """Cores of the run's first rank (the plan gives every rank an equal share); None when not recorded."""
    ranks_out = ddp_block(run).get("ranks_out")
    cores = (ranks_out[0] or {}).get("cores") if isinstance(ranks_out, list) and ranks_out else None
    return len(cores) if isinstance(cores, list) and cores else None


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _short(run: Mapping[str, Any]) -> str:
    return str(run.get("run_id") or "?")[:8]
