"""The bottleneck verdict: one primary class per analysed run, with the numbers that decided it.

Why a score per class rather than a decision tree: each explanation (compute, memory bandwidth, cache, host
overhead, input pipeline, transfers, memory capacity, throttling) is judged on its own evidence, so two that fit
equally well are seen to tie and the run is called `inconclusive` instead of being forced into one. Two rules
are hard, because they are the mistakes the roofline invites: a working set that fits in the last-level cache is
never called memory-bandwidth-bound, and thousands of tiny ops (dispatch-bound) are never called compute.
A data-parallel run adds communication, straggler and data-at-scale, scored from its step breakdown by
console.analysis.scaling_verdict (no profile needed).

Input: the run dict of docs/architecture.md ("spec", "summary", "ops", "profile", "machine", "counters"), plain
data. Pure and deterministic: the same run gives the same verdict. Qt-free, numpy-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from console.analysis import roofline, scaling_verdict
from console.analysis.bottleneck_text import INCONCLUSIVE, LEVERS, NO_CARD_LEVER, decided_sentence
from console.analysis.storage import storage_verdict

CLASSES = ("compute", "memory-bandwidth", "cache-resident", "host-overhead", "input-pipeline",
           "host-device-transfer", "memory-capacity", "throttling", *scaling_verdict.CLASSES)
PROFILE_CLASSES = ("compute", "memory-bandwidth", "cache-resident", "host-overhead", "host-device-transfer")
MIN_SCORE = 0.3  # below this nothing explains the run
SECONDARY_MIN = 0.2  # a runner-up below this is not worth naming
DEFAULT_CALL_FLOOR_S = 10e-6  # per-call floor when the card has none for the engine
TINY_CALL_FACTOR = 3.0  # an op type whose time per call is within this many call floors is dispatch-bound
NO_ROOF = 0.8  # a profile class scored without the card's roof to hold it against counts for less
ANY_LLC_HOLDS, NO_LLC_HOLDS = 1 << 20, 128 << 20  # every LLC holds 1 MiB; 128 MiB overflows all but a few
# Without a card's roofs, the lowest ridge (peak FLOP/s ÷ memory bandwidth) any CPU or GPU has: a laptop CPU sits
# near 5–10 FLOP/byte, a datacentre GPU at 50–300. An op below it is memory-bound on every machine, GEMM or not.
MIN_RIDGE = 1.0
MATTERS = 0.05  # ops below this share of time do not decide the working set
GEMM_WORDS = ("addmm", "aten::mm", "bmm", "matmul", "linear", "conv", "gemm", "einsum", "baddbmm", "attention")
COPY_WORDS = ("memcpy", "aten::copy_", "aten::_to_copy", "aten::to")
GPU_COPY_ONLY = ("memcpy",)  # ORT's MemcpyToHost/FromHost and CUDA runtime copies exist only with a device
THROTTLE_REASONS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # power cap, hw slowdown, thermal, power brake (nvml bits)
WAIT_KEYS = ("wait_fraction", "data_wait_fraction", "input_wait_fraction")


# ---- Public API
def diagnose(run: dict[str, Any]) -> dict[str, Any]:
    """VERDICT = {class, confidence, evidence, recommendation, secondary, scores, sentence} for one run."""
    facts = _facts(run)
    scores = {name: 0.0 for name in CLASSES}
    evidence: dict[str, dict[str, Any]] = {name: {} for name in CLASSES}
    _score_profile(facts, scores, evidence)
    _score_scenario(run, scores, evidence)
    _score_ddp(run, scores, evidence)
    _score_telemetry(run, facts, scores, evidence)
    _apply_counters(run.get("counters"), facts, scores, evidence)
    _apply_never_rules(facts, scores, evidence)
    _weigh_conditions(scores, max(_wait_fraction(run) or 0.0, scaling_verdict.outside_compute(run)))
    scores = {k: round(_clamp(v), 3) for k, v in scores.items()}
    return _decide(run, facts, scores, evidence)


def noise_band(summary: dict[str, Any] | None) -> float:
    """How close two scores may be and still be a tie: 0.1, widened by the run's own variation (2 × CV, ≤ 0.25)."""
    cv = (summary or {}).get("cv")
    cv = float(cv) if isinstance(cv, (int, float)) and math.isfinite(cv) else 0.0
    return round(min(0.25, max(0.1, 2.0 * cv)), 3)


# ---- Private API
@dataclass
class _Facts:
    engine: str
    gpu: bool
    iterations: int
    wall_s: float | None
    op_time_s: float
    roof: dict[str, Any] | None
    floor_s: float
    floor_known: bool
    ops: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    working_set: float | None = None
    llc: int | None = None
    tiny_share: float = 0.0
    gap: float | None = None
    calls_per_iteration: float = 0.0
    card: dict[str, Any] | None = None
    target: str = "cpu"


def _facts(run: dict[str, Any]) -> _Facts:
    spec, profile = run.get("spec") or {}, run.get("profile") or {}
    card = run.get("machine")
    engine = str(profile.get("engine") or spec.get("engine") or "torch")
    target = str(spec.get("target") or (card or {}).get("target") or "cpu")
    ops = [dict(op) for op in run.get("ops") or []]
    op_time = _num(profile.get("op_time_s")) or _total(ops, "time_s")
    roof, notes = None, []
    if card:
        try:
            roof = roofline.roofs(card, str(spec.get("precision") or "fp32"))
            ops = roofline.annotate(ops, card, str(spec.get("precision") or "fp32"))
        except roofline.RooflineError as error:
            notes.append(str(error))
    else:
        notes.append("no machine card: decided from timings alone (run `labconsole machine` for roofs)")
    floor_us = _num(((card or {}).get("call_floor_us") or {}).get(engine))
    facts = _Facts(engine=engine, gpu=not target.startswith("cpu"), iterations=int(profile.get("iterations") or 1),
                   wall_s=_num(profile.get("wall_s")), op_time_s=op_time or 0.0, roof=roof,
                   floor_s=floor_us * 1e-6 if floor_us else DEFAULT_CALL_FLOOR_S, floor_known=bool(floor_us),
                   ops=ops, notes=notes, llc=roofline.llc_bytes(card) if card else None, card=card, target=target)
    for op in ops:
        op["share"] = _share(op, facts.op_time_s)
        calls = max(1, int(op.get("calls") or 1))
        op["_per_call_s"] = (_num(op.get("time_s")) or 0.0) / calls
        op["_per_call_bytes"] = (_num(op.get("bytes")) or 0.0) / calls
        op["_tiny"] = op["_per_call_s"] <= TINY_CALL_FACTOR * facts.floor_s
        op["_gemm"] = any(word in str(op.get("op", "")).lower() for word in GEMM_WORDS)
    facts.tiny_share = sum(op["share"] for op in ops if op["_tiny"])
    facts.calls_per_iteration = sum(int(op.get("calls") or 0) for op in ops) / max(1, facts.iterations)
    if facts.wall_s and facts.op_time_s:
        facts.gap = max(0.0, 1.0 - facts.op_time_s / facts.wall_s)
    return facts


def _score_profile(f: _Facts, scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    """compute, memory-bandwidth, cache-resident, host-overhead and host-device-transfer, from the op table."""
    if not f.ops:
        f.notes.append("no op profile: compute, memory and overhead classes cannot be scored")
        return
    copies = [op for op in f.ops if _is_copy(op, f.gpu)]
    rest = [op for op in f.ops if op not in copies and not op["_tiny"]]
    compute_ops = [op for op in rest if _compute_bound(op, f.roof)]
    memory_ops = [op for op in rest if op not in compute_ops and (_num(op.get("bytes")) or 0) > 0]
    compute_share = sum(op["share"] for op in compute_ops)
    memory_share = sum(op["share"] for op in memory_ops)

    # compute: GEMM-heavy, above the ridge, a real fraction of the peak
    achieved = _ratio(compute_ops, "flops", "time_s")  # FLOP/s over the compute-bound ops
    if f.roof and achieved:
        efficiency = achieved / f.roof["peak_flops"]
        factor = _clamp(efficiency / 0.2)
        evidence["compute"].update(achieved_gflop_s=_r(achieved / 1e9), peak_gflop_s=_r(f.roof["peak_flops"] / 1e9),
                                   flops_efficiency=_r(efficiency), ridge_flop_per_byte=_r(f.roof["ridge"]))
    else:
        factor = NO_ROOF  # GEMMs without a roof to hold them against
    scores["compute"] = compute_share * factor
    evidence["compute"]["compute_bound_share"] = _r(compute_share)
    intensity = _ratio(compute_ops, "flops", "bytes")  # FLOP per byte moved
    if intensity is not None:
        evidence["compute"]["intensity_flop_per_byte"] = _r(intensity)

    # memory-bandwidth vs cache-resident: low intensity, then where the working set lives
    deciding = [op for op in memory_ops if op["share"] >= MATTERS] or memory_ops
    f.working_set = max((op["_per_call_bytes"] for op in deciding), default=None) or None
    bytes_s = _ratio(memory_ops, "bytes", "time_s")
    if f.roof and bytes_s:
        utilisation = bytes_s / f.roof["bandwidth_bytes_s"]
        bandwidth_factor = _clamp(utilisation / 0.5)
    else:
        utilisation, bandwidth_factor = None, NO_ROOF
    beyond = _beyond_cache(f.working_set, f.llc)
    scores["memory-bandwidth"] = memory_share * beyond * bandwidth_factor
    scores["cache-resident"] = memory_share * (1.0 - beyond) * (1.0 if f.roof else NO_ROOF)
    for name in ("memory-bandwidth", "cache-resident"):
        evidence[name].update(low_intensity_share=_r(memory_share), working_set_mb=_mb(f.working_set),
                              llc_mb=_mb(f.llc))
        if bytes_s:
            evidence[name]["achieved_gb_s"] = _r(bytes_s / 1e9)
        if f.roof:
            evidence[name]["bandwidth_gb_s"] = _r(f.roof["bandwidth_bytes_s"] / 1e9)
        if utilisation is not None:
            evidence[name]["bandwidth_utilisation"] = _r(utilisation)

    # host overhead: op time per call near the engine's call floor, or wall time far above op time
    gap_score = _clamp((f.gap - 0.25) / 0.35) if f.gap is not None else 0.0
    scores["host-overhead"] = max(f.tiny_share, gap_score)
    evidence["host-overhead"].update(
        tiny_op_share=_r(f.tiny_share), calls_per_iteration=_r(f.calls_per_iteration),
        time_per_call_us=_r(1e6 * f.op_time_s / max(1, sum(int(op.get("calls") or 0) for op in f.ops))),
        call_floor_us=_r(f.floor_s * 1e6) if f.floor_known else f"{_r(f.floor_s * 1e6)} (default: no card floor)")
    if f.gap is not None:
        evidence["host-overhead"]["time_outside_ops"] = _r(f.gap)

    # host-device transfers (device targets only: a CPU copy is memory traffic, not a transfer)
    if f.gpu:
        copy_share = sum(op["share"] for op in copies)
        scores["host-device-transfer"] = _clamp((copy_share - 0.1) / 0.3)
        evidence["host-device-transfer"]["copy_share"] = _r(copy_share)
        evidence["host-device-transfer"].update(_transfer_link(f.card, f.target))


def _transfer_link(card: dict[str, Any] | None, target: str) -> dict[str, Any]:
    """The link the run's host→device copies cross and its measured ceiling, from the card's bandwidth matrix
    (card["links"]: the pinned host→device entry of the run's GPU); {} when the card has none for that GPU."""
    from console.analysis.whatif import link_entry

    entry = link_entry(card or {}, "h2d", "pinned", target)
    if entry is None:
        return {}
    found = {"link": f"{entry.get('link_label') or 'the link'} to {entry.get('device')}",
             "link_measured_gb_s": _r(entry["median_gbs"]), "link_method": entry.get("method") or ""}
    if _num(entry.get("theoretical_gbs")):
        found["link_theoretical_gb_s"] = _r(entry["theoretical_gbs"])
    pageable = link_entry(card or {}, "h2d", "pageable", target)
    if pageable is not None:
        found["link_pageable_gb_s"] = _r(pageable["median_gbs"])
    return found


def _score_scenario(run: dict[str, Any], scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    """input-pipeline: the input-pipeline scenario measured how long the model waited for data."""
    block = (run.get("summary") or {}).get("scenario") or {}
    wait = _wait_fraction(run)
    if wait is None:
        return
    scores["input-pipeline"] = _clamp((wait - 0.1) / 0.3)
    evidence["input-pipeline"]["wait_fraction"] = _r(wait)
    for key in ("samples_per_s", "loader_workers", "disk_read_mb_s", "iops", "iowait", "cache_state"):
        if key in block:
            evidence["input-pipeline"][key] = block[key]
    storage = (run.get("machine") or {}).get("storage_read_gbs")
    if _num(storage):
        evidence["input-pipeline"]["storage_read_gb_s"] = _r(storage)
    named = storage_verdict(run.get("summary") or {}, run.get("machine"))  # which device, its ceiling, the lever
    if named is not None:
        evidence["input-pipeline"].update(device=named["device"], storage_lever=named["lever"],
                                          of_ceiling=named["of_ceiling"], storage=named["sentence"])


def _score_ddp(run: dict[str, Any], scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    """communication, straggler, data-at-scale: a data-parallel run's breakdown (console.analysis.scaling_verdict).
    With two ranks or more the data wait is judged per rank as data-at-scale, not again as the input pipeline."""
    found, why = scaling_verdict.score(run)
    if not any(why.values()):
        return
    for name in scaling_verdict.CLASSES:
        scores[name] = found[name]
        evidence[name].update(why[name])
    if scores["input-pipeline"] > 0:
        evidence["data-at-scale"].update({k: v for k, v in evidence["input-pipeline"].items()
                                          if k in ("device", "storage_lever", "of_ceiling", "storage")})
        scores["input-pipeline"] = 0.0
        evidence["input-pipeline"]["ruled_out"] = "a data-parallel run: each rank's data wait is judged as data-at-scale"


def _score_telemetry(run: dict[str, Any], f: _Facts, scores: dict[str, float],
                     evidence: dict[str, dict[str, Any]]) -> None:
    """memory-capacity (swap, major faults, memory near the total) and throttling (reasons, clock drops)."""
    telemetry = (run.get("summary") or {}).get("telemetry") or {}
    capacity = 0.0
    swap = telemetry.get("swap.used") or {}
    if _num(swap.get("max")) is not None and _num(swap.get("min")) is not None and swap["max"] - swap["min"] > 0.05:
        capacity = max(capacity, 1.0)
        evidence["memory-capacity"]["swap_growth_gib"] = _r(swap["max"] - swap["min"])
    faults = _num((telemetry.get("worker.faults.major") or {}).get("mean"))
    if faults:
        capacity = max(capacity, _clamp(faults / 200.0))
        evidence["memory-capacity"]["major_faults_per_s"] = _r(faults)
    for used_key in [k for k in telemetry if k == "mem.used" or k.endswith(".mem.used")]:
        total = _num((telemetry.get(used_key.replace("used", "total")) or {}).get("max"))
        used = _num((telemetry.get(used_key) or {}).get("max"))
        if total and used is not None:
            ratio = used / total
            capacity = max(capacity, _clamp((ratio - 0.9) / 0.08))
            evidence["memory-capacity"][f"{used_key}_fraction"] = _r(ratio)
    scores["memory-capacity"] = capacity

    throttle = 0.0
    for key, entry in telemetry.items():
        if key.endswith(".throttle") and int(entry.get("bits") or 0) & THROTTLE_REASONS:
            throttle = max(throttle, 0.9)
            evidence["throttling"][f"{key}_bits"] = hex(int(entry["bits"]))
        elif key == "cpu.freq" or (key.startswith("gpu") and key.endswith(".clock.sm")):
            low, high = _num(entry.get("min")), _num(entry.get("max"))
            if low and high:
                drop = 1.0 - low / high
                throttle = max(throttle, _clamp((drop - 0.1) / 0.2))
                evidence["throttling"][f"{key}_drop"] = _r(drop)
    scores["throttling"] = throttle


def _apply_counters(counters: dict[str, Any] | None, f: _Facts, scores: dict[str, float],
                    evidence: dict[str, dict[str, Any]]) -> None:
    """Hardware counters nudge the timing-based scores (±0.1); absent counters are said, never guessed."""
    if not counters or not counters.get("available"):
        reason = (counters or {}).get("reason") or "no counter data with this run"
        f.notes.append(f"hardware counters not available ({reason}): decided from timings and roofs")
        return
    topdown = counters.get("topdown") or {}
    memory_bound = _num(topdown.get("memory_bound"))
    if memory_bound is not None:
        nudge = 0.1 if memory_bound >= 0.3 else (-0.1 if memory_bound < 0.1 else 0.0)
        for name in ("memory-bandwidth", "cache-resident"):
            if scores[name] > 0:
                scores[name] += nudge
                evidence[name]["topdown_memory_bound"] = _r(memory_bound)
    miss = _num(counters.get("llc_miss_rate"))
    if miss is not None:
        if miss >= 0.3:
            scores["memory-bandwidth"] += 0.1 if scores["memory-bandwidth"] > 0 else 0.0
            scores["cache-resident"] -= 0.1
        elif miss <= 0.05:
            scores["cache-resident"] += 0.1 if scores["cache-resident"] > 0 else 0.0
            scores["memory-bandwidth"] -= 0.1
        evidence["memory-bandwidth"]["llc_miss_rate"] = evidence["cache-resident"]["llc_miss_rate"] = _r(miss)
    ipc, retiring = _num(counters.get("ipc")), _num(topdown.get("retiring"))
    if ipc is not None and scores["compute"] > 0:
        evidence["compute"]["ipc"] = _r(ipc)
        if ipc >= 2.0 or (retiring is not None and retiring >= 0.5):
            scores["compute"] += 0.1
        elif ipc < 1.0 and memory_bound is not None and memory_bound >= 0.3:
            scores["compute"] -= 0.1  # few instructions a cycle, stalled on memory: not arithmetic-bound
    frontend = _num(topdown.get("frontend_bound"))
    if frontend is not None and frontend >= 0.3 and scores["host-overhead"] > 0:
        scores["host-overhead"] += 0.1
        evidence["host-overhead"]["topdown_frontend_bound"] = _r(frontend)


def _apply_never_rules(f: _Facts, scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    """The two verdicts that must never be given: cache-sized data as memory-bound, tiny ops as compute."""
    if f.working_set is not None and f.llc is not None and f.working_set <= f.llc:
        scores["memory-bandwidth"] = 0.0
        evidence["memory-bandwidth"]["ruled_out"] = "the working set fits in the last-level cache"
    if f.tiny_share >= 0.5 or (f.gap is not None and f.gap >= 0.6):
        scores["compute"] = 0.0
        evidence["compute"]["ruled_out"] = "most time goes to tiny ops or outside ops (dispatch, not arithmetic)"


def _weigh_conditions(scores: dict[str, float], wait: float | None) -> None:
    """Run-wide conditions outrank what the op profile explains: time spent waiting for data is not op time
    (profile scores shrink by the wait), and swapping or throttled clocks slow every op (profile scores shrink by
    0.4 × the condition), so the profile's class stays visible as the secondary."""
    wait = _clamp(wait or 0.0)
    condition = max(scores["memory-capacity"], scores["throttling"])
    for name in PROFILE_CLASSES:
        scores[name] *= (1.0 - wait) * (1.0 - 0.4 * condition)


def _decide(run: dict[str, Any], f: _Facts, scores: dict[str, float],
            evidence: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], CLASSES.index(kv[0])))
    (best, top), (runner, second) = ranked[0], ranked[1]
    noise = noise_band(run.get("summary"))
    common = {"noise_band": noise, "ops_profiled": len(f.ops)}
    if f.notes:
        common["notes"] = "; ".join(f.notes)
    if top < MIN_SCORE or top - second < noise:
        why = (f"no explanation scores {MIN_SCORE} or more (best {best} {top:.2f})" if top < MIN_SCORE else
               f"{best} ({top:.2f}) and {runner} ({second:.2f}) are within the noise band ({noise:.2f})")
        confidence = 1.0 - top if top < MIN_SCORE else 1.0 - 0.5 * (top - second) / noise
        merged = {**common, "best": f"{best} {top:.2f}", "runner_up": f"{runner} {second:.2f}"}
        lever = LEVERS[INCONCLUSIVE]
        if not run.get("machine"):  # the missing roofs and cache size are the first thing to fix, not the model
            merged["missing"] = "machine card"
            why, lever = f"no machine card: {why}", NO_CARD_LEVER
        return {"class": INCONCLUSIVE, "confidence": round(_clamp(confidence), 2), "evidence": merged,
                "recommendation": lever, "secondary": best if top >= MIN_SCORE else None,
                "scores": scores, "sentence": f"Inconclusive: {why}; {lever}."}
    confidence = top * _clamp(0.5 + (top - second))
    secondary = runner if second >= SECONDARY_MIN else None
    decided = {**evidence[best], **common, "score": top}
    lever = evidence[best].get("lever") or LEVERS[best]  # a lever written from the run's own figures, if any
    return {"class": best, "confidence": round(confidence, 2), "evidence": decided,
            "recommendation": f"Lever: {lever}.", "secondary": secondary, "scores": scores,
            "sentence": decided_sentence(best, evidence[best], secondary, f"{confidence:.0%} confident")}


def _beyond_cache(working_set: float | None, llc: int | None) -> float:
    """1 when the working set overflows the last-level cache, 0 when it fits, 0.5 when that cannot be told.

    Without the card's cache size only the extremes are sure: ≤ 1 MiB fits every LLC, ≥ 128 MiB overflows all
    but the very largest server caches.
    """
    if working_set is None:
        return 0.5
    if llc is None:
        return 0.0 if working_set <= ANY_LLC_HOLDS else 1.0 if working_set >= NO_LLC_HOLDS else 0.5
    return 1.0 if working_set > llc else 0.0


def _wait_fraction(run: dict[str, Any]) -> float | None:
    block = (run.get("summary") or {}).get("scenario") or {}
    return next((_num(block.get(key)) for key in WAIT_KEYS if _num(block.get(key)) is not None), None)


def _compute_bound(op: dict[str, Any], roof: dict[str, Any] | None) -> bool:
    if op.get("bound") in ("compute", "memory"):
        return op["bound"] == "compute"
    intensity = _num(op.get("intensity"))
    if intensity is None and (_num(op.get("flops")) or 0) > 0 and (_num(op.get("bytes")) or 0) > 0:
        intensity = op["flops"] / op["bytes"]
    if roof and intensity:
        return intensity >= roof["ridge"]
    if intensity is not None and intensity < MIN_RIDGE:
        return False  # no roof, but below every machine's ridge: a GEMM this thin waits on memory (batch-1 GEMV)
    return bool(op["_gemm"])  # no roof: GEMMs and convolutions are the arithmetic


def _is_copy(op: dict[str, Any], gpu: bool) -> bool:
    name = str(op.get("op", "")).lower()
    words = COPY_WORDS if gpu else ()
    return any(word in name for word in words) or (gpu and any(word in name for word in GPU_COPY_ONLY))


def _total(ops: list[dict[str, Any]], key: str) -> float:
    return sum(_num(op.get(key)) or 0.0 for op in ops)


def _ratio(ops: list[dict[str, Any]], top: str, bottom: str) -> float | None:
    """Σ top / Σ bottom over the ops (a rate or an intensity); None, not 0, when either sum is nothing."""
    over, under = _total(ops, top), _total(ops, bottom)
    return over / under if over and under else None


def _share(op: dict[str, Any], op_time_s: float) -> float:
    share = _num(op.get("share"))
    if share is not None:
        return share
    return (_num(op.get("time_s")) or 0.0) / op_time_s if op_time_s else 0.0


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def _r(x: Any) -> Any:
    return round(float(x), 3) if isinstance(x, (int, float)) else x


def _mb(x: float | None) -> float | None:
    return None if x is None else round(x / 1e6, 3)
