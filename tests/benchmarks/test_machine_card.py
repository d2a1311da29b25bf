"""Machine card repeatability: the spread (coefficient of variation) of each ceiling over five measurements.

A full card (not quick sizes) is measured in a worker, as `labconsole machine --refresh` does, with five repeats.
Goal: cv ≤ 10% for every ceiling. The 95% interval of a cv from five values comes from the chi-square
distribution of the sample variance, s²·(n−1)/σ² ~ χ²(n−1), assuming roughly normal repeats (the mean's own
uncertainty is ignored: it moves the cv far less than the variance does). With n = 5 the interval is wide (about
0.6× to 2.9× the observed cv).

The machine is shared, and a neighbour on one of two cores halves a GEMM that uses both: that spread belongs to
the neighbour, not to the card. So the CPU time other processes used during the measurement is read from
/proc/stat (less this process's and its worker's); a card measured while they used more than
QUIET_OTHER_PERCENT of a core is measured again (up to ATTEMPTS times), and if no attempt was quiet the quietest
is judged, with a decided miss turned into "undecided" and the reason saying how busy the machine was.

Storage is a shared device here (a virtual disk): its cold throughput moves between reads whoever reads it. So
the storage ceiling is held against a baseline measured in the same run: plain O_DIRECT sequential reads of a
file of the same size in the same directory (no page cache involved, no method of the card's), as many before
the card as after it, after one untimed read as the card does. When the device's own spread over those reads is
beyond the goal too, a miss of the card's storage figure is the
device's, and is reported undecided with both spreads.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import statistics
import time

from bench_load import QUIET_OTHER_PERCENT, cpu_clock, other_percent
from bench_verdict import FAIL, UNDECIDED, Goal, judge

from console.workers import call_in_worker
from engines.machine.card import FULL

REPEATS = 5
GOAL = Goal.at_most(10.0, "%")
ATTEMPTS = 3
STORAGE_BYTES = FULL.storage_bytes  # the full card's test file


def test_machine_card_repeatability(bench, tmp_path):
    attempts = []
    device_rates = direct_reads(tmp_path, STORAGE_BYTES, REPEATS)
    for _ in range(ATTEMPTS):
        before = cpu_clock()
        card = call_in_worker("engines.machine:measure_card", "cpu", str(tmp_path), REPEATS, False, timeout_s=1200)
        other = other_percent(before, cpu_clock())
        attempts.append((other, card))
        print(f"[benchmark] machine card measured; other processes used {other:.0f}% of a core meanwhile", flush=True)
        if other <= QUIET_OTHER_PERCENT:
            break
    other, card = min(attempts, key=lambda attempt: attempt[0])
    busy = None if other <= QUIET_OTHER_PERCENT else (
        f"the machine was busy: other processes used {other:.0f}% of a core during the quietest of {len(attempts)} "
        f"measurements (≤ {QUIET_OTHER_PERCENT:.0f}% wanted), so the spread is partly theirs")
    assert card["spread"], "the card measured no ceiling"
    device_rates += direct_reads(tmp_path, STORAGE_BYTES, REPEATS)
    device_cv = 100 * statistics.stdev(device_rates) / statistics.fmean(device_rates)
    print(f"[benchmark] storage baseline: O_DIRECT reads of the same size vary {device_cv:.1f}% (cv) on this device")
    for key, spread in sorted(card["spread"].items()):
        assert spread["n"] >= REPEATS  # at least REPEATS; more until the interval is precise or the cap says why
        assert spread.get("within_goal") or spread.get("note"), f"{key}: wide interval without the reason"
        cv = spread["cv"] * 100
        result = judge(f"machine card repeatability: {key} cv", cv, cv_interval(cv, spread["n"]), GOAL,
                       samples=spread["n"], ceiling=_value(card, key), min=spread["min"], max=spread["max"],
                       method=card["method"].get(key, ""), other_cpu_percent=round(other, 1),
                       storage_state=(card.get("storage") or {}).get("state") if key == "storage_read_gbs" else None)
        if busy and result.verdict in (FAIL, UNDECIDED):
            result = dataclasses.replace(result, verdict=UNDECIDED, reason=f"{busy}; {result.reason}")
        if key == "storage_read_gbs" and result.verdict == FAIL and not GOAL.contains(device_cv):
            result = dataclasses.replace(result, verdict=UNDECIDED, reason=(
                f"the device itself varies {device_cv:.1f}% between plain O_DIRECT reads of the same size, beyond "
                f"the goal too: the spread is the storage's, not the card's; {result.reason}"))
        bench.record(result)


def direct_reads(directory, size: int, repeats: int) -> list[float]:
    """Bytes/s of `repeats` sequential O_DIRECT reads of a fresh `size`-byte file in `directory`, after one
    untimed read (the baseline)."""
    path = os.path.join(directory, "direct-read-baseline.bin")
    chunk = 4 * 1024 ** 2
    with open(path, "wb") as out:
        for _ in range(size // chunk):
            out.write(os.urandom(chunk))
        os.fsync(out.fileno())
    buffer = mmap.mmap(-1, chunk)  # page-aligned, as O_DIRECT needs
    rates = []
    try:
        for _ in range(repeats + 1):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
            try:
                started, total = time.perf_counter(), 0
                while got := os.readv(fd, [buffer]):
                    total += got
                rates.append(total / (time.perf_counter() - started))
            finally:
                os.close(fd)
    finally:
        buffer.close()
        os.unlink(path)
    return rates[1:]


def cv_interval(cv: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The interval of a coefficient of variation observed over n values: cv·√((n−1)/χ²) at both tails."""
    tail = (1 - confidence) / 2
    dof = n - 1
    return (cv * math.sqrt(dof / chi2_quantile(1 - tail, dof)), cv * math.sqrt(dof / chi2_quantile(tail, dof)))


def chi2_quantile(p: float, dof: int) -> float:
    """The p-quantile of χ²(dof), by bisection on its CDF (no scipy in the bench environment)."""
    low, high = 0.0, max(10.0, dof * 10.0)
    for _ in range(200):
        mid = (low + high) / 2
        if chi2_cdf(mid, dof) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def chi2_cdf(x: float, dof: int) -> float:
    """P(X ≤ x) for X ~ χ²(dof): the regularised lower incomplete gamma P(dof/2, x/2), by its power series."""
    if x <= 0:
        return 0.0
    a, z = dof / 2, x / 2
    term = total = 1 / a
    k = 1
    while term > total * 1e-15:
        term *= z / (a + k)
        total += term
        k += 1
    return min(1.0, total * math.exp(-z + a * math.log(z) - math.lgamma(a)))


def _value(card: dict, key: str) -> float | None:
    value = card
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def test_chi2_quantiles_match_the_tables():
    """χ²(4) at 2.5% and 97.5%: 0.4844 and 11.1433 (any statistics table)."""
    assert abs(chi2_quantile(0.025, 4) - 0.4844) < 1e-3 and abs(chi2_quantile(0.975, 4) - 11.1433) < 1e-3
    assert abs(chi2_quantile(0.5, 1) - 0.4549) < 1e-3
