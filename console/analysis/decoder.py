"""Decoder runs: how much of the machine's memory bandwidth a decode step uses, and the KV cache's footprint.

Why: a decode step feeds one token per sequence, so it does little arithmetic on a lot of bytes — every weight
once, plus the K and V of every position attended to. Its time per token is therefore bounded by memory
bandwidth, and (weights + KV bytes per token) ÷ time per token ÷ the card's measured bandwidth says how close it
gets. The byte counts come from the generate scenario's result (computed from the model's parameters, see
engines/catalog/gpt_sizes.py); the bandwidth from the machine card (measured). A step whose bytes fit in the
last-level cache is served from cache, so its utilization of DRAM bandwidth is reported but flagged, never read
as "bandwidth-bound".

Pure functions over plain dicts (the summary's scenario block and a machine card); Qt-free, numpy-free.
"""

from __future__ import annotations

from typing import Any

GB = 1e9
BATCHES = (1, 2, 4, 8, 16, 32, 64)
SEQUENCES = tuple(2 ** k for k in range(7, 14))  # 128 … 8192 positions
FOOTPRINT_METHOD = ("computed, not measured: batch × sequence tokens × KV bytes per position (2 × layers × hidden "
                    "× element size)")


# ---- Public API
def annotate(summary: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any]:
    """Add the decoder analysis to a generate run's summary, in place (other runs are left as they are).

    `summary["decoder"]` gets the whole block (utilization with its reason and method, the footprint table), and
    the scenario block two plain figures the summary card lists: `decode_gbs` (bytes per token ÷ time per token)
    and `decode_bandwidth_utilization` (None without a card's bandwidth). Call it where the card is known (the
    session or `analyze`, with console.machine.cards.card_to_judge_by); a summary never measures a card itself.
    """
    block = decoder_block(summary, card)
    if block is not None:
        summary["decoder"] = block
        usage = block["memory_bandwidth"]
        summary.setdefault("scenario", {}).update(decode_gbs=usage["achieved_gbs"],
                                                  decode_bandwidth_utilization=usage["utilization"])
    return summary


def decoder_block(summary: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any] | None:
    """Everything this module says about one run's summary (console.analysis.summary); None unless its scenario
    block has decode bytes (a generate run)."""
    scenario = summary.get("scenario") or {}
    if scenario.get("decode_bytes_per_token") is None:
        return None
    detail = scenario.get("decode_bytes") or {}
    return {
        "prefill_share": scenario.get("prefill_share"),
        "memory_bandwidth": bandwidth_utilization(scenario, card),
        "kv_footprint": kv_footprint_table(scenario["kv_bytes_per_position"], batch=summary.get("batch"),
                                           sequence_tokens=scenario.get("sequence_tokens"),
                                           max_sequence_tokens=detail.get("max_sequence_tokens")),
    }


def bandwidth_utilization(scenario: dict[str, Any], card: dict[str, Any] | None) -> dict[str, Any]:
    """Decode's memory-bandwidth utilization: (weights + KV bytes per token) ÷ time per token ÷ card bandwidth.

    Time per token is the mean decode step (total decode time ÷ steps, the time the averaged byte count goes
    with), else the TPOT mean or median. `utilization` is None with `reason` when there is no card, no
    bandwidth on it, or no decode time.
    """
    step_bytes = scenario.get("decode_bytes_per_token")
    step_s = _step_seconds(scenario)
    achieved = step_bytes / step_s if step_bytes and step_s else None
    out: dict[str, Any] = {
        "utilization": None, "reason": None, "achieved_gbs": achieved / GB if achieved else None,
        "bandwidth_gbs": None, "bandwidth_source": None, "bytes_per_token": step_bytes,
        "time_per_token_ms": step_s * 1e3 if step_s else None, "cache_resident": None,
        "method": "(weight_bytes_per_token + kv_read_bytes_per_token) ÷ mean decode step ÷ the machine card's "
                  "measured memory bandwidth (device memory on a GPU target); bytes computed, time and "
                  "bandwidth measured",
    }
    if not step_bytes or not step_s:
        out["reason"] = "not available: the run measured no decode step (no complete request)"
        return out
    if card is None:
        out["reason"] = ("not available: no machine card for this host and target; measure one with "
                         "`labconsole machine --target <target>`")
        return out
    source, bandwidth_gbs = _bandwidth(card)
    out["bandwidth_source"] = source
    if not bandwidth_gbs:
        why = (card.get("not_available") or {}).get(source) or "the card has no measured figure"
        out["reason"] = (f"not available: no {source} on the machine card for {card.get('target', '?')} ({why}); "
                         "measure it with `labconsole machine --refresh`")
        return out
    out["bandwidth_gbs"] = bandwidth_gbs
    out["utilization"] = out["achieved_gbs"] / bandwidth_gbs
    llc = _llc_bytes(card)
    working_set = (scenario.get("weight_bytes_per_token") or 0) + (scenario.get("kv_cache_bytes") or 0)
    if llc:
        out["cache_resident"] = working_set <= llc
        if out["cache_resident"]:
            out["reason"] = (f"the weights and KV cache ({working_set:,} bytes) fit in the last-level cache "
                             f"({llc:,} bytes): decode is served from cache, so this is not DRAM-bandwidth "
                             "utilization and may exceed 1")
    return out


def kv_footprint_table(kv_bytes_per_position: int, batch: int | None = None, sequence_tokens: int | None = None,
                       max_sequence_tokens: int | None = None, batches: tuple[int, ...] = BATCHES,
                       sequences: tuple[int, ...] = SEQUENCES) -> dict[str, Any]:
    """The KV cache's bytes against batch (rows) and sequence length (columns); computed, not measured.

    The run's own batch and sequence are added to the axes; sequences longer than the model's position table
    (`max_sequence_tokens`) are left out, since the model cannot hold them, and the longest it can is the last.
    """
    rows = sorted({*batches, *([batch] if batch else [])})
    columns = sorted({*sequences, *([sequence_tokens] if sequence_tokens else [])})
    if max_sequence_tokens:
        columns = [s for s in columns if s < max_sequence_tokens] + [max_sequence_tokens]
    return {
        "batches": rows,
        "sequence_tokens": columns,
        "bytes": [[b * s * kv_bytes_per_position for s in columns] for b in rows],
        "run": {"batch": batch, "sequence_tokens": sequence_tokens},
        "kv_bytes_per_position": kv_bytes_per_position,
        "computed": True,
        "method": FOOTPRINT_METHOD,
    }


# ---- Private API
def _step_seconds(scenario: dict[str, Any]) -> float | None:
    for key in ("decode_step_ms_mean", "tpot_ms_mean", "tpot_ms_p50"):
        value = scenario.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return value / 1e3
    return None


def _bandwidth(card: dict[str, Any]) -> tuple[str, float | None]:
    """The memory a decode step streams from: device memory on a GPU target, host memory on the CPU."""
    if card.get("target", "cpu") != "cpu":
        source = "device_memory_bandwidth_gbs"
    else:
        source = "memory_bandwidth_gbs"
    value = card.get(source)
    return source, float(value) if isinstance(value, (int, float)) and value > 0 else None


def _llc_bytes(card: dict[str, Any]) -> int | None:
    """The card's last-level cache, else the largest cache it lists (the roofline's rule)."""
    if isinstance(card.get("llc_bytes"), int) and card["llc_bytes"] > 0:
        return card["llc_bytes"]
    sizes = [v for v in (card.get("caches") or {}).values() if isinstance(v, int) and v > 0]
    return max(sizes) if sizes else None
