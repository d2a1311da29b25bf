"""What a bottleneck verdict says: each class's label and lever, and the one-line sentence with its figures.

Split from `console.analysis.bottleneck` (which scores and decides) so the words can be read and changed
apart from the scoring. Pure, Qt-free.
"""

from __future__ import annotations

from typing import Any

INCONCLUSIVE = "inconclusive"

INCONCLUSIVE = "inconclusive"

LABELS = {
    "compute": "compute", "memory-bandwidth": "memory bandwidth", "cache-resident": "cache-resident work",
    "host-overhead": "host/framework overhead", "input-pipeline": "the input pipeline",
    "host-device-transfer": "host↔device transfers", "memory-capacity": "memory capacity",
    "throttling": "clock throttling",
    "communication": "exposed gradient communication", "straggler": "a straggling rank",
    "data-at-scale": "data loading at scale",
}
LEVERS = {
    "compute": "lower precision (bf16, or int8 where the target has fast kernels), more threads up to the "
               "physical cores, or a device with a higher FLOP/s roof",
    "memory-bandwidth": "fewer passes over memory: fuse the elementwise ops (torch.compile, ONNX Runtime graph "
                        "optimisation) and halve the bytes with bf16/int8; more threads stop helping once the "
                        "memory roof is reached",
    "cache-resident": "keep the working set in cache (size the batch so it stays under the last-level cache) and "
                      "fuse ops (torch.compile) to cut dispatches; more threads still scale",
    "host-overhead": "a larger batch to amortise each call, fusion or torch.compile (CUDA graphs on a GPU) to "
                     "cut the number of tiny ops, and fewer threads for tiny ops",
    "input-pipeline": "more loader workers, prefetching, decoded data cached, or faster storage",
    "host-device-transfer": "pinned memory with non_blocking copies, keeping tensors on the device, and fewer, "
                            "larger transfers",
    "memory-capacity": "a smaller batch, bf16/int8 to shrink the footprint, or more memory",
    "throttling": "cooling and power limits (the clocks dropped during the run); rerun once the device is cool",
    "communication": "overlap or shrink the all-reduce: --bucket-mb (sweep it), --grad-accum K to all-reduce less "
                     "often, DDP's bf16 compression hook, or a faster link",
    "straggler": "the slow rank's machine (cores shared with other work, thermal or power throttling, a slower "
                 "device), or fewer ranks placed there",
    "data-at-scale": "more loader workers (--loader-workers), prefetching, or faster storage: each rank reads its "
                     "own shard",
    INCONCLUSIVE: "intervene to decide: change the batch and the threads and compare (labconsole sweep), or rerun "
                  "on a quiet machine",
}
NO_CARD_LEVER = ("measure this machine's card for its roofs and cache size (`labconsole machine`; `labconsole analyze` "
                 "and the window's Analyze measure it first when none is stored), then analyse again")
SHORT_LEVERS = {  # the lever as the one-line sentence names it
    "compute": "bf16/int8 or more threads", "memory-bandwidth": "fusion (torch.compile) and fewer bytes (bf16/int8)",
    "cache-resident": "fusion and a batch that stays in cache", "host-overhead": "a larger batch or torch.compile",
    "input-pipeline": "more loader workers or faster storage", "host-device-transfer": "pinned memory",
    "memory-capacity": "a smaller batch or bf16/int8", "throttling": "cooling and power limits",
    "communication": "bucket size, --grad-accum or a faster link", "straggler": "the slow rank's machine",
    "data-at-scale": "more loader workers or faster storage",
}


def _transfer_why(e: dict[str, Any]) -> str:
    """"copies take 60% of op time; PCIe Gen4 x16 to cuda:0: measured 24.1 GB/s pinned of 31.5 GB/s"."""
    text = f"copies take {_pct(e['copy_share'])} of op time"
    if e.get("link") and e.get("link_measured_gb_s") is not None:
        of = (f" of {e['link_theoretical_gb_s']:.3g} GB/s" if e.get("link_theoretical_gb_s") is not None
              else " (its theoretical rate is not known)")
        text += f"; {e['link']}: measured {e['link_measured_gb_s']:.3g} GB/s pinned{of}"
        if e.get("link_pageable_gb_s") is not None:
            text += f", {e['link_pageable_gb_s']:.3g} GB/s pageable"
    return text


def decided_sentence(best: str, evidence: dict[str, Any], secondary: str | None, how: str) -> str:
    """The one-line sentence of a decided verdict, `how` sure in the brackets ("92% of 200 resamples agree":
    console.analysis.verdict_stability, whose share is the confidence shown)."""
    then = f", then {LABELS[secondary]}" if secondary else ""
    try:
        why = _WHY[best](evidence)
    except (KeyError, TypeError):  # a figure the template needs is missing: list what there is
        why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in list(evidence.items())[:3])
    return f"Bound by {LABELS[best]} ({how}{then}): {why}; lever: {SHORT_LEVERS[best]}."


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _memory_why(e: dict[str, Any]) -> str:
    llc = f"a {e['llc_mb']:.3g} MB last-level cache" if e.get("llc_mb") else "a last-level cache of unknown size"
    where = f"{e['working_set_mb']:.3g} MB per call against {llc}"
    rate = f" at {e['achieved_gb_s']:.3g} GB/s" if "achieved_gb_s" in e else ""
    of = f" ({_pct(e['bandwidth_utilisation'])} of the measured {e['bandwidth_gb_s']:.3g} GB/s)" \
        if "bandwidth_utilisation" in e else ""
    return f"low-intensity ops take {_pct(e['low_intensity_share'])} of op time, {where}{rate}{of}"


_WHY = {
    "compute": lambda e: (f"GEMM-like ops take {_pct(e['compute_bound_share'])} of op time at "
                          f"{e['achieved_gflop_s']:.3g} GFLOP/s, {_pct(e['flops_efficiency'])} of the measured "
                          f"{e['peak_gflop_s']:.3g} GFLOP/s peak"),
    "memory-bandwidth": _memory_why,
    "cache-resident": _memory_why,
    "host-overhead": lambda e: (f"{e['calls_per_iteration']:.0f} op calls per iteration at {e['time_per_call_us']:.3g} µs "
                                f"each (call floor {e['call_floor_us']} µs), "
                                f"{_pct(e.get('time_outside_ops', 0.0))} of wall time outside ops"),
    "input-pipeline": lambda e: (f"the model waits for data {_pct(e['wait_fraction'])} of the time"
                                 + (f" from {e['device']}" + (f" at {_pct(e['of_ceiling'])} of its measured ceiling"
                                    if e.get("of_ceiling") is not None else "")
                                    + f" (storage lever: {e['storage_lever'].replace('-', ' ')})"
                                    if e.get("device") else "")),
    "host-device-transfer": lambda e: _transfer_why(e),
    "memory-capacity": lambda e: "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in e.items()
                                           if k in ("swap_growth_gib", "major_faults_per_s") or k.endswith("fraction")),
    "throttling": lambda e: "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in e.items()
                                      if k.endswith(("_bits", "_drop"))),
    "communication": lambda e: (f"{e['exposed_ms']:.3g} ms of each {e['step_ms']:.3g} ms step is all-reduce not "
                                f"overlapped by backward ({_pct(e['exposed_share'])})"
                                + (f", {e['overlap_pct']:.0f}% overlapped" if e.get("overlap_pct") is not None else "")
                                + (f"; all-reduce measured {e['measured_allreduce_ms']:.3g} ms against "
                                   f"{e['predicted_allreduce_ms']:.3g} ms predicted from {e['busbw_source']}"
                                   if e.get("predicted_allreduce_ms") is not None
                                   and e.get("measured_allreduce_ms") is not None else "")),
    "straggler": lambda e: (f"rank {e['rank']} on {e.get('host') or 'its host'} computes {e['delay_ms']:.3g} ms longer "
                            f"than the others' median, slowest in {_pct(e['slowest_share'])} of steps "
                            f"({_pct(e['straggler_share'])} of the step)"),
    "data-at-scale": lambda e: (f"each rank waits for data {_pct(e['wait_share'])} of the step "
                                f"({e['data_wait_ms']:.3g} ms)"
                                + (f", up from {_pct(e['partner_wait_share'])} at one rank"
                                   if e.get("rising") else "")),
}
