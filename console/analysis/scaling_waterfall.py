"""The scaling waterfall: from the ideal N-rank step to the measured one, one bar per place the time went.

Why this shape (contract §7): "E(N) = 0.8" says how much was lost, not where. Starting at the ideal step (the
1-rank step ÷ N under strong scaling, where each rank does 1/N of the work; the 1-rank step itself under weak
scaling, where each rank does the same work), each bar adds what one part of the step costs at N ranks beyond
its share at one rank: Δ = part_N − part_1/N (strong) or part_N − part_1 (weak). Because both breakdowns'
parts (unattributed included) add to their own step means, the chain ends exactly at the measured T_N — it is an
identity, not a fit — and `ends_at_measured` checks it. What the stamps could not attribute is its own bar,
never folded into another, and `adds_up` says whether both breakdowns explain their steps within 5%.

Input: two BREAKDOWN dicts (engines.ddp.breakdown.summarize): the N-rank run's and its 1-rank partner's.
Pure and Qt-free.
"""

from __future__ import annotations

import math
from typing import Any

PART_KEYS = ("data_wait_s", "forward_s", "backward_compute_s", "straggler_s", "exposed_comm_s", "optimizer_s")
LATER_KEYS = ("grad_copy_s",)  # stamped since 2026-12: an older breakdown's copy-back is inside its unattributed
BARS = ("ideal", "compute", "data wait", "optimizer", "straggler", "exposed communication", "gradient copy-back",
        "unattributed")
ENDS = 1e-9

__all__ = ["waterfall", "BARS"]


# ---- Public API
def waterfall(bd_n: dict[str, Any], bd_1: dict[str, Any], ranks: int, scaling: str) -> dict[str, Any]:
    """{ranks, scaling, ideal_s, measured_s, bars [{name, delta_s, from_s, to_s, how}], ends_at_measured,
    closure_n, closure_1, adds_up} (contract §7). Raises ValueError naming what is missing or inconsistent."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"ranks {ranks!r}: a whole number ≥ 1")
    if scaling not in ("strong", "weak"):
        raise ValueError(f"scaling {scaling!r}: 'strong' or 'weak'")
    n_parts, t_n = _parts(bd_n, "the N-rank breakdown")
    one_parts, t_1 = _parts(bd_1, "the 1-rank breakdown")
    if bd_n.get("ranks") not in (None, ranks):
        raise ValueError(f"the N-rank breakdown is of {bd_n['ranks']} ranks, not {ranks}: pass its own rank count")
    if bd_1.get("ranks") not in (None, 1):
        raise ValueError(f"the baseline breakdown is of {bd_1['ranks']} ranks: the waterfall starts from a 1-rank run")
    share = 1.0 / ranks if scaling == "strong" else 1.0
    ideal = t_1 * share
    groups = {
        "compute": ("forward_s", "backward_compute_s"),
        "data wait": ("data_wait_s",),
        "optimizer": ("optimizer_s",),
        "straggler": ("straggler_s",),
        "exposed communication": ("exposed_comm_s",),
        "gradient copy-back": ("grad_copy_s",),
        "unattributed": ("unattributed_s",),
    }
    bars = [{"name": "ideal", "delta_s": ideal, "from_s": 0.0, "to_s": ideal, "how": _ideal_how(t_1, ranks, scaling)}]
    at = ideal
    for name in BARS[1:]:
        keys = groups[name]
        part_n = math.fsum(n_parts[k] for k in keys)
        part_1 = math.fsum(one_parts[k] for k in keys)
        delta = part_n - part_1 * share
        bars.append({"name": name, "delta_s": delta, "from_s": at, "to_s": at + delta,
                     "how": _how(name, part_n, part_1, ranks, scaling, bd_n)})
        at += delta
    closure_n, closure_1 = bd_n.get("closure"), bd_1.get("closure")
    return {"ranks": ranks, "scaling": scaling, "ideal_s": ideal, "measured_s": t_n, "bars": bars,
            "ends_at_measured": abs(at - t_n) < ENDS, "closure_n": closure_n, "closure_1": closure_1,
            "adds_up": _within(closure_n) and _within(closure_1),
            "method": ("ideal = the 1-rank step ÷ N (strong) or the 1-rank step (weak); each bar Δ = the part's mean "
                       "per step at N ranks − its 1-rank value ÷ N (strong) or − its 1-rank value (weak); parts "
                       "from each run's breakdown, unattributed time its own bar; the chain ends at the measured "
                       "N-rank step")}


# ---- Private API
def _parts(bd: dict[str, Any], what: str) -> tuple[dict[str, float], float]:
    if not isinstance(bd, dict):
        raise ValueError(f"{what} is missing: a waterfall needs both runs' breakdowns (summary.scenario.ddp.breakdown)")
    parts = bd.get("parts")
    step = (bd.get("step_s") or {}).get("mean") if isinstance(bd.get("step_s"), dict) else None
    if not isinstance(parts, dict) or not _num(step):
        raise ValueError(f"{what} has no parts or step mean: it is not a breakdown of contract §5")
    missing = [k for k in PART_KEYS if _num(parts.get(k)) is None]
    if missing or _num(bd.get("unattributed_s")) is None:
        raise ValueError(f"{what} lacks {', '.join(missing or ['unattributed_s'])}: recompute it with "
                         "engines.ddp.breakdown.summarize")
    out = {k: float(parts[k]) for k in PART_KEYS}
    out.update({k: _num(parts.get(k)) or 0.0 for k in LATER_KEYS})
    out["unattributed_s"] = float(bd["unattributed_s"])
    return out, float(step)


def _ideal_how(t_1: float, ranks: int, scaling: str) -> str:
    if scaling == "strong":
        return (f"the 1-rank step {_ms(t_1)} ÷ {ranks} ranks: strong scaling splits the global batch, so ideally "
                "each rank's step is 1/N of it")
    return f"the 1-rank step {_ms(t_1)}: weak scaling gives every rank the same batch, so ideally the step stays"


def _how(name: str, part_n: float, part_1: float, ranks: int, scaling: str, bd_n: dict[str, Any]) -> str:
    base = f"{_ms(part_1)} ÷ {ranks} = {_ms(part_1 / ranks)}" if scaling == "strong" else _ms(part_1)
    text = {
        "compute": "forward + backward (up to the last bucket's all-reduce launch) on a typical rank",
        "data wait": "waiting for the next batch on a typical rank",
        "optimizer": "optimizer step and zero_grad on the slowest rank",
        "straggler": "how much longer the slowest rank computed than the others' median",
        "exposed communication": "all-reduce time not overlapped by backward compute on the slowest rank",
        "gradient copy-back": ("DDP copying the averaged gradient buckets into each parameter's .grad after the last "
                               "all-reduce, on the slowest rank (gradient_as_bucket_view=True would skip the copy)"),
        "unattributed": "step time the stamps did not cover (shown, never folded into a part)",
    }[name]
    extra = ""
    if name == "straggler":
        who = bd_n.get("straggler") or {}
        if who.get("named"):
            extra = f"; rank {who.get('rank')} on {who.get('host') or 'its host'} named"
    if name == "exposed communication":
        overlap = (bd_n.get("comm") or {}).get("overlap_pct")
        if _num(overlap) is not None:
            extra = f"; {overlap:.0f}% of the all-reduce overlapped"
    return f"{text}: {_ms(part_n)} at {ranks} ranks against {base} at 1 rank{extra}"


def _within(closure: Any) -> bool:
    return _num(closure) is not None and abs(1.0 - float(closure)) <= 0.05


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)
