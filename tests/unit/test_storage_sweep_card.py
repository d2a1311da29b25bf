"""The machine card's storage read, repeatable or explained (issue 21 item 7): it repeats until its median is within
±10%, records the device's own variation within the reads, and when the cap comes first the note (and the card's
row) says why in those terms. Behaviour only: the clock and the variation are given, never timed."""

from __future__ import annotations

import itertools

from console.machine.table import ceiling_rows, repeatability_text
from engines.machine.repeat import until_precise
from engines.machine.storage import STORAGE_GOAL, StorageRead

MIB = 1024 ** 2


def ticking(step: float = 1.0):
    counter = itertools.count()
    return lambda: next(counter) * step


def test_a_wide_interval_is_explained_by_the_measurement_when_it_can():
    values = itertools.cycle([1.0, 2.0, 0.5, 1.5])
    _, spread, _ = until_precise(lambda: next(values), 6, goal=STORAGE_GOAL, max_s=10, clock=ticking(),
                                 explain=lambda s: f"device varied; n={s['n']}")
    assert spread["stopped"] == "time" and spread["note"] == f"device varied; n={spread['n']}"
    _, spread, _ = until_precise(lambda: next(values), 6, max_s=10, clock=ticking(), explain=lambda _s: None)
    assert "this machine's noise" in spread["note"]  # nothing to say: the plain note


def test_a_steady_read_stops_at_the_goal_without_a_note():
    _, spread, values = until_precise(lambda: 1.0, 6, goal=STORAGE_GOAL, clock=ticking(),
                                      explain=lambda _s: "never used")
    assert spread["within_goal"] and spread["stopped"] == "goal" and spread["note"] is None and len(values) == 6
    assert "repeatable: 95% interval ±0.0% (goal ±10%) after 6 reads" == repeatability_text(spread)


def test_each_read_records_the_device_throughput_in_windows(tmp_path):
    with StorageRead(tmp_path, 64 * MIB) as reader:
        reader.once()
        reader.once()
        variation = reader.device_variation()
    assert variation["windows"] == 4 and variation["window_bytes"] == 32 * MIB  # 2 windows per 64 MiB read
    assert variation["cv"] >= 0 and 0 <= variation["cpu_share"] <= 1.5
    assert reader.description()["device_variation"] == variation
    assert list(tmp_path.iterdir()) == []


def explained(windows: list[float], spread: dict) -> str | None:
    reader = StorageRead.__new__(StorageRead)
    reader.windows, reader.cpu_seconds, reader.wall_seconds = windows, 0.1, 2.0
    return reader.explain(spread)


SPREAD = {"half_width": 0.18, "goal": 0.10, "n": 40, "stopped": "time"}


def test_a_device_that_varied_beyond_the_goal_is_named_as_the_cause():
    note = explained([1.0e9, 1.6e9, 0.7e9, 1.2e9], SPREAD)
    assert note.startswith("interval ±18.0% is wider than the ±10% goal after 40 reads (the time cap)")
    assert "the device itself varied 34% in the same minutes" in note and "4 32 MiB windows" in note
    assert "spent 5% of their time on this CPU" in note and "the storage's, not the measurement's" in note


def test_a_steady_device_puts_the_spread_between_reads():
    note = explained([1.00e9, 1.02e9, 0.99e9, 1.01e9], SPREAD)
    assert "the device was steady within reads (cv 1%" in note and "the spread lies between reads" in note
    assert explained([1.0e9], SPREAD) is None  # one window: nothing measured to explain with


def card(spread: dict, variation: dict | None) -> dict:
    return {"storage_read_gbs": 1.2, "spread": {"storage_read_gbs": spread}, "method": {},
            "storage": {"dir": "/d", "state": "cold", "bytes": 1, "reason": "", "device_variation": variation}}


def storage_row(data: dict) -> dict:
    (row,) = [r for r in ceiling_rows(data) if r["key"] == "storage_read_gbs"]
    return row


def test_the_card_row_says_repeatable_or_names_the_device_variation():
    within = {"min": 1.1, "max": 1.3, "cv": 0.05, "n": 9, "interval": [1.15, 1.25], "level": 0.96,
              "half_width": 0.061, "within_goal": True, "goal": 0.1, "stopped": "goal", "note": None}
    row = storage_row(card(within, {"cv": 0.27, "windows": 72, "window_bytes": 32 * MIB, "cpu_share": 0.2}))
    assert "repeatable: 95% interval ±6.1% (goal ±10%) after 9 reads" in row["reason"] and not row["noise"]
    wide = {**within, "half_width": 0.2, "within_goal": False, "stopped": "time", "note": "the device itself …"}
    row = storage_row(card(wide, {"cv": 0.31, "windows": 72, "window_bytes": 32 * MIB, "cpu_share": 0.2}))
    assert row["noise"] == "the device itself …" and "repeatable" not in row["reason"]
    assert row["noise_label"] == "interval wider than ±10%: the device itself varied 31%"
    row = storage_row(card(wide, None))
    assert row["noise_label"] == "interval wider than ±10%: varied between reads"
