"""How stable a bottleneck verdict is: the profiled iterations resampled, the verdict asked again of each resample.

Why: one profile is one draw. PaddleOCR's detector at 320×320 gave "inconclusive", "cache-resident (0.61, then
compute)" and "inconclusive" in three repeats of one configuration, and the old confidence (a margin between two
scores) could not say that the call was that close. Here the profile's per-iteration op times
(profile["per_iteration"], engines.profiling.iteration_table) are bootstrapped — the iterations drawn with
replacement, seeded, up to RESAMPLES times (in batches, stopping once the answer is clear) — and
console.analysis.bottleneck.diagnose judges each resample with the run's own latency figures. The share of resamples that give the verdict's class is its stability, and it *is* the
confidence shown: "92% confident" means 92% of resamples of the profiled iterations give this class. A decided
verdict whose stability is below STABLE is not shown as decided: it becomes "inconclusive" with the classes the
resamples split between and what would settle it (the confirmation, or more profiled iterations).

`repeat_agreement` says whether earlier analyses of the same configuration (one fingerprint in the history) gave
the same class; `earlier_verdicts` picks them from a history reader the caller opened. Pure and deterministic
(numpy's seeded generator); Qt-free.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from console.analysis import bottleneck, bottleneck_text

RESAMPLES = 200  # bootstrap draws of the profiled iterations at most (a share to ±3.5 points at 1 σ)
BATCH = 50  # drawn in batches; after each, stop once the share's 95% interval lies wholly on one side of STABLE
Z95 = 1.96
SEED = 0  # fixed: the same run gives the same stability, and so the same verdict
STABLE = 0.8  # a decided class given by fewer resamples than this is shown as inconclusive
MIN_ROWS = 5  # fewer profiled iterations (rows) than this cannot be resampled meaningfully
SETTLE = ("run the confirmation (labconsole analyze --confirm) or profile more iterations "
          "(--profile-iterations N)")
METHOD = (f"bootstrap of the profiled iterations (seeded; up to {RESAMPLES} resamples in batches of {BATCH}, "
          "stopping once the 95% Wilson interval of the verdict's share lies wholly above or below "
          "80%): each resample's per-op times re-judged with the run's latency figures; the share of resamples "
          "giving each class")


# ---- Public API
def judge(run: dict[str, Any], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """The verdict of bottleneck.diagnose with its stability: `stability` (the resampled shares, or why not
    available), `score` (diagnose's own margin-based confidence, kept), `confidence` (the stability share when
    resampled; else the score, and `confidence_basis` says so). A decided class below STABLE → inconclusive."""
    verdict = bottleneck.diagnose(run)
    block = stability(run, verdict, resamples, seed)
    return apply(verdict, block)


def stability(run: dict[str, Any], verdict: dict[str, Any], resamples: int = RESAMPLES,
              seed: int = SEED) -> dict[str, Any]:
    """{available, share (of the verdict's class), classes {class: share, most first}, runner_up,
    runner_up_share, resamples, rows, iterations_per_row, method}; {available: False, reason} when the profile
    kept no per-iteration times or too few iterations."""
    table, reason = _table(run)
    if table is None:
        return {"available": False, "reason": reason}
    names, rows, walls = table["ops"], table["times_s"], table.get("wall_s")
    base_ops = [dict(op) for op in run.get("ops") or []]
    index = {name: k for k, name in enumerate(names)}
    column_total = [sum(row[k] for row in rows) for k in range(len(names))]
    wall_total = sum(walls) if walls else None
    profile = dict(run.get("profile") or {})
    base_wall = _num(profile.get("wall_s"))
    base_op_time = _num(profile.get("op_time_s")) or sum(_num(op.get("time_s")) or 0.0 for op in base_ops)
    n, draws = len(rows), max(1, int(resamples))
    picked = np.zeros((draws, n))  # how often each row is drawn, per resample
    np.add.at(picked, (np.repeat(np.arange(draws), n), np.random.default_rng(seed).integers(0, n, draws * n)), 1.0)
    column_sums = (picked @ np.asarray(rows, dtype=float)).tolist()
    wall_sums = (picked @ np.asarray(walls, dtype=float)).tolist() if walls else None
    counts: Counter[str] = Counter()
    shown = verdict.get("class")
    for i in range(draws):
        if i and i % BATCH == 0 and _settled(counts[shown], i):
            break
        sums = column_sums[i]
        ops = []
        for op in base_ops:
            k = index.get(str(op.get("op")))
            seconds = _num(op.get("time_s")) or 0.0
            if k is not None and column_total[k] > 0:
                seconds *= sums[k] / column_total[k]
            ops.append(_retimed(op, seconds))
        op_time = sum(op["time_s"] for op in ops)
        for op in ops:
            op["share"] = op["time_s"] / op_time if op_time > 0 else 0.0
        wall = base_wall
        if base_wall is not None and walls and wall_total:
            wall = base_wall * wall_sums[i] / wall_total
        elif base_wall is not None:
            wall = base_wall + (op_time - base_op_time)  # the time outside ops kept as measured
        counts[bottleneck.diagnose({**run, "ops": ops,
                                    "profile": {**profile, "wall_s": wall, "op_time_s": op_time}})["class"]] += 1
    total = sum(counts.values())
    classes = {name: round(count / total, 3) for name, count in
               sorted(counts.items(), key=lambda kv: (-kv[1], _order(kv[0])))}
    others = [(name, share) for name, share in classes.items() if name not in (shown, bottleneck.INCONCLUSIVE)]
    return {"available": True, "share": classes.get(shown, 0.0), "classes": classes,
            "runner_up": others[0][0] if others else None, "runner_up_share": others[0][1] if others else 0.0,
            "inconclusive_share": classes.get(bottleneck.INCONCLUSIVE, 0.0),
            "resamples": total, "rows": n, "iterations_per_row": int(table.get("iterations_per_row") or 1),
            "method": METHOD}


def apply(verdict: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """The verdict with its stability block; its confidence the resample share; unstable → inconclusive."""
    verdict = {**verdict, "stability": block, "score": verdict.get("confidence")}
    if not block.get("available"):
        verdict["confidence_basis"] = f"score (not resampled: {block.get('reason')})"
        return verdict
    shown, share = verdict["class"], float(block["share"])
    verdict["confidence_basis"] = "resamples"
    if shown != bottleneck.INCONCLUSIVE and share < STABLE:
        return _unstable(verdict, block)
    verdict["confidence"] = round(share, 2)
    if shown != bottleneck.INCONCLUSIVE:
        how = f"{share:.0%} of {block['resamples']} resamples agree"
        verdict["sentence"] = bottleneck_text.decided_sentence(shown, verdict["evidence"], verdict.get("secondary"), how)
    else:
        verdict["sentence"] = verdict["sentence"].rstrip(".") + f" (inconclusive in {share:.0%} of resamples)."
    return verdict


def repeat_agreement(verdicts: list[Any], current: Any = None) -> dict[str, Any]:
    """Whether earlier verdicts of one configuration (dicts with "class", or class names; oldest first) agree
    with each other and with `current`: {agree, classes {class: count}, earlier, text}."""
    earlier = [_class_of(v) for v in verdicts if _class_of(v)]
    now = _class_of(current) if current is not None else None
    every = earlier + ([now] if now else [])
    classes = dict(sorted(Counter(every).items(), key=lambda kv: (-kv[1], _order(kv[0]))))
    agree = len(classes) <= 1
    if not earlier:
        return {"agree": True, "classes": classes, "earlier": 0,
                "text": "no earlier analysis of this configuration in the history"}
    noun = "analysis" if len(earlier) == 1 else "analyses"
    text = f"{len(earlier)} earlier {noun} of this configuration: {', '.join(earlier)}"
    if agree:
        text += f"; this one agrees ({now})" if now else "; they agree"
    else:
        split = ", ".join(f"{name} ×{count}" for name, count in classes.items())
        text += (f"; the repeats disagree ({split}): the verdict is not stable across repeats — {SETTLE}")
    return {"agree": agree, "classes": classes, "earlier": len(earlier), "text": text}


def earlier_verdicts(store: Any, run_id: str, limit: int = 10) -> list[dict[str, Any]]:
    """The stored verdicts of the other completed runs with this run's fingerprint, oldest first (at most
    `limit`, the newest kept); [] when the run has no fingerprint. `store`: a history reader the caller opened
    (analysis reads no history of its own)."""
    run = store.get_run(run_id)
    fingerprint = (run or {}).get("fingerprint")
    if not fingerprint:
        return []
    runs = store.list_runs(status="completed", fingerprint=fingerprint)
    found = [((r.get("summary") or {}).get("bottleneck")) for r in runs if r.get("run_id") != run_id]
    return list(reversed([v for v in found if isinstance(v, dict) and v.get("class")][:limit]))


# ---- Private API
def _table(run: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The profile's per-iteration table if it can be resampled, else (None, why not)."""
    if not run.get("ops"):
        return None, "no op profile"
    table = (run.get("profile") or {}).get("per_iteration")
    if not isinstance(table, dict):
        return None, ("the profile kept no per-iteration op times (recorded by engines from this version on; "
                      "analyse the configuration again)")
    names, rows = table.get("ops"), table.get("times_s")
    if not isinstance(names, list) or not isinstance(rows, list) or not names:
        return None, "the profile's per-iteration table is empty"
    if any(not isinstance(row, list) or len(row) != len(names) or any(_num(x) is None for x in row) for row in rows):
        return None, "the profile's per-iteration table is malformed (rows do not match its op names)"
    walls = table.get("wall_s")
    if walls is not None and (not isinstance(walls, list) or len(walls) != len(rows)
                              or any(_num(x) is None for x in walls)):
        table = {**table, "wall_s": None}
    if len(rows) < MIN_ROWS:
        return None, (f"only {len(rows)} profiled iteration(s); at least {MIN_ROWS} are needed to resample "
                      "(--profile-iterations N)")
    return table, ""


def _settled(agree: int, drawn: int) -> bool:
    """Whether the 95% Wilson interval of agree/drawn lies wholly above or below STABLE: more draws would not
    change which side of the rule the verdict falls on."""
    p, z2 = agree / drawn, Z95 * Z95
    centre = (p + z2 / (2 * drawn)) / (1 + z2 / drawn)
    half = Z95 * math.sqrt(p * (1 - p) / drawn + z2 / (4 * drawn * drawn)) / (1 + z2 / drawn)
    return centre - half > STABLE or centre + half < STABLE


def _retimed(op: dict[str, Any], seconds: float) -> dict[str, Any]:
    flops, moved = _num(op.get("flops")), _num(op.get("bytes"))
    return {**op, "time_s": seconds,
            "achieved_flops_s": flops / seconds if flops is not None and seconds > 0 else None,
            "achieved_bytes_s": moved / seconds if moved is not None and seconds > 0 else None}


def _unstable(verdict: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """A decided class that too few resamples give: inconclusive, naming the classes the resamples split between
    (ties left out of the names, their share said) and what would settle it."""
    shown = verdict["class"]
    decided = [(name, share) for name, share in block["classes"].items() if name != bottleneck.INCONCLUSIVE]
    named = decided[:2] if decided else [(shown, block["share"])]
    split = ", ".join(f"{name} in {share:.0%}" + (" of resamples" if i == 0 else "")
                      for i, (name, share) in enumerate(named))
    ties = block["classes"].get(bottleneck.INCONCLUSIVE, 0.0)
    if ties:
        split += f" (a tie within the noise band in {ties:.0%})"
    why = f"{split}: the profile cannot separate them"
    lead = named[0][0]
    rival = next((name for name, _ in decided if name != shown), None)
    evidence = {**verdict["evidence"], "best": f"{shown} {verdict['scores'].get(shown, 0.0):.2f}",
                "unstable": why, "resampled_classes": block["classes"]}
    return {**verdict, "class": bottleneck.INCONCLUSIVE, "confidence": round(float(named[0][1]), 2),
            "evidence": evidence, "secondary": rival if lead == shown else lead,
            "recommendation": f"{SETTLE[0].upper()}{SETTLE[1:]}.",
            "sentence": f"Inconclusive: {why}; {SETTLE}."}


def _class_of(verdict: Any) -> str | None:
    if isinstance(verdict, dict):
        return str(verdict["class"]) if verdict.get("class") else None
    return str(verdict) if verdict else None


def _order(name: str) -> int:
    return bottleneck.CLASSES.index(name) if name in bottleneck.CLASSES else len(bottleneck.CLASSES)


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)
