"""What the Scaling page and the report say under a scaling point: the straggler (who, by how much, how sure, and
what was injected), the all-reduce predicted from busbw beside the measured one, and the point's figures — each
saying how it was obtained. Qt-free, so the window and the report read the same sentences."""

from __future__ import annotations

from typing import Any


def ms_text(seconds: float, signed: bool = False) -> str:
    """0.0123 → '12.3 ms' (three significant figures; signed: '+12.3 ms')."""
    value = seconds * 1000
    return f"{value:+.3g} ms" if signed else f"{value:.3g} ms"


def straggler_text(point: dict[str, Any]) -> str:
    """Who was slowest, by how much and how sure; what was injected, when a straggler was."""
    injected = point.get("injected")
    injected_text = (f" · injected: rank {injected.get('rank')} sleeps {injected.get('ms')} ms before each step"
                     if isinstance(injected, dict) else "")
    if point.get("ranks") == 1:
        return "Straggler: one rank, no other to compare with." + injected_text
    straggler = (point.get("breakdown") or {}).get("straggler")
    if not isinstance(straggler, dict):
        return "Straggler: not available (this run carries no time breakdown)." + injected_text
    delay, interval = straggler.get("delay_s"), straggler.get("interval_95")
    delay_text = ms_text(delay) if isinstance(delay, (int, float)) else "delay not available"
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and None not in interval:
        delay_text += f" [{interval[0] * 1000:.3g}, {interval[1] * 1000:.3g}]"
    share = straggler.get("slowest_share")
    share_text = f"slowest in {share:.0%} of steps" if isinstance(share, (int, float)) else "share not available"
    who = f"rank {straggler.get('rank')} on {straggler.get('host') or 'host not given'}"
    if straggler.get("named"):
        return f"Straggler: {who}, {delay_text} behind the others' median compute; {share_text}." + injected_text
    return (f"No straggler named: the slowest was {who} ({share_text}, {delay_text}), not beyond the others' "
            "step-to-step spread." + injected_text)


def prediction_text(point: dict[str, Any]) -> str:
    """Predicted all-reduce (2(n−1)/n · bytes ÷ busbw, and where busbw came from) beside the measured, and overlap."""
    comm = (point.get("breakdown") or {}).get("comm") or {}
    overlap = comm.get("overlap_pct")
    overlap_text = ""
    if isinstance(overlap, (int, float)):
        overlap_text = f" · overlap {overlap:.0f}% (HTA: communication hidden under compute ÷ all communication)"
    if point.get("ranks") == 1:
        return "All-reduce: none at one rank."
    prediction = point.get("prediction")
    if not isinstance(prediction, dict) or not isinstance(prediction.get("predicted_s"), (int, float)):
        why = (prediction or {}).get("not_available") or (prediction or {}).get("method") or "no probe in this run"
        return f"All-reduce prediction: not available ({why})." + overlap_text
    text = f"All-reduce: predicted {ms_text(prediction['predicted_s'])} (busbw: {prediction.get('busbw_source', '?')})"
    measured = prediction.get("measured_s")
    if isinstance(measured, (int, float)):
        text += f" vs measured {ms_text(measured)}"
        ratio = prediction.get("ratio")
        if isinstance(ratio, (int, float)):
            text += f" (predicted ÷ measured {ratio:.2f})"
    else:
        text += ", measured not available"
    return text + "." + overlap_text


def point_text(point: dict[str, Any]) -> str:
    """One line of figures for the chosen point, each saying what it is."""
    parts = [f"N = {point.get('ranks')}", f"run {str(point.get('run_id'))[:8]}"]
    if isinstance(point.get("step_s"), (int, float)):
        parts.append(f"mean step {ms_text(point['step_s'])}")
    if isinstance(point.get("samples_per_s"), (int, float)):
        parts.append(f"{point['samples_per_s']:.4g} samples/s")
    if isinstance(point.get("e"), (int, float)):
        interval = point.get("interval_95")
        e = f"E {point['e']:.3f}"
        if isinstance(interval, (list, tuple)) and None not in interval:
            e += f" [{interval[0]:.3f}, {interval[1]:.3f}]"
        parts.append(e)
        speedup = (point.get("efficiency") or {}).get("speedup")
        if isinstance(speedup, (int, float)):
            parts.append(f"speed-up {speedup:.2f}×")
    elif point.get("e_missing"):
        parts.append(point["e_missing"])
    return " · ".join(parts)
