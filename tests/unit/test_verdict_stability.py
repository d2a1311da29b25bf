"""Verdict stability by resampling the profiled iterations; agreement between repeats of one configuration."""

import copy
import json

from analysis_samples import MIB, gemm_run, op, run

from console.analysis import bottleneck
from console.analysis.verdict_stability import (
    BATCH,
    MIN_ROWS,
    RESAMPLES,
    STABLE,
    judge,
    repeat_agreement,
    stability,
)


def with_iterations(r, rows, walls=None):
    """Attach a per-iteration table whose columns sum to the op rows' totals (as the engine records it)."""
    names = [o["op"] for o in r["ops"]]
    totals = [sum(row[k] for row in rows) for k in range(len(names))]
    for o, total in zip(r["ops"], totals, strict=True):
        assert abs(o["time_s"] - total) < 1e-9 * max(1.0, total)
    r["profile"]["per_iteration"] = {"ops": names, "times_s": rows, "wall_s": walls, "iterations_per_row": 1}
    r["profile"]["iterations"] = len(rows)
    return r


def steady_gemm(n=20):
    """A GEMM chain whose iterations repeat within ±1%: compute, clear-cut."""
    rows = [[0.02 * (1 + 0.01 * ((i % 3) - 1)), 0.0005] for i in range(n)]
    gemm, gelu = sum(r[0] for r in rows), sum(r[1] for r in rows)
    r = run([op("aten::addmm", 2 * n, gemm, flops=2 * n * 0.5e9, moved=2 * n * 8e6),
             op("aten::gelu", 2 * n, gelu, moved=2 * n * 4e6)], iterations=n)
    return with_iterations(r, rows, walls=[sum(row) * 1.05 for row in rows])


def split_run(n=10):
    """GEMM time and cached elementwise time trade places from one iteration to the next: the profile's totals
    call it compute by a margin just past the noise band, but which iterations are drawn decides the class."""
    rows = []
    for i in range(n):
        heavy = i % 2 == 0
        rows.append([0.050 if heavy else 0.004, 0.010 if heavy else 0.030])
    gemm, add = sum(r[0] for r in rows), sum(r[1] for r in rows)
    per_call = 2 * MIB
    r = run([op("aten::addmm", n, gemm, flops=n * 0.5e9 * 1.1, moved=n * 8e6),
             op("aten::add", 10 * n, add, moved=10 * n * per_call)], iterations=n)
    return with_iterations(r, rows)


def test_a_clear_cut_profile_keeps_its_class_and_is_stable():
    r = steady_gemm()
    plain = bottleneck.diagnose(copy.deepcopy(r))
    v = judge(r)
    json.dumps(v)
    s = v["stability"]
    assert v["class"] == plain["class"] == "compute"
    assert s["available"] and s["share"] >= 0.95 and s["rows"] == 20
    assert s["resamples"] == BATCH  # all agree after the first batch: more draws could not change the answer
    assert v["confidence"] == round(s["share"], 2) and v["confidence_basis"] == "resamples"
    assert v["score"] == plain["confidence"]  # the old margin-based figure stays visible
    assert f"of {BATCH} resamples agree" in v["sentence"] and "Bound by compute" in v["sentence"]


def test_two_close_classes_that_flip_under_resampling_are_inconclusive_with_the_reason():
    r = split_run()
    plain = bottleneck.diagnose(copy.deepcopy(r))
    assert plain["class"] == "compute"  # one profile alone decides …
    v = judge(r)
    s = v["stability"]
    assert s["share"] < STABLE and set(s["classes"]) >= {"compute", "cache-resident"}  # … its resamples do not
    assert v["class"] == bottleneck.INCONCLUSIVE
    assert "of resamples" in v["sentence"] and "cannot separate them" in v["sentence"]
    assert "labconsole analyze --confirm" in v["sentence"] and "--profile-iterations" in v["sentence"]
    assert v["evidence"]["best"].startswith("compute") and v["evidence"]["resampled_classes"] == s["classes"]
    assert v["secondary"] == "cache-resident" == s["runner_up"]  # the rival the confirmation tests against
    assert v["sentence"].startswith(f"Inconclusive: compute in {s['share']:.0%} of resamples, cache-resident in "
                                    f"{s['runner_up_share']:.0%} (a tie within the noise band in ")
    assert v["confidence"] == round(s["share"], 2) < STABLE  # the share of its leading class
    from console.analysis.confirm.plan import leading_pair

    assert leading_pair(v) == ("compute", "cache-resident")  # what --confirm then tests against each other


def test_draws_stop_once_the_share_is_clearly_on_one_side_of_the_threshold():
    from console.analysis.verdict_stability import _settled

    assert _settled(50, 50) and _settled(0, 50) and _settled(30, 50)  # all, none, 60%: the side is clear
    assert not _settled(40, 50) and not _settled(45, 50)  # 80%, 90% of 50: it could still fall either side
    r = steady_gemm()
    assert stability(r, {"class": "compute"})["resamples"] == BATCH
    assert stability(r, {"class": "cache-resident"})["resamples"] == BATCH  # given by no resample: clear too
    assert stability(r, {"class": "compute"}, resamples=RESAMPLES + 7)["resamples"] == BATCH


def test_resampling_is_seeded_and_deterministic():
    assert judge(split_run()) == judge(split_run())
    assert stability(split_run(), {"class": "compute"}, seed=1) == stability(split_run(), {"class": "compute"}, seed=1)


def test_without_a_per_iteration_table_the_score_is_shown_and_says_why():
    v = judge(gemm_run())
    plain = bottleneck.diagnose(gemm_run())
    assert v["class"] == plain["class"] and v["confidence"] == plain["confidence"] == v["score"]
    assert not v["stability"]["available"] and "per-iteration" in v["stability"]["reason"]
    assert v["confidence_basis"].startswith("score (not resampled:")


def test_too_few_iterations_are_not_resampled():
    r = steady_gemm(n=MIN_ROWS - 1)
    v = judge(r)
    assert not v["stability"]["available"] and f"at least {MIN_ROWS}" in v["stability"]["reason"]


def test_a_malformed_table_is_named_not_resampled():
    r = steady_gemm()
    r["profile"]["per_iteration"]["times_s"][3] = [0.1]
    assert "malformed" in judge(r)["stability"]["reason"]


def test_repeat_agreement_text():
    same = repeat_agreement([{"class": "compute"}, {"class": "compute"}], current={"class": "compute"})
    assert same["agree"] and same["classes"] == {"compute": 3} and same["earlier"] == 2
    assert same["text"] == "2 earlier analyses of this configuration: compute, compute; this one agrees (compute)"
    split = repeat_agreement(["inconclusive", "cache-resident"], current="inconclusive")
    assert not split["agree"] and split["classes"] == {"inconclusive": 2, "cache-resident": 1}
    assert split["text"].startswith("2 earlier analyses of this configuration: inconclusive, cache-resident; "
                                    "the repeats disagree (inconclusive ×2, cache-resident ×1)")
    assert "--confirm" in split["text"]
    none = repeat_agreement([], current="compute")
    assert none["agree"] and "no earlier analysis" in none["text"]
    one = repeat_agreement(["compute"])
    assert one["text"] == "1 earlier analysis of this configuration: compute; they agree"


def test_earlier_verdicts_are_those_of_the_same_configuration_oldest_first(tmp_path):
    import argparse

    from console.analysis.verdict_stability import earlier_verdicts
    from console.cli.analyze_cmd import _repeats
    from console.history import HistoryStore

    spec = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "threads": 1}
    with HistoryStore(tmp_path / "h.db") as store:
        ids = []
        for cls, batch in [("compute", 1), ("memory-bandwidth", 8), ("cache-resident", 1), ("compute", 1)]:
            run_id = store.create_run({**spec, "batch": batch})
            store.finish_run(run_id, "completed", summary={"bottleneck": {"class": cls}})
            ids.append(run_id)
        unanalysed = store.create_run(spec)
        store.finish_run(unanalysed, "completed", summary={})
        found = earlier_verdicts(store, ids[-1])
    assert [v["class"] for v in found] == ["compute", "cache-resident"]  # batch 8 is another configuration
    assert repeat_agreement(found, current="compute")["text"].startswith(
        "2 earlier analyses of this configuration: compute, cache-resident; the repeats disagree")
    missing = _repeats({"run_id": ids[-1]}, {"class": "compute"}, argparse.Namespace(db=str(tmp_path / "missing.db")))
    assert missing["earlier"] == 0  # a history that cannot be read: no earlier analyses


def test_the_stored_verdict_carries_its_stability():
    from console.analysis.findings import add_findings

    r = steady_gemm()
    summary = add_findings(dict(r["summary"]), r["spec"], r["profile"], r["ops"], r["machine"])
    assert summary["bottleneck"]["class"] == "compute" and summary["bottleneck"]["stability"]["share"] >= 0.95
