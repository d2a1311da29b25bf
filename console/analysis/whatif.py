"""What-if: project a profiled run onto another machine card, or onto another thread count on this one.

Why per op and per term: a run is not one number to scale. Each op is held back by one roof (compute above the
ridge, memory below it, the cache when its data fits there), so each op's time scales with the ratio of the
roof that binds it; dispatch (tiny ops, time outside ops) scales with the engines' call floors; time waiting for
input scales with storage; host↔device copies with the transfer bandwidth. The projection says which ratio it
applied to what (`method`), and never claims to beat a roof: a scaled op time is floored at what the target's
roof allows for its FLOPs or bytes.

Threads (same card, `threads_from` → `threads_to`): compute and cache-resident ops speed up by the measured
per-thread scaling where the caller or the card gives it (`thread_scaling`), else ideally (× threads_to /
threads_from); memory-bound ops likewise, but capped by the card's measured bandwidth; tiny ops and time outside
ops do not scale with threads (dispatch is serial). Pure functions over plain dicts; Qt-free.
"""

from __future__ import annotations

import math
from typing import Any

from console.analysis import roofline

TINY_CALL_FACTOR = 3.0  # as the verdict: an op within 3 call floors per call is dispatch, not work
DEFAULT_CALL_FLOOR_US = 10.0
WAIT_KEYS = ("wait_fraction", "data_wait_fraction", "input_wait_fraction")
TERMS = ("compute", "memory", "cache", "other", "overhead", "outside_ops", "transfer", "input")


# ---- Public API
def project(ops: list[dict[str, Any]], profile: dict[str, Any], summary: dict[str, Any] | None,
            from_card: dict[str, Any], to_card: dict[str, Any], precision: str = "fp32",
            threads_from: int | None = None, threads_to: int | None = None,
            thread_scaling: dict[str, float] | None = None, gpu: bool | None = None) -> dict[str, Any]:
    """{latency_ms, throughput_per_s, ratio, terms: {term: {from_ms, to_ms, scale, ops}}, method, notes}.

    `ops`/`profile`/`summary` are the run's OP rows, profile event and summary; latency is the summary's
    measured p50 (else mean, else the profile's wall time per iteration), scaled by the projected ÷ profiled
    time per iteration, so the profiler's own overhead cancels out.
    """
    iterations = max(1, int(profile.get("iterations") or 1))
    engine = str(profile.get("engine") or "torch")
    source, target = roofline.roofs(from_card, precision), roofline.roofs(to_card, precision)
    gpu = (from_card.get("target", "cpu") != "cpu") if gpu is None else gpu
    speedup, scaling_text = _thread_speedup(threads_from, threads_to, thread_scaling, to_card)
    floor_from, floor_to = _floor(from_card, engine), _floor(to_card, engine)
    compute_ratio = source["peak_flops"] / target["peak_flops"]
    memory_ratio = source["bandwidth_bytes_s"] / target["bandwidth_bytes_s"]
    llc = source["llc_bytes"]
    terms = {name: {"from_ms": 0.0, "to_ms": 0.0, "scale": None, "ops": []} for name in TERMS}
    notes: list[str] = [n for n in (source.get("note"), target.get("note")) if n]

    for op in roofline.annotate(ops, from_card, precision):
        seconds = (_num(op.get("time_s")) or 0.0) / iterations
        calls = max(1, int(op.get("calls") or 1))
        per_call = (_num(op.get("time_s")) or 0.0) / calls
        flops = (_num(op.get("flops")) or 0.0) / iterations
        moved = (_num(op.get("bytes")) or 0.0) / iterations
        per_call_bytes = (_num(op.get("bytes")) or 0.0) / calls
        name = str(op.get("op", ""))
        if gpu and _is_copy(name):
            term, scale = "transfer", _transfer_ratio(from_card, to_card, notes)
            projected = seconds * scale
        elif per_call <= TINY_CALL_FACTOR * floor_from * 1e-6:
            term, scale = "overhead", floor_to / floor_from
            projected = seconds * scale
        elif op.get("bound") == "compute":
            term, scale = "compute", compute_ratio / speedup["compute"]
            projected = max(seconds * scale, _floor_at_roof(flops / target["peak_flops"], seconds * compute_ratio,
                                                             name, notes))
        elif op.get("bound") == "memory" and llc is not None and per_call_bytes <= llc:
            term, scale = "cache", compute_ratio / speedup["compute"]  # cache bandwidth grows with cores
            projected = seconds * scale
        elif op.get("bound") == "memory":
            term, scale = "memory", memory_ratio / speedup["memory"]
            projected = max(seconds * scale, _floor_at_roof(moved / target["bandwidth_bytes_s"],
                                                             seconds * memory_ratio, name, notes))
        else:
            term, scale = "other", compute_ratio / speedup["compute"]
            projected = seconds * scale
        entry = terms[term]
        entry["from_ms"] += seconds * 1e3
        entry["to_ms"] += projected * 1e3
        entry["scale"] = scale
        entry["ops"].append(name)

    wall = _num(profile.get("wall_s"))
    op_time = _num(profile.get("op_time_s")) or sum(_num(op.get("time_s")) or 0.0 for op in ops)
    outside = max(0.0, (wall or op_time) - op_time) / iterations
    terms["outside_ops"].update(from_ms=outside * 1e3, to_ms=outside * 1e3 * floor_to / floor_from,
                                scale=floor_to / floor_from)
    profiled_ms = sum(t["from_ms"] for t in terms.values())
    projected_ms = sum(t["to_ms"] for t in terms.values())
    if profiled_ms <= 0:
        raise ValueError("the profile has no op time to project: analyse the run again (labconsole analyze)")

    measured = _measured_latency_ms(summary, wall, iterations)
    wait = _wait_fraction(summary)
    storage = _storage_ratio(from_card, to_card, notes) if wait else 1.0
    model_ms = measured * (1.0 - wait)
    input_ms = measured * wait
    latency = model_ms * projected_ms / profiled_ms + input_ms * storage
    terms["input"].update(from_ms=input_ms, to_ms=input_ms * storage, scale=storage)
    ratio = latency / measured
    throughput = _num((summary or {}).get("throughput_per_s"))
    batch = int((summary or {}).get("batch") or 1)
    projected_throughput = throughput / ratio if throughput else batch * 1e3 / latency
    for entry in terms.values():
        entry["from_ms"], entry["to_ms"] = round(entry["from_ms"], 6), round(entry["to_ms"], 6)
    return {"latency_ms": latency, "throughput_per_s": projected_throughput, "ratio": ratio,
            "measured_latency_ms": measured, "terms": {k: v for k, v in terms.items() if v["from_ms"] or v["ops"]},
            "method": _method(from_card, to_card, precision, scaling_text, wait), "notes": notes}


def error(projected: dict[str, Any], measured_latency_ms: float) -> float:
    """Relative error of a projection against the latency measured on the target: (projected − measured) ÷ measured."""
    return (projected["latency_ms"] - measured_latency_ms) / measured_latency_ms


# ---- Private API
def _floor_at_roof(at_roof: float, unthreaded: float, name: str, notes: list[str]) -> float:
    """The fastest the target's roof allows, unless the op already beat that roof: then the roof (measured on a
    busy machine, or with other kernels) is too low to trust, and the op is only held to its unthreaded time."""
    if at_roof <= unthreaded:
        return at_roof
    notes.append(f"{name} ran faster than the card's roof allows: that roof is not used to cap it")
    return unthreaded


def _thread_speedup(threads_from: int | None, threads_to: int | None, measured: dict[str, float] | None,
                    card: dict[str, Any]) -> tuple[dict[str, float], str]:
    if not threads_from or not threads_to or threads_from == threads_to:
        return {"compute": 1.0, "memory": 1.0}, "same threads"
    if measured:
        return ({"compute": float(measured["compute"]), "memory": float(measured.get("memory", measured["compute"]))},
                f"threads {threads_from}→{threads_to}: measured scaling ×{measured['compute']:.3g} compute, "
                f"×{measured.get('memory', measured['compute']):.3g} memory")
    table = card.get("thread_scaling") or {}
    found = {kind: _table_ratio(table.get(kind), threads_from, threads_to) for kind in ("compute", "memory")}
    if found["compute"]:
        found["memory"] = found["memory"] or found["compute"]
        return ({k: float(v) for k, v in found.items()},
                f"threads {threads_from}→{threads_to}: the card's measured per-thread scaling ×{found['compute']:.3g} "
                f"compute, ×{found['memory']:.3g} memory")
    ideal = threads_to / threads_from
    return ({"compute": ideal, "memory": ideal},
            f"threads {threads_from}→{threads_to}: no measured per-thread scaling, so ideal ×{ideal:.3g}, capped by "
            "the card's measured roofs (FLOP/s and bandwidth of the whole machine)")


def _table_ratio(table: dict[str, float] | None, a: int, b: int) -> float | None:
    """{"1": rate, "2": rate} (rates measured at each thread count) → rate(b) ÷ rate(a)."""
    if not table:
        return None
    low, high = _num(table.get(str(a), table.get(a))), _num(table.get(str(b), table.get(b)))
    return high / low if low and high else None


def _floor(card: dict[str, Any], engine: str) -> float:
    return _num((card.get("call_floor_us") or {}).get(engine)) or DEFAULT_CALL_FLOOR_US


def _transfer_ratio(from_card: dict[str, Any], to_card: dict[str, Any], notes: list[str]) -> float:
    # one method on both sides: the bandwidth matrix's link when both cards have it, else both cards' h2d_gbs (a
    # ratio of two different measurements would carry their methods' difference into the projection)
    use_links = all(link_entry(card, "h2d", "pinned") is not None for card in (from_card, to_card))
    (a, a_source), (b, b_source) = (transfer_figure(card, links=use_links) for card in (from_card, to_card))
    if a and b:
        said = f"copies scaled by the pinned host→device ratio: source {a_source}; target {b_source}"
        if said not in notes:
            notes.append(said)
        return a / b
    missing = "host↔device bandwidth missing on a card: transfer time kept as measured"
    if missing not in notes:
        notes.append(missing)
    return 1.0


def transfer_figure(card: dict[str, Any], links: bool = True) -> tuple[float | None, str]:
    """A card's pinned host→device GB/s for its target GPU and where it came from (said in the projection).

    The bandwidth matrix's measured link for that GPU (card["links"], engines/topology/bandwidth.py: nvbandwidth's
    method, against the PCIe link it crosses) when the card has it and `links`; else the card's own
    h2d_gbs.pinned; else None.
    """
    entry = link_entry(card, "h2d", "pinned") if links else None
    if entry is not None:
        via = f"{entry['link_label']} to " if entry.get("link_label") else ""
        return float(entry["median_gbs"]), (f"the measured link {via}{entry.get('device')} "
                                             f"({entry['median_gbs']:.3g} GB/s pinned, bandwidth matrix)")
    value = _num((card.get("h2d_gbs") or {}).get("pinned"))
    if value:
        why = (f"no measured link for {card.get('target', '?')}" if links else
               "h2d_gbs on both cards: a card has no measured link for its GPU")
        return value, f"the card's h2d_gbs.pinned ({value:.3g} GB/s; {why})"
    return None, ""


def link_entry(card: dict[str, Any], kind: str, variant: str, target: str | None = None) -> dict[str, Any] | None:
    """The card's bandwidth-matrix entry of `kind`/`variant` for `target` (default: the card's target GPU),
    measured; None otherwise."""
    target = str(target or card.get("target") or "")
    if not target.startswith("cuda"):
        return None
    target = "cuda:0" if target == "cuda" else target
    for entry in (card.get("links") or {}).get("entries") or []:
        if entry.get("kind") == kind and entry.get("variant") == variant and entry.get("device") == target \
                and _num(entry.get("median_gbs")):
            return entry
    return None


def _storage_ratio(from_card: dict[str, Any], to_card: dict[str, Any], notes: list[str]) -> float:
    a, b = _num(from_card.get("storage_read_gbs")), _num(to_card.get("storage_read_gbs"))
    if a and b:
        return a / b
    notes.append("storage read throughput missing on a card: input wait kept as measured")
    return 1.0


def _measured_latency_ms(summary: dict[str, Any] | None, wall: float | None, iterations: int) -> float:
    block = (summary or {}).get("latency_ms") or {}
    for key in ("p50", "mean"):
        if _num(block.get(key)):
            return float(block[key])
    if wall:
        return 1e3 * wall / iterations
    raise ValueError("no measured latency in the summary and no wall time in the profile: nothing to project")


def _wait_fraction(summary: dict[str, Any] | None) -> float:
    block = (summary or {}).get("scenario") or {}
    wait = next((_num(block.get(k)) for k in WAIT_KEYS if _num(block.get(k)) is not None), 0.0)
    return min(1.0, max(0.0, wait or 0.0))


def _is_copy(name: str) -> bool:
    lowered = name.lower()
    return "memcpy" in lowered or lowered in ("aten::copy_", "aten::_to_copy", "aten::to")


def _method(from_card: dict[str, Any], to_card: dict[str, Any], precision: str, scaling: str, wait: float) -> str:
    where = (f"{from_card.get('host', '?')}/{from_card.get('target', '?')} → "
             f"{to_card.get('host', '?')}/{to_card.get('target', '?')}")
    text = (f"{where}, {precision}: each op's time × the ratio of the roof that binds it on the source card "
            "(compute: peak FLOP/s; memory: measured bandwidth; cache-resident: peak FLOP/s, as cache bandwidth "
            "grows with cores), floored at what the target's roof allows; ops within 3 call floors per call and "
            "time outside ops × the engines' call-floor ratio; copies × the pinned host→device ratio (the card's "
            "measured link to its GPU when it has the bandwidth matrix, else h2d_gbs: the notes say which); "
            f"{scaling}; latency = measured p50 × projected ÷ profiled time per iteration")
    if wait:
        text += f"; input wait ({wait:.0%} of the time) × the storage read ratio"
    return text


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


# ---- Storage: a feed or input-pipeline run onto another device's measured figures
def project_storage(facts: dict[str, Any], to_mb_s: float, to_label: str,
                    from_mb_s: float | None = None, from_label: str = "") -> dict[str, Any]:
    """AU and samples/s of a storage-fed run if its data came from a device that reads `to_mb_s` MB/s.

    `facts` are console.analysis.storage.feed_facts of the run. Per step, with the measured parts: compute = the
    time the model (or emulated accelerator) did not wait for data; bytes = accelerators × batch × sample bytes;
    step = max(compute, bytes ÷ device MB/s) — the device serves every accelerator, the readers are assumed to keep
    up (the projection cannot speed up readers that were the limit: it says so when they were). AU = compute ÷ step.
    `from_mb_s`, the run's own device's measured figure, checks the model on the measured run (its error).
    A projection, never a measurement.
    """
    compute = _num(facts.get("compute_ms"))
    batch = _num(facts.get("batch"))
    # What a sample costs the device: the bytes the run fetched from storage per sample when it read cold (pages,
    # file metadata and read-ahead included), else the sample file's size.
    measured_bytes = _num(facts.get("storage_bytes_per_sample"))
    sample = measured_bytes or _num(facts.get("sample_bytes"))
    per_sample = ("bytes fetched from storage per sample, measured cold" if measured_bytes else
                  "the sample file's size (no cold storage bytes measured)")
    accelerators = _num(facts.get("accelerators")) or 1.0
    missing = [name for name, value in (("compute time per step", compute), ("batch", batch),
                                        ("sample bytes", sample)) if not value]
    if missing:
        raise ValueError(f"the run does not record its {', '.join(missing)}: a storage what-if needs an "
                         "input-pipeline or storage feed run that does (run it again with this version)")
    if not to_mb_s or to_mb_s <= 0:
        raise ValueError(f"the target device's read figure must be > 0 MB/s, got {to_mb_s!r}")
    step_bytes = accelerators * batch * sample

    def model(mb_s: float) -> dict[str, float]:
        io_ms = step_bytes / (mb_s * 1e6) * 1e3
        step = max(compute, io_ms)
        return {"step_ms": step, "io_ms": io_ms, "au_percent": 100.0 * compute / step,
                "samples_per_s": accelerators * batch * 1e3 / step}

    to = model(to_mb_s)
    measured = {"au_percent": _num(facts.get("au_percent")), "samples_per_s": _num(facts.get("samples_per_s")),
                "step_ms": _num(facts.get("step_ms"))}
    if measured["au_percent"] is None and measured["step_ms"]:
        measured["au_percent"] = 100.0 * compute / measured["step_ms"]
    notes = []
    check = None
    if from_mb_s:
        base = model(from_mb_s)
        check = {"device": from_label, "mb_s": from_mb_s, **base}
        if measured["samples_per_s"]:
            check["error"] = (base["samples_per_s"] - measured["samples_per_s"]) / measured["samples_per_s"]
            if abs(check["error"]) > 0.25:
                notes.append(f"at {from_label} ({from_mb_s:.4g} MB/s) the model is off by {check['error']:+.0%} "
                             "against the measured samples/s: MB/s alone does not explain this run (per-request "
                             "latency, readers, decode or the page cache set its rate), so read the projection as "
                             "the device bandwidth's share of the answer, not a forecast")
    lever = facts.get("lever")
    if lever and lever != "faster-device" and to["io_ms"] < compute:
        notes.append(f"the measured run's storage verdict names '{lever.replace('-', ' ')}' as its lever, not the "
                     "device's bandwidth: a faster device alone may not give this projection")
    busy = _num(facts.get("reader_busy"))
    if busy is not None and busy >= 0.8:
        notes.append(f"the readers were busy {busy:.0%} of their time: a faster device alone will not lift them; "
                     "the projection assumes they keep up")
    bound = "compute (the device keeps up)" if to["io_ms"] <= compute else "the device's read rate"
    return {"projection": True, "onto": to_label, "onto_mb_s": to_mb_s, "au_percent": to["au_percent"],
            "samples_per_s": to["samples_per_s"], "step_ms": to["step_ms"], "io_ms_per_step": to["io_ms"],
            "compute_ms_per_step": compute, "bytes_per_step": step_bytes, "accelerators": accelerators,
            "bound_by": bound, "measured": measured, "model_check": check, "notes": notes,
            "method": (f"a projection, not a measurement: step = max(compute {compute:.4g} ms measured, "
                       f"{step_bytes / 1e6:.4g} MB per step ({accelerators:g} × batch {batch:g} × {sample:.4g} B: "
                       f"{per_sample}) ÷ "
                       f"{to_mb_s:.4g} MB/s of {to_label}); AU = compute ÷ step; samples/s = accelerators × batch ÷ "
                       "step; readers assumed to keep up")}
