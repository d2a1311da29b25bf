"""Which knob moved E(N): named only when the two E intervals do not overlap, against the option's default;
"within noise" otherwise; a series without a knob axis says how to sweep one."""

from __future__ import annotations

from console.scaling import levers
from console.scaling.levers import NO_AXIS_TEXT, overlap


def curve(bucket: float | None, e4: float, interval4: list[float] | None, e2: float = 0.9,
          interval2: list[float] | None = None) -> dict:
    knobs = {} if bucket is None else {"bucket_mb": bucket}
    return {"name": f"bucket_mb={bucket}", "knobs": knobs, "points": [
        {"ranks": 1, "e": 1.0, "interval_95": [1.0, 1.0]},
        {"ranks": 2, "e": e2, "interval_95": interval2 or [e2 - 0.02, e2 + 0.02]},
        {"ranks": 4, "e": e4, "interval_95": interval4}]}


def test_a_lever_beyond_noise_is_named_with_both_intervals():
    result = levers({"curves": [curve(100.0, 0.83, [0.80, 0.86]), curve(25.0, 0.71, [0.68, 0.74])]})
    assert result["text"] == "bucket 100 MB raised E(4) from 0.71 [0.68,0.74] to 0.83 [0.80,0.86]"
    best = result["best"]
    assert best["from_value"] == 25 and best["to_value"] == 100 and best["beyond_noise"]
    table = result["axes"][0]
    assert table["reference"] == 25 and [v["value"] for v in table["values"]] == [25, 100]
    assert table["values"][1]["e"][4] == {"e": 0.83, "interval_95": [0.80, 0.86]}


def test_overlapping_intervals_are_within_noise():
    result = levers({"curves": [curve(25.0, 0.71, [0.66, 0.76]), curve(100.0, 0.74, [0.70, 0.78])]})
    assert result["best"] is None and result["text"].startswith("within noise")
    assert "intervals overlap" in result["text"]


def test_a_missing_interval_claims_nothing():
    result = levers({"curves": [curve(25.0, 0.50, None), curve(100.0, 0.90, [0.88, 0.92])]})
    assert result["best"] is None and "no interval to tell" in result["text"]


def test_the_largest_move_beyond_noise_wins_and_a_drop_says_lowered():
    result = levers({"curves": [curve(25.0, 0.80, [0.78, 0.82], e2=0.95, interval2=[0.94, 0.96]),
                                curve(4.0, 0.60, [0.58, 0.62], e2=0.90, interval2=[0.89, 0.91])]})
    assert result["text"] == "bucket 4 MB lowered E(4) from 0.80 [0.78,0.82] to 0.60 [0.58,0.62]"
    assert len([m for m in result["moves"] if m["beyond_noise"]]) == 2


def test_without_a_knob_axis_it_says_how_to_sweep_one():
    assert levers({"curves": [curve(None, 0.8, [0.7, 0.9])]})["text"] == NO_AXIS_TEXT
    assert "--bucket-mb" in NO_AXIS_TEXT


def test_overlap():
    assert overlap([0.1, 0.2], [0.2, 0.3]) is True
    assert overlap([0.1, 0.2], [0.21, 0.3]) is False
    assert overlap(None, [0.1, 0.2]) is None
