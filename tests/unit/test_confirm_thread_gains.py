"""Threads ×2 held against the machine card's own gains from a second thread (compute_thread_gain for the GEMM,
stream_thread_gain for the memory-bandwidth kernel): compute must reach a share of the GEMM's gain, memory work
little more than the STREAM gain — so the two classes are told apart where the card has both gains and the machine's
bandwidth saturates, and not where it scales like arithmetic. Fake rounds (seeded) stand in for the runs."""

from __future__ import annotations

import numpy as np
import pytest

from console.analysis.confirm import Context, axes_for, plan_for, predict, run_confirmation
from console.analysis.confirm.predictions import COMPUTE_GAIN_SHARE, STREAM_GAIN_SLACK
from engines.spec import RunSpec

MIB = 1 << 20
GAINS = {"compute_thread_gain": 1.93, "stream_thread_gain": 1.12}  # a machine whose bandwidth saturates early
CARD = {"llc_bytes": 32 * MIB, **GAINS}
STREAM = RunSpec(model="synth-stream", threads=1).validate()
MEMORY_VERDICT = {"class": "memory-bandwidth", "secondary": "compute", "confidence": 0.6,
                  "scores": {"memory-bandwidth": 0.7, "compute": 0.35}, "evidence": {}}


def threads_axis():
    return next(a for a in axes_for(RunSpec(model="mlp", threads=1).validate(), worker_cores=2).axes
                if a.kind == "threads")


# ---- the ranges
def test_compute_must_reach_a_share_of_the_cards_gemm_gain():
    with_gain = predict("compute", threads_axis(), Context(compute_thread_gain=1.93))
    assert with_gain.high == pytest.approx(1 / (COMPUTE_GAIN_SHARE * 1.93)) and with_gain.low == pytest.approx(0.4)
    assert "0.85 of the card's GEMM gain ×1.93" in with_gain.reason
    slow = predict("compute", threads_axis(), Context(compute_thread_gain=1.3))  # a machine whose GEMM barely scales
    assert slow.high == pytest.approx(1 / (0.85 * 1.3)) and slow.low <= slow.high
    assert predict("compute", threads_axis()).high == pytest.approx(1 / 1.6)  # no card gain: the fixed 1.6×


def test_memory_bandwidth_gains_little_more_than_the_stream_gain_and_never_predicts_a_slow_down():
    gain = predict("memory-bandwidth", threads_axis(), Context(stream_thread_gain=1.12))
    assert gain.low == pytest.approx(1 / (STREAM_GAIN_SLACK * 1.12)) and gain.high == 1.1
    odd = predict("memory-bandwidth", threads_axis(), Context(stream_thread_gain=0.7))
    assert odd.low == 1.0 <= odd.high  # a gain below 1 does not turn the range upside down


def test_the_context_reads_both_gains_and_ignores_what_is_not_a_gain():
    both = Context.from_run(MEMORY_VERDICT, None, CARD)
    assert (both.compute_thread_gain, both.stream_thread_gain) == (1.93, 1.12)
    old = Context.from_run(MEMORY_VERDICT, None, {"llc_bytes": 32 * MIB})  # a card from before the gains
    assert old.compute_thread_gain is None and old.stream_thread_gain is None
    for bad in (None, 0, -1.2, True, "1.9"):  # one core or a busy machine stores None; nothing else counts
        context = Context.from_run(MEMORY_VERDICT, None, {"compute_thread_gain": bad, "stream_thread_gain": bad})
        assert context.compute_thread_gain is None and context.stream_thread_gain is None


# ---- the plan
def test_with_both_gains_threads_tell_memory_bandwidth_from_compute():
    the_plan = plan_for(MEMORY_VERDICT, STREAM, {}, CARD, worker_cores=2)
    (threads,) = [e for e in the_plan.experiments if e.axis.kind == "threads"]
    assert (the_plan.tested, the_plan.rival) == ("memory-bandwidth", "compute")
    assert threads.tested.low == pytest.approx(1 / (1.15 * 1.12)) and threads.rival.high == pytest.approx(1 / 1.6405)


def test_this_vms_measured_gains_tell_them_apart():
    # the card measured here (2-core VM, other processes ≤ 0.15 core): GEMM ×1.87, STREAM ×1.21
    the_plan = plan_for(MEMORY_VERDICT, STREAM, {}, {**CARD, "compute_thread_gain": 1.87, "stream_thread_gain": 1.21},
                        worker_cores=2)
    (threads,) = [e for e in the_plan.experiments if e.axis.kind == "threads"]
    assert threads.tested.low / threads.rival.high == pytest.approx(0.85 * 1.87 / (1.15 * 1.21))  # 1.14 ≥ 1.1


@pytest.mark.parametrize("card", [{"llc_bytes": 32 * MIB}, {"llc_bytes": 32 * MIB, "compute_thread_gain": 1.93},
                                  {**CARD, "stream_thread_gain": 1.9}])
def test_without_a_stream_gain_or_where_bandwidth_scales_like_arithmetic_threads_are_not_planned(card):
    the_plan = plan_for(MEMORY_VERDICT, STREAM, {}, card, worker_cores=2)
    assert all(e.axis.kind != "threads" for e in the_plan.experiments)
    if "stream_thread_gain" not in card:
        assert any("no STREAM gain from a second thread" in why for why in the_plan.untestable)


# ---- judged on fake rounds
def runner(threads_ratio: float, seed: int = 11):
    """Round k of side A takes 2 ms, side B 2 ms × the ratio for threads ×2 (×2 for any data change), with a shared
    machine state per pair and small jitter."""
    def make(planned):
        rng, state = np.random.default_rng(seed), {}

        def run_round(side: str, k: int) -> np.ndarray:
            state.setdefault(k, float(np.exp(rng.normal(0.0, 0.2))))
            ratio = (threads_ratio if planned.axis.kind == "threads" else planned.axis.scales["bytes"]) \
                if side == "B" else 1.0
            return 2.0 * ratio * state[k] * float(np.exp(rng.normal(0.0, 0.02))) * np.exp(rng.normal(0, 0.01, 40))
        return run_round
    return make


def test_a_second_thread_that_gives_what_the_stream_gain_allows_confirms_memory_bandwidth():
    the_plan = plan_for(MEMORY_VERDICT, STREAM, {}, CARD, worker_cores=2)
    confirmation = run_confirmation(the_plan, runner(1 / 1.1), min_rounds=4, max_rounds=10)
    assert confirmation["outcome"] == "confirmed"
    threads = next(e for e in confirmation["experiments"] if e["intervention"] == "threads ×2")
    assert threads["outcome"] == "as predicted"


def test_a_second_thread_that_nearly_halves_the_time_refutes_memory_bandwidth_and_names_compute():
    the_plan = plan_for(MEMORY_VERDICT, STREAM, {}, CARD, worker_cores=2)
    confirmation = run_confirmation(the_plan, runner(0.53), min_rounds=4, max_rounds=10)
    assert confirmation["outcome"] == "refuted" and confirmation["says"] == "compute"
    assert "threads ×2 ×0.5" in confirmation["sentence"]
    assert "where memory-bandwidth predicted ×0.776–1.1" in confirmation["sentence"]
