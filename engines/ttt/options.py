"""A time-to-train run's options, checked and filled in before anything starts: the console checks them (a typo
costs no worker), the worker checks them again (it may be called directly). Pure Python: no torch.

Strong scaling, as MLPerf's rules fix it per benchmark: `global_batch` samples per optimizer step whatever the
number of ranks (each rank takes global_batch / ranks from its own shard of the training set), so a run at N ranks
learns from the same sequence of step sizes as one at 1 rank and its time-to-train can be set beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engines.ttt.errors import TimeToTrainError

TASK = "ttt-mlp"  # the catalog entry trained (engines.catalog.ttt_task)
BACKENDS = ("gloo", "nccl")
DEFAULTS: dict[str, Any] = {"ranks": 1, "backend": "gloo", "target_quality": 0.9, "max_steps": 3000,
                            "eval_every": 25, "global_batch": 128, "lr": 0.1, "n_train": 65536, "n_eval": 2048,
                            "seed": 0, "cluster": None, "stall_timeout_s": 120.0, "task_params": None,
                            "label": None, "threads": None}
MAX_SEED = 2**31 - 1

__all__ = ["normalize", "DEFAULTS", "TASK", "BACKENDS"]


# ---- Public API
def normalize(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options with defaults filled in and every value checked; TimeToTrainError naming the bad one and the fix."""
    given = dict(options or {})
    unknown = sorted(set(given) - set(DEFAULTS) - {"placement"})
    if unknown:
        raise TimeToTrainError(f"unknown time-to-train option(s) {', '.join(unknown)}",
                               f"use only {', '.join(sorted(DEFAULTS))}")
    given.pop("placement", None)  # derived from cluster below
    out = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    out["ranks"] = _whole(out["ranks"], "--ranks", 1, 1024, "give 1 or more ranks (e.g. --ranks 2)")
    out["max_steps"] = _whole(out["max_steps"], "--max-steps", 1, 10_000_000,
                              "give the most optimizer steps a run may take before it counts as not reached")
    out["eval_every"] = _whole(out["eval_every"], "--eval-every", 1, 10_000_000,
                               "evaluate every N steps (e.g. 25): fewer evaluations cost less, more find the time "
                               "closer")
    out["global_batch"] = _whole(out["global_batch"], "--batch", 1, 1 << 20,
                                 "give the global batch: samples per optimizer step over all ranks (e.g. 128)")
    out["n_train"] = _whole(out["n_train"], "n_train", 1, 1 << 26, "give the training set's size (e.g. 16384)")
    out["n_eval"] = _whole(out["n_eval"], "n_eval", 1, 1 << 24, "give the evaluation set's size (e.g. 2048)")
    out["seed"] = _whole(out["seed"], "--seed", 0, MAX_SEED, f"give a seed from 0 to {MAX_SEED}")
    if out["threads"] is not None:  # None: each rank takes its share of the worker's cores
        out["threads"] = _whole(out["threads"], "--threads", 1, 4096, "give the threads each rank uses (e.g. 1)")
    out["target_quality"] = _number(out["target_quality"], "--target", "give the eval accuracy to reach, above 0 "
                                    "and at most 1 (e.g. 0.9)", low=0.0, high=1.0, low_open=True)
    out["lr"] = _number(out["lr"], "lr", "give a learning rate above 0 (e.g. 0.1)", low=0.0, high=100.0,
                        low_open=True)
    out["stall_timeout_s"] = _number(out["stall_timeout_s"], "stall_timeout_s",
                                     "give how long a silent rank may take before the run is ended (e.g. 120)",
                                     low=1.0, high=86400.0)
    if out["backend"] not in BACKENDS:
        raise TimeToTrainError(f"unknown backend {out['backend']!r}",
                               "choose gloo (CPU processes) or nccl (one rank per NVIDIA GPU)")
    if out["global_batch"] % out["ranks"]:
        fitting = out["global_batch"] - out["global_batch"] % out["ranks"] or out["ranks"]
        raise TimeToTrainError(f"--batch {out['global_batch']} does not split over {out['ranks']} ranks",
                               f"give a multiple of {out['ranks']} (e.g. --batch {fitting})")
    if out["n_train"] < out["global_batch"]:
        raise TimeToTrainError(f"the training set ({out['n_train']} samples) is smaller than one global batch "
                               f"({out['global_batch']})", "give a larger n_train or a smaller --batch")
    if out["eval_every"] > out["max_steps"]:
        raise TimeToTrainError(f"--eval-every {out['eval_every']} is more than --max-steps {out['max_steps']}: "
                               "the run would never be evaluated", "give --eval-every at most --max-steps")
    task_params = out["task_params"]
    if task_params is not None and (not isinstance(task_params, dict)
                                    or not all(isinstance(k, str) for k in task_params)):
        raise TimeToTrainError(f"task_params {task_params!r} is not a {{name: value}} mapping",
                               "give the ttt-mlp parameters to override, e.g. {\"hidden\": 64}")
    cluster = out["cluster"]
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        raise TimeToTrainError(f"--cluster {cluster!r} is not an address", "give the head's HOST:PORT, or auto")
    label = out["label"]
    if label is not None and not isinstance(label, str):
        raise TimeToTrainError(f"label {label!r} is not text", "give a short name for the run, or none")
    out["placement"] = "ray" if cluster else "local"
    return out


# ---- Private API
def _whole(value: Any, name: str, low: int, high: int, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
        raise TimeToTrainError(f"{name} {value!r} is not a whole number", fix)
    value = int(value)
    if not low <= value <= high:
        raise TimeToTrainError(f"{name} {value} is outside {low}–{high}", fix)
    return value


def _number(value: Any, name: str, fix: str, *, low: float, high: float, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TimeToTrainError(f"{name} {value!r} is not a finite number", fix)
    if value > high or value < low or (low_open and value == low):
        raise TimeToTrainError(f"{name} {value:g} is outside {'(' if low_open else '['}{low:g}, {high:g}]", fix)
    return float(value)
