"""The verdict classes of a data-parallel run: communication, straggler, data-at-scale (issue 23, contract §7).

Why separate from the op-profile classes: a DDP step can be slow for reasons no op table shows — gradients
all-reduced after backward instead of during it, one rank that computes longer than the rest, ranks waiting for
their shards of data. Each is read from the run's own breakdown (engines.ddp.breakdown, stored in
summary.scenario.ddp) as a share of the step, so a run needs no profile to get them. Scores follow the input
pipeline's shape in console.analysis.bottleneck: a share of the step mapped linearly to 0…1 (communication and
straggler from 5% of the step, full at 30%; data from 10%, full at 40%), and a straggler scores only when the
breakdown named it (slowest in ≥ 80% of steps, beyond the others' noise). The evidence carries the figures and a
lever written from them (which busbw, which rank on which host).

`prediction_for(summary, collectives)` gives the predicted all-reduce next to the measured one, from the newest
completed collectives run of the same backend, ranks and placement among those the caller read from the history
(console.collectives.latest: analysis reads no history of its own), else the probe's prediction stored with the
run. Qt-free.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from engines.ddp.predict import allreduce

CLASSES = ("communication", "straggler", "data-at-scale")
COMM_FROM, COMM_FULL = 0.05, 0.30
DATA_FROM, DATA_FULL = 0.10, 0.40
RISING = 0.05  # data wait's share of the step this much above the 1-rank partner's counts as rising

__all__ = ["CLASSES", "ddp_of", "score", "outside_compute", "prediction_for", "collectives_rows"]


# ---- Public API
def ddp_of(run_or_summary: dict[str, Any]) -> dict[str, Any] | None:
    """The run's DDP block (summary.scenario.ddp) with a breakdown, else None. Takes a run or its summary."""
    summary = run_or_summary.get("summary") if "summary" in run_or_summary else run_or_summary
    block = ((summary or {}).get("scenario") or {}).get("ddp")
    if not isinstance(block, dict) or not isinstance(block.get("breakdown"), dict):
        return None
    return block


def score(run: dict[str, Any], prediction: dict[str, Any] | None = None,
          partner: dict[str, Any] | None = None) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """({class: score 0…1}, {class: evidence}) for the three DDP classes; all 0 with empty evidence for a run
    without a DDP block or with one rank (nothing to communicate, nobody to straggle). `prediction` (from
    prediction_for) replaces the one stored with the run; `partner` is the 1-rank run, for data wait rising."""
    scores = {name: 0.0 for name in CLASSES}
    evidence: dict[str, dict[str, Any]] = {name: {} for name in CLASSES}
    ddp = ddp_of(run)
    if ddp is None or int(ddp.get("ranks") or 1) < 2:
        return scores, evidence
    bd = ddp["breakdown"]
    step = _num((bd.get("step_s") or {}).get("mean"))
    if not step:
        return scores, evidence
    parts = bd.get("parts") or {}
    _communication(ddp, bd, step, prediction if prediction is not None else ddp.get("prediction"), scores, evidence)
    _straggler(ddp, bd, step, scores, evidence)
    _data(ddp, parts, step, partner, run, scores, evidence)
    return scores, evidence


def outside_compute(run: dict[str, Any]) -> float:
    """The share of a DDP step spent outside the typical rank's compute (data wait, straggler, exposed
    communication, gradient copy-back): op-profile classes explain only the rest, as they do the input wait. 0 without ranks ≥ 2."""
    ddp = ddp_of(run)
    if ddp is None or int(ddp.get("ranks") or 1) < 2:
        return 0.0
    bd = ddp["breakdown"]
    step = _num((bd.get("step_s") or {}).get("mean"))
    parts = bd.get("parts") or {}
    if not step:
        return 0.0
    outside = sum(_num(parts.get(k)) or 0.0 for k in ("data_wait_s", "straggler_s", "exposed_comm_s", "grad_copy_s"))
    return min(1.0, max(0.0, outside / step))


def collectives_rows(collectives: list[tuple[str, dict[str, Any]]], backend: str, ranks: int,
                     placement: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The all-reduce rows of the newest completed collectives run with this backend, rank count and placement
    among `collectives` ((run_id, result), newest first: console.collectives.latest), and "collectives run <id>";
    (None, "") when none matches."""
    for run_id, result in collectives:
        if (result.get("backend") == backend and int(result.get("ranks") or 0) == ranks
                and (result.get("placement") or "local") == (placement or "local")):
            rows = (result.get("ops") or {}).get("all-reduce")
            if rows:
                return list(rows), f"collectives run {run_id[:8]}"
    return None, ""


def prediction_for(summary: dict[str, Any], collectives: list[tuple[str, dict[str, Any]]] | None
                   ) -> dict[str, Any] | None:
    """The predicted all-reduce beside the measured one: from the newest matching run among `collectives` (as in
    `collectives_rows`) when there is one (same backend, ranks and placement), else the probe's prediction stored
    with the run; None for a summary without a DDP block or without either source."""
    ddp = ddp_of(summary)
    if ddp is None:
        return None
    ranks = int(ddp.get("ranks") or 1)
    measured = (ddp["breakdown"].get("comm") or {}).get("allreduce_s")
    if ranks >= 2 and ddp.get("bucket_bytes") and collectives is not None:
        rows, source = collectives_rows(collectives, str(ddp.get("backend")), ranks, str(ddp.get("placement") or "local"))
        if rows:
            return allreduce(ddp["bucket_bytes"], ranks, rows, source=source, measured_s=measured)
    stored = ddp.get("prediction")
    return dict(stored) if isinstance(stored, dict) else None


# ---- Private API
def _communication(ddp: dict[str, Any], bd: dict[str, Any], step: float, prediction: dict[str, Any] | None,
                   scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    comm = bd.get("comm") or {}
    exposed = _num(comm.get("exposed_s")) or 0.0
    share = exposed / step
    scores["communication"] = _ramp(share, COMM_FROM, COMM_FULL)
    e = evidence["communication"]
    e.update(exposed_ms=_r(exposed * 1e3), exposed_share=_r(share), step_ms=_r(step * 1e3),
             overlap_pct=_r(comm.get("overlap_pct")), allreduce_ms=_ms(comm.get("allreduce_s")),
             bucket_mb=ddp.get("bucket_mb"), buckets=len(ddp.get("bucket_bytes") or []),
             grad_mb=_r((_num(ddp.get("grad_bytes")) or 0.0) / 1e6) if ddp.get("grad_bytes") else None,
             ranks=ddp.get("ranks"), backend=ddp.get("backend"))
    busbw, source = None, None
    if isinstance(prediction, dict):
        e.update(predicted_allreduce_ms=_ms(prediction.get("predicted_s")),
                 measured_allreduce_ms=_ms(prediction.get("measured_s") or comm.get("allreduce_s")),
                 measured_over_predicted=_r(prediction.get("ratio")), busbw_source=prediction.get("busbw_source"))
        rates = [_num(b.get("busbw_gbs")) for b in prediction.get("per_bucket") or []]
        rates = [r for r in rates if r]
        busbw, source = (statistics.median(rates) if rates else None), prediction.get("busbw_source")
        if busbw:
            e["busbw_gbs"] = _r(busbw)
    else:
        e["prediction"] = "not available (no probe in this run and no collectives run of these ranks)"
    e["lever"] = _comm_lever(ddp, comm, busbw, source)


def _comm_lever(ddp: dict[str, Any], comm: dict[str, Any], busbw: float | None, source: str | None) -> str:
    overlap = _num(comm.get("overlap_pct"))
    buckets = len(ddp.get("bucket_bytes") or [])
    bucket_mb = ddp.get("bucket_mb")
    if overlap is not None and overlap < 50 and buckets <= 2:
        bucket = (f"a smaller --bucket-mb (now {bucket_mb}) so all-reduce starts while backward still runs "
                  f"({buckets} bucket(s), {overlap:.0f}% overlapped)")
    else:
        bucket = (f"a larger --bucket-mb (now {bucket_mb}) for fewer, larger all-reduces nearer the link's "
                  "bus bandwidth (sweep it: --bucket-mb 5,25,100)")
    link = (f"a faster link (busbw {busbw:.3g} GB/s, from {source})" if busbw else
            "a faster link (no busbw measured: run labconsole collectives at these ranks to know it)")
    return (f"{bucket}; --grad-accum K to all-reduce once per K micro-batches; DDP's bf16 compression hook to "
            f"halve the bytes; or {link}")


def _straggler(ddp: dict[str, Any], bd: dict[str, Any], step: float, scores: dict[str, float],
               evidence: dict[str, dict[str, Any]]) -> None:
    who = bd.get("straggler") or {}
    part = _num((bd.get("parts") or {}).get("straggler_s")) or 0.0
    e = evidence["straggler"]
    e.update(rank=who.get("rank"), host=who.get("host"), delay_ms=_ms(who.get("delay_s")),
             delay_interval_ms=[_ms(x) for x in who.get("interval_95") or []] or None,
             slowest_share=_r(who.get("slowest_share")), straggler_share=_r(part / step), named=bool(who.get("named")))
    injected = ddp.get("injected")
    if isinstance(injected, dict) and injected.get("ms"):
        e["injected"] = f"rank {injected.get('rank')} was slowed on purpose by {injected['ms']:g} ms (--inject-straggler)"
    if not who.get("named"):
        e["not_named"] = who.get("why") or "no rank is consistently slower beyond the others' noise"
        return
    scores["straggler"] = _ramp(part / step, COMM_FROM, COMM_FULL)
    host = who.get("host") or "its host"
    e["lever"] = (f"rank {who.get('rank')} on {host}: look at that machine (cores shared with other work, thermal "
                  "or power throttling, a slower CPU/GPU, its data path), or place fewer ranks there")


def _data(ddp: dict[str, Any], parts: dict[str, Any], step: float, partner: dict[str, Any] | None,
          run: dict[str, Any], scores: dict[str, float], evidence: dict[str, dict[str, Any]]) -> None:
    wait = _num(parts.get("data_wait_s")) or 0.0
    share = wait / step
    value = _ramp(share, DATA_FROM, DATA_FULL)
    e = evidence["data-at-scale"]
    e.update(data_wait_ms=_r(wait * 1e3), wait_share=_r(share), ranks=ddp.get("ranks"))
    options = ((run.get("spec") or {}).get("engine_options") or {}).get("torch") or {}
    if isinstance(options, dict) and options.get("loader_workers") is not None:
        e["loader_workers"] = options.get("loader_workers")
    base = ddp_of(partner) if isinstance(partner, dict) else None
    if base is not None:
        base_step = _num((base["breakdown"].get("step_s") or {}).get("mean"))
        base_wait = _num((base["breakdown"].get("parts") or {}).get("data_wait_s"))
        if base_step and base_wait is not None:
            base_share = base_wait / base_step
            e["partner_wait_share"] = _r(base_share)
            e["rising"] = share - base_share > RISING
            if e["rising"] and value > 0:
                value += 0.1  # the wait grew with the ranks: the data path, not the model, is what stopped scaling
    else:
        e["partner_wait_share"] = "not known (no 1-rank run of this configuration)"
    scores["data-at-scale"] = min(1.0, value)
    e["lever"] = ("more loader workers (--loader-workers), prefetching, or faster storage: each rank reads its own "
                  "shard, so N ranks ask the data path for N× the batches at once")


def _ramp(share: float, start: float, full: float) -> float:
    return min(1.0, max(0.0, (share - start) / (full - start)))


def _ms(seconds: Any) -> float | None:
    value = _num(seconds)
    return None if value is None else round(value * 1e3, 3)


def _r(x: Any) -> Any:
    return round(float(x), 3) if _num(x) is not None else x


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)
