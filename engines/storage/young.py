"""What a checkpoint's save time costs a training job: Young's optimal interval and the time lost at it.

Why: a storage architect is asked "is this file system fast enough for checkpoints?", and the answer is a
fraction of training time, not a GB/s figure. Young (1974, "A first order approximation to the optimum
checkpoint interval") takes the save duration δ and the mean time between failures M: checkpointing every
τ = √(2·δ·M) seconds minimises the time lost, which is then ≈ δ/τ (saving) + τ/(2·M) (work redone after a
failure, on average half an interval) = √(2·δ/M). The restore after each failure costs its load time R once
per M, a further R/M, reported apart (Young's first-order model leaves it out). Valid while δ ≪ M; a fraction
≥ 1 says the job could never finish, and says so rather than printing a number.

Pure arithmetic, no imports beyond math: the console can word it, the tests can check it against the formula.
"""

from __future__ import annotations

import math

DEFAULT_MTBF_HOURS = 24.0  # one failure a day per job: an assumption, stated in every result that uses it
MTBF_ASSUMPTION = ("MTBF is the job's mean time between failures (any failure that loses unsaved work), "
                   "given by --mtbf-hours; default 24 h, an assumption, not a measurement")


def young(save_s: float | None, mtbf_hours: float, load_s: float | None = None) -> dict:
    """{"mtbf_h", "save_s", "interval_s", "lost_fraction", "restore_fraction", "note"} for one save duration.

    interval and lost fraction are None (with the note saying why) when the save time is unknown or the
    model no longer holds (δ not much smaller than M).
    """
    mtbf_s = float(mtbf_hours) * 3600.0
    out = {"mtbf_h": float(mtbf_hours), "save_s": save_s, "interval_s": None, "lost_fraction": None,
           "restore_fraction": None, "note": ""}
    if save_s is None or save_s <= 0 or mtbf_s <= 0:
        out["note"] = "not available (no save duration was measured)"
        return out
    interval = math.sqrt(2.0 * save_s * mtbf_s)
    lost = save_s / interval + interval / (2.0 * mtbf_s)
    if load_s is not None and load_s >= 0:
        out["restore_fraction"] = load_s / mtbf_s
    if save_s >= mtbf_s / 2 or lost >= 1.0:
        out["note"] = (f"a save of {save_s:.0f} s is not small against an MTBF of {mtbf_hours:g} h: Young's "
                       "first-order interval does not apply (the job would spend most of its time saving)")
        return out
    out["interval_s"] = interval
    out["lost_fraction"] = lost
    return out
