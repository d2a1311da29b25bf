"""Storage I/O (issue 21 items 4 and 7): the built-in I/O sweep reader against fio on the same file and points, and
the machine card's storage read across repeats.

1. Built-in ÷ fio. Both engines run the same points on one test file in a temporary directory (O_DIRECT where the
   file system allows): 1 MiB sequential reads at QD 1, 64 KiB random reads at QD 4, 4 KiB random reads at QD 1 —
   points where the device, not the interpreter, is the limit (on a memory-backed file the built-in reader's
   Python loop caps small-block IOPS near 150k/s, below fio: that is the reader's own ceiling, documented in
   docs/storage.md, not a disagreement about the device). Rounds alternate in ABBA order (built-in first in even
   rounds) and each block of two rounds gives one ratio, so going first or second cancels
   (bench_stats.balanced_ratios). Goal: the median ratio within 0.9–1.1, held with its distribution-free 95%
   interval, per point and over all points. Skipped (with the reason) when fio is not installed.
2. The card's storage read. The card's own procedure (engines/machine/card.py: StorageRead of the full card's file,
   repeated until the median's 95% interval is within ±10% or the cap) is run CARD_REPEATS times; goal: the cv of
   those medians ≤ 10% (its interval from the chi-square distribution, as test_machine_card does). A miss is
   undecided, not failed, when every read's note names the device's own variation beyond the goal — "explained",
   which is what item 7 asks of the card.
"""

from __future__ import annotations

import dataclasses
import statistics

import pytest
from bench_stats import balanced_ratios, median_with_interval
from bench_verdict import FAIL, UNDECIDED, Goal, judge, undecided
from test_machine_card import cv_interval

from engines.machine.card import FULL, STORAGE_CAP_S
from engines.machine.repeat import until_precise
from engines.machine.storage import STORAGE_GOAL, StorageRead
from engines.storage import fio
from engines.storage.ioreader import MIB, ReaderPool, TestFile, direct_supported, prepare_cache

POINTS = (("seq", MIB, 1), ("rand", 65536, 4), ("rand", 4096, 1))  # (pattern, block, queue depth), reads
ROUNDS = 12  # per point: 6 ABBA blocks, the fewest whose median interval has 95% coverage
POINT_S = 0.4
FILE_BYTES = 256 * MIB
AGREEMENT = Goal.within(1.0, 0.10, "×")
CARD_REPEATS = 4
REPEATABLE = Goal.at_most(STORAGE_GOAL * 100, "%")


def test_built_in_reader_agrees_with_fio(bench, tmp_path):
    if fio.available() is None:
        pytest.skip("fio is not installed: the built-in reader has nothing to be compared with "
                    "(apt-get install fio; .ci/run installs it before make bench)")
    all_ratios = []
    with TestFile(tmp_path, FILE_BYTES) as test_file, ReaderPool(1) as pool:
        direct, why = direct_supported(test_file.path)
        for pattern, block, qd in POINTS:
            ours, theirs = [], []
            for round_ in range(ROUNDS):
                order = ("built-in", "fio") if round_ % 2 == 0 else ("fio", "built-in")
                for engine in order:
                    prepare_cache(test_file.path, test_file.size, "read", direct)
                    if engine == "fio":
                        theirs.append(fio.run_point(str(test_file.path), test_file.size, "read", pattern, block,
                                                    qd, 1, POINT_S, direct)["mb_s"])
                    else:
                        ours.append(pool.measure(test_file.path, test_file.size, "read", pattern, block, qd, 1,
                                                 POINT_S, direct)["mb_s"])
            ratios = balanced_ratios(ours, theirs)
            all_ratios += ratios
            median, interval = median_with_interval(ratios)
            bench.record(judge(f"I/O sweep built-in ÷ fio: read {pattern} {block // 1024} KiB QD {qd}", median,
                               interval, AGREEMENT, samples=len(ratios), direct=direct, direct_why=why,
                               built_in_mb_s=round(statistics.median(ours), 1),
                               fio_mb_s=round(statistics.median(theirs), 1), fio_version=fio.version(),
                               ratios=[round(r, 4) for r in ratios]))
    median, interval = median_with_interval(all_ratios)
    bench.record(judge("I/O sweep built-in ÷ fio: all points", median, interval, AGREEMENT,
                       samples=len(all_ratios), points=len(POINTS), direct=direct))


def test_card_storage_read_is_repeatable_or_explained(bench, tmp_path):
    medians, notes, spreads = [], [], []
    for _ in range(CARD_REPEATS):
        with StorageRead(tmp_path, FULL.storage_bytes) as reader:
            median, spread, _ = until_precise(reader.once, 5, goal=STORAGE_GOAL, max_s=STORAGE_CAP_S[False],
                                              explain=reader.explain)
            variation = reader.device_variation()
        medians.append(median)
        spreads.append(spread)
        notes.append((spread["note"], variation))
    if len(set(medians)) < 2:
        bench.record(undecided("machine card storage read: cv between cards", REPEATABLE,
                               "the reads gave identical medians: nothing to hold against the goal"))
        return
    cv = 100 * statistics.stdev(medians) / statistics.fmean(medians)
    device = [v["cv"] for _, v in notes if v and v.get("cv") is not None]
    result = judge("machine card storage read: cv between cards", cv, cv_interval(cv, len(medians)), REPEATABLE,
                   samples=len(medians), medians_gbs=[round(m, 3) for m in medians],
                   half_widths=[round(s["half_width"] or 0, 4) for s in spreads],
                   within_goal=[s["within_goal"] for s in spreads], reads=[s["n"] for s in spreads],
                   device_cv=[round(c, 4) for c in device], notes=[n for n, _ in notes if n])
    device_beyond = bool(device) and min(device) > STORAGE_GOAL
    if result.verdict in (FAIL, UNDECIDED) and device_beyond:
        result = dataclasses.replace(result, verdict=UNDECIDED, reason=(
            f"explained: the device itself varied {min(device) * 100:.0f}–{max(device) * 100:.0f}% (cv of its "
            f"throughput in 32 MiB windows) in the same minutes, beyond the ±{STORAGE_GOAL * 100:g}% goal; "
            f"{result.reason}"))
    bench.record(result)
