"""Confirmation experiments judged on a fake round runner: each round's latencies come from a model of one
bottleneck class (how its time responds to the axis), with seeded noise. A host-overhead verdict on
host-overhead timings is confirmed; on compute timings it is refuted and the data names compute; timings that
answer no class are "none of the classes"; noise wider than the predictions leaves it undecided at the cap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from console.analysis.confirm import lines, plan_for, run_confirmation
from console.analysis.confirm.experiment import question_for
from console.analysis.confirm.predictions import Prediction
from console.analysis.interleave import interleaved
from engines.spec import RunSpec

CARD = {"llc_bytes": 32 << 20}
HOST_VERDICT = {"class": "host-overhead", "secondary": "compute", "confidence": 0.6,
                "scores": {"host-overhead": 0.8, "compute": 0.3, "cache-resident": 0.2, "memory-bandwidth": 0.0},
                "evidence": {}}
OPS = [{"op": "aten::tanh", "calls": 1000, "time_s": 0.01, "bytes": 1000 * 128.0, "flops": 1000 * 16.0}]


def host_like(planned) -> float:
    """Time follows the op calls; the work per op does not matter; threads do not help."""
    return planned.axis.scales["ops"]


def compute_like(planned) -> float:
    """Time follows the FLOPs; a second thread nearly halves it."""
    return 0.55 if planned.axis.kind == "threads" else planned.axis.scales["flops"]


def runner_for(model, spread: float = 0.02, seed: int = 7, base_ms: float = 2.0):
    """make_runner: round k of side A takes base_ms, of side B base_ms × the model's ratio; each round's
    latencies share a seeded machine-state factor (what pairs cancel) and carry per-iteration jitter."""
    calls: list[tuple[str, int]] = []

    def make(planned):
        rng = np.random.default_rng(seed)
        state = {}

        def run_round(side: str, k: int) -> np.ndarray:
            calls.append((side, k))
            if k not in state:
                state[k] = float(np.exp(rng.normal(0.0, 0.2)))  # the machine's state in pair k: both sides
            ratio = model(planned) if side == "B" else 1.0
            drift = float(np.exp(rng.normal(0.0, spread)))  # what differs between the two rounds of a pair
            return base_ms * ratio * state[k] * drift * np.exp(rng.normal(0.0, 0.01, size=50))
        return run_round
    make.calls = calls
    return make


def host_plan():
    return plan_for(HOST_VERDICT, RunSpec(model="synth-tiny-ops").validate(), {"ops": OPS}, CARD, worker_cores=1)


def test_host_overhead_timings_confirm_a_host_overhead_verdict():
    make = runner_for(host_like)
    confirmation = run_confirmation(host_plan(), make, min_rounds=4, max_rounds=10)
    assert confirmation["outcome"] == "confirmed"
    assert confirmation["sentence"].startswith("confirmed: host-overhead over compute — rows ×4 ×")
    (experiment,) = confirmation["experiments"]
    assert experiment["outcome"] == "as predicted" and experiment["rounds"] == 4  # answered at the first look
    assert 0.8 <= experiment["ci95"][0] and experiment["ci95"][1] <= 1.25
    assert experiment["predicted"]["range"] == [0.8, 1.25] and experiment["rival"]["class"] == "compute"
    assert json.loads(json.dumps(confirmation)) == confirmation  # stored as JSON with the run
    assert make.calls[:4] == [("A", 0), ("B", 0), ("B", 1), ("A", 1)]  # interleaved A B B A


def test_compute_timings_refute_a_host_overhead_verdict_and_name_compute():
    confirmation = run_confirmation(host_plan(), runner_for(compute_like), min_rounds=4, max_rounds=10)
    assert confirmation["outcome"] == "refuted"
    assert confirmation["says"] == "compute"
    assert confirmation["sentence"].startswith("refuted — the data says compute instead")
    assert "rows ×4 ×3.98 [3.79, 4.19]" in confirmation["sentence"] and "host-overhead predicted ×0.8–1.25" in confirmation["sentence"]
    # the cache-resident class predicts the same for this experiment, and is named as fitting too
    assert confirmation["also_fits"] == ["cache-resident", "memory-bandwidth"]
    assert confirmation["experiments"][0]["outcome"] == "not as predicted"


def test_timings_no_class_predicts_are_none_of_the_classes():
    confirmation = run_confirmation(host_plan(), runner_for(lambda planned: 1.8), min_rounds=4, max_rounds=10)
    assert confirmation["outcome"] == "refuted" and confirmation["says"] == "none of the classes"
    assert confirmation["sentence"].startswith("refuted — the data says none of the classes instead")


def test_noise_wider_than_the_predictions_is_undecided_at_the_cap():
    noisy = runner_for(lambda planned: 1.2, spread=0.6, seed=3)
    confirmation = run_confirmation(host_plan(), noisy, min_rounds=4, max_rounds=6)
    assert confirmation["outcome"] == "undecided"
    (experiment,) = confirmation["experiments"]
    assert experiment["outcome"] == "undecided" and experiment["rounds"] == 6 and experiment["max_rounds"] == 6
    assert confirmation["sentence"].startswith("undecided at this machine's noise: rows ×4 reached [")
    assert "(the cap is 6)" in experiment["sentence"]


def test_a_failed_round_stops_the_confirmation_and_says_which():
    def make(planned):
        def run_round(side, k):
            if k == 2:
                raise RuntimeError("round 3 of B failed: out of memory")
            return np.full(10, 1.0)
        return run_round
    confirmation = run_confirmation(host_plan(), make, min_rounds=4, max_rounds=6)
    assert confirmation["outcome"] == "failed"
    assert confirmation["failed"] == "rows ×4: round 3 of B failed: out of memory"


def test_nothing_to_test_is_untestable_not_confirmed():
    verdict = {"class": "input-pipeline", "secondary": None, "scores": {"input-pipeline": 0.9}, "evidence": {}}
    the_plan = plan_for(verdict, RunSpec(model="mlp").validate(), {}, CARD, worker_cores=1)
    confirmation = run_confirmation(the_plan, runner_for(host_like))
    assert confirmation["outcome"] == "untestable" and confirmation["experiments"] == []
    assert confirmation["sentence"].startswith("not tested: no intervention here tests input-pipeline")


def test_lines_give_the_sentence_each_experiment_and_what_cannot_be_tested():
    confirmation = run_confirmation(host_plan(), runner_for(host_like), min_rounds=4, max_rounds=10)
    text = lines(confirmation)
    assert text[0].startswith("confirmation: confirmed")
    assert text[1].startswith("  rows ×4: ×") and "host-overhead predicted ×0.8–1.25 — as predicted" in text[1]
    assert any(line.startswith("  cannot test threads ×2") for line in text)


@pytest.mark.parametrize(("interval", "said"), [((0.9, 1.1), "yes"), ((1.3, 1.5), "no"), ((1.1, 1.4), "undecided")])
def test_the_stopping_question_asks_inside_or_wholly_outside(interval, said):
    ask = question_for(Prediction("host-overhead", 0.8, 1.25, ""))
    assert ask({"ci95": list(interval)}) == said


def test_interleave_takes_a_callable_question_and_stays_json():
    result = interleaved(lambda side, k: np.full(5, 2.0 if side == "B" else 1.0) * (1 + 0.01 * k),
                         question=lambda r: "yes", min_rounds=2, max_rounds=4)
    assert result["answer"] == "yes" and result["rounds"] == 2 and result["question"] is None
    assert json.dumps(result)


def measured(planned, ratio, low, high, outcome):
    return {**planned.to_dict(), "ratio": ratio, "ci95": [low, high], "rounds": 10, "max_rounds": 10,
            "outcome": outcome, "sentence": "…"}


def test_a_class_merely_not_ruled_out_is_not_said_to_be_what_the_data_shows():
    from console.analysis.confirm import judge

    the_plan = host_plan()
    (planned,) = the_plan.experiments  # rows ×4: host-overhead ×0.8–1.25, compute and cache ×2.4–6
    wide = judge(the_plan, [measured(planned, 2.0, 1.4, 2.9, "not as predicted")])
    assert wide["outcome"] == "refuted" and wide["shown"] is False
    assert wide["sentence"].startswith("refuted — of the classes only compute and cache-resident are not ruled out "
                                       "(the data does not yet show it): rows ×4 ×2 [1.4, 2.9]")
    inside = judge(the_plan, [measured(planned, 3.9, 3.5, 4.3, "not as predicted")])
    assert inside["shown"] is True and inside["sentence"].startswith("refuted — the data says compute instead")


def test_threads_are_not_doubled_on_a_busy_machine():
    from console.analysis.confirm import axes_for

    busy = {"environment": {"engine": {"threads": 1}, "hygiene": {"other_cpu_percent": 140.0}}}
    found = axes_for(RunSpec(model="mlp").validate(), busy, worker_cores=2)
    assert not found.of_kind("threads")
    assert any(w.startswith("threads ×2: other processes used 140% of a core") for w in found.untestable)


def test_undecided_says_which_predictions_held_and_which_are_still_open():
    from console.analysis.confirm import judge

    v = {"class": "compute", "secondary": None, "evidence": {},
         "scores": {"compute": 1.0, "memory-bandwidth": 0.0, "cache-resident": 0.0, "host-overhead": 0.0}}
    gemm = RunSpec(model="synth-gemm", model_params={"rows": 128, "features": 512, "layers": 2}, threads=1).validate()
    the_plan = plan_for(v, gemm, {}, CARD, worker_cores=2)
    threads, rows = the_plan.experiments
    block = judge(the_plan, [measured(threads, 0.854, 0.469, 1.55, "undecided"),
                             measured(rows, 4.48, 3.83, 5.24, "as predicted")])
    assert block["outcome"] == "undecided"
    assert block["sentence"] == ("undecided at this machine's noise: rows ×4 held (×4.48 within ×2.4–6); threads ×2 "
                                 "reached [0.469, 1.55] after 10 rounds a side, neither inside nor outside compute's "
                                 "×0.4–0.625 (more rounds: --confirm-max-rounds, or a quieter machine)")
    assert block["notes"] == ["no runner-up named: tested against the classes a change can exclude (host-overhead)"]


def test_a_threads_experiment_run_while_neighbours_were_busy_is_undecided_not_refuted():
    from console.analysis.confirm import judge
    from console.analysis.confirm.experiment import run_experiment

    v = {"class": "compute", "secondary": None, "evidence": {},
         "scores": {"compute": 1.0, "memory-bandwidth": 0.0, "cache-resident": 0.0, "host-overhead": 0.0}}
    gemm = RunSpec(model="synth-gemm", model_params={"rows": 128, "features": 512, "layers": 2}, threads=1).validate()
    the_plan = plan_for(v, gemm, {}, CARD, worker_cores=2)
    threads = next(p for p in the_plan.experiments if p.axis.kind == "threads")
    # a neighbour took the second core: twice the threads came out ×0.95, wholly outside compute's ≤ ×0.625
    run_round = runner_for(lambda planned: 0.95)(threads)
    watched = type("Watched", (), {"__call__": lambda self, side, k: run_round(side, k),
                                   "interference": lambda self: "other processes used 0.90 cores of the worker's "
                                                                "CPUs between the rounds (≥ 0.5)",
                                   "load": lambda self: {"other_cores": 0.9, "probes": 8}})()
    record = run_experiment(threads, watched, 4, 10)
    assert record["outcome"] == "undecided" and record["measured_outcome"] == "not as predicted"
    assert record["other_load"] == {"other_cores": 0.9, "probes": 8}
    assert record["sentence"].endswith("— undecided (other processes used 0.90 cores of the worker's CPUs between "
                                       "the rounds (≥ 0.5))")
    block = judge(the_plan, [record])
    assert block["outcome"] == "undecided" and "threads ×2 ×0.946 does not count: other processes used" in \
        block["sentence"] and block["sentence"].endswith("(run again when the machine is quiet: labconsole doctor "
                                                         "names busy programs)")


def test_the_load_watcher_counts_other_processes_not_the_consoles_own_tree(tmp_path, monkeypatch):
    from console.run import round_load

    stat = tmp_path / "proc" / "stat"
    stat.parent.mkdir()
    ticks = {"busy": 0}

    def write():  # cpu1 busy ticks (user) grow by what the fake sleep adds; 100 ticks a second
        stat.write_text(f"cpu  0 0 0 0 0 0 0 0\ncpu1 {ticks['busy']} 0 0 1000 0 0 0 0\n")

    ours = {"cpu": 0.0}
    monkeypatch.setattr(round_load, "own_tree_cpu_s", lambda: {1: ours["cpu"]})
    clock = {"t": 0.0}
    monkeypatch.setattr(round_load.time, "monotonic", lambda: clock["t"])

    def sleep(seconds, other_cores=0.8, our_cores=0.3):
        ticks["busy"] += round(100 * seconds * (other_cores + our_cores))
        ours["cpu"] += seconds * our_cores
        clock["t"] += seconds
        write()

    write()
    watched = round_load.LoadWatched(lambda side, k: [1.0], cpus=[1], probe_s=1.0, sleep=sleep, root=str(tmp_path))
    assert watched("A", 0) == [1.0] and watched("B", 0) == [1.0]
    assert watched.load()["other_cores"] == pytest.approx(0.8) and watched.load()["probes"] == 2
    assert "other processes used 0.80 cores" in watched.interference()
    quiet = round_load.LoadWatched(lambda side, k: [1.0], cpus=[1], probe_s=1.0,
                                   sleep=lambda s: sleep(s, other_cores=0.1), root=str(tmp_path))
    quiet("A", 0)
    assert quiet.interference() is None and quiet.load()["other_cores"] == pytest.approx(0.1)
    blind = round_load.LoadWatched(lambda side, k: [1.0], cpus=[1], sleep=lambda s: None, root=str(tmp_path / "no"))
    blind("A", 0)
    assert blind.interference() is None and "no /proc/stat" in blind.load()["why"]


def test_a_class_that_could_not_predict_the_refuting_experiment_is_not_what_the_data_says():
    from console.analysis.confirm import judge

    v = {"class": "host-overhead", "secondary": "compute", "evidence": {},
         "scores": {"host-overhead": 0.9, "compute": 0.4, "cache-resident": 0.1, "memory-bandwidth": 0.1}}
    gemm = RunSpec(model="synth-gemm", model_params={"rows": 256, "features": 256, "layers": 2}, threads=1).validate()
    the_plan = plan_for(v, gemm, {}, {"llc_bytes": 32 << 20, "caches": {"l2": 1 << 20}}, worker_cores=2)
    rows = next(p for p in the_plan.experiments if p.axis.kind == "data")
    threads = next(p for p in the_plan.experiments if p.axis.kind == "threads")
    # as measured on the 2-core VM: rows ×4 took ×4.11, threads ×2 ×0.561 — just past compute's ×0.625 — with
    # cache-resident predicting the thread change only (as when the card gave no last-level cache size)
    data = measured(rows, 4.11, 3.43, 4.92, "not as predicted")
    data["predictions"].pop("cache-resident")
    block = judge(the_plan, [data, measured(threads, 0.561, 0.5, 0.629, "not as predicted")])
    assert "cache-resident" in threads.predictions
    assert block["outcome"] == "refuted" and block["says"] != "cache-resident" and block["shown"] is False
    assert block["sentence"].startswith("refuted — of the classes only compute")


def test_a_confirmation_that_rules_a_class_out_does_not_also_say_it_could_not_be_tested():
    from console.analysis.confirm import judge

    v = {"class": "cache-resident", "secondary": None, "evidence": {"working_set_mb": 2.64, "llc_mb": 33.6},
         "scores": {"cache-resident": 1.0, "compute": 0.0, "memory-bandwidth": 0.0, "host-overhead": 0.0}}
    the_plan = plan_for(v, RunSpec(model="mlp", threads=1).validate(), {}, CARD, worker_cores=1)
    (hidden,) = the_plan.experiments  # hidden ×2, planned against host overhead only
    assert any(w.startswith("compute: no change") for w in the_plan.untestable)
    # as measured: ×7.85 [7.02, 8.78], past compute's and memory-bandwidth's ×1.5 the FLOPs / bytes
    block = judge(the_plan, [measured(hidden, 7.85, 7.02, 8.78, "as predicted")])
    assert block["outcome"] == "confirmed" and set(block["rules_out"]) == {"compute", "memory-bandwidth",
                                                                            "host-overhead"}
    assert not any(w.startswith(("compute: no change", "memory-bandwidth: no change")) for w in block["untestable"])
