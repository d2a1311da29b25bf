"""The DDP verdict classes (communication, straggler, data-at-scale) from a run's breakdown, without a profile,
and the predicted all-reduce from the history's collectives run or the run's own probe."""

from __future__ import annotations

import pytest
from ddp_samples import MS, ddp_block, ddp_run, steps

from console.analysis import scaling_verdict
from console.analysis.bottleneck import CLASSES, diagnose
from console.analysis.bottleneck_text import LABELS, LEVERS, SHORT_LEVERS
from console.analysis.findings import add_findings
from console.collectives import latest
from engines.ddp.breakdown import summarize
from engines.ddp.predict import allreduce

ROWS = [{"size_bytes": 1_000_000, "busbw_gbs": 1.0}, {"size_bytes": 10_000_000, "busbw_gbs": 2.0}]


def _run(ranks=2, prediction=None, injected=None, scenario="single-stream", extra=None, **kw):
    bd = summarize(steps(ranks, **kw), hosts=[f"node{r}" for r in range(ranks)], scaling="strong", global_batch=8)
    return ddp_run(ddp_block(ranks, bd, prediction=prediction, injected=injected), scenario, **(extra or {}))


def test_the_new_classes_have_labels_and_levers():
    for name in ("communication", "straggler", "data-at-scale"):
        assert name in CLASSES and LABELS[name] and LEVERS[name] and SHORT_LEVERS[name]


def test_exposed_all_reduce_is_communication_with_predicted_beside_measured():
    measured = 30 * MS
    prediction = allreduce([4_000_000], 2, ROWS, source="probe in this run", measured_s=measured)
    v = diagnose(_run(exposed_ms=30.0, busy_ms=30.0, noise_ms=0.1, prediction=prediction))
    assert v["class"] == "communication"
    e = v["evidence"]
    assert e["exposed_ms"] == pytest.approx(30.0) and e["overlap_pct"] == pytest.approx(0.0)
    assert e["bucket_mb"] == 25.0 and e["busbw_source"] == "probe in this run"
    assert e["predicted_allreduce_ms"] == pytest.approx(prediction["predicted_s"] * 1e3, rel=1e-3)
    assert e["measured_allreduce_ms"] == pytest.approx(30.0)
    assert "--bucket-mb" in v["recommendation"] and "--grad-accum" in v["recommendation"]
    assert "probe in this run" in v["recommendation"] and "predicted from probe in this run" in v["sentence"]


def test_a_named_slow_rank_is_a_straggler_with_its_host_and_delay():
    v = diagnose(_run(slow={1: 30.0}, injected={"rank": 1, "ms": 30.0}))
    assert v["class"] == "straggler"
    e = v["evidence"]
    assert e["rank"] == 1 and e["host"] == "node1" and e["delay_ms"] == pytest.approx(30.0, abs=1.0)
    assert "on purpose" in e["injected"] and "node1" in v["recommendation"]
    assert "rank 1 on node1" in v["sentence"]


def test_an_unnamed_straggler_scores_nothing():
    scores, evidence = scaling_verdict.score(_run(ranks=4, noise_ms=0.5, seed=7))
    assert scores["straggler"] == 0.0 and evidence["straggler"]["not_named"]


def test_waiting_for_data_at_two_ranks_is_data_at_scale_not_the_input_pipeline():
    run = _run(data_ms=30.0, scenario="input-pipeline", extra={"wait_fraction": 0.45})
    v = diagnose(run)
    assert v["class"] == "data-at-scale" and v["scores"]["input-pipeline"] == 0.0
    assert v["evidence"]["data_wait_ms"] == pytest.approx(30.0)
    partner = _run(ranks=1, data_ms=2.0)
    scores, evidence = scaling_verdict.score(run, partner=partner)
    assert evidence["data-at-scale"]["rising"] and scores["data-at-scale"] == pytest.approx(1.0)
    alone = scaling_verdict.score(run)[1]["data-at-scale"]
    assert "not known" in alone["partner_wait_share"]


def test_one_rank_or_no_ddp_block_scores_no_ddp_class():
    assert not any(scaling_verdict.score(_run(ranks=1, data_ms=30.0))[0].values())
    assert scaling_verdict.score({"summary": {"scenario": {}}}) == ({c: 0.0 for c in scaling_verdict.CLASSES},
                                                                     {c: {} for c in scaling_verdict.CLASSES})


def test_findings_give_a_ddp_run_its_verdict_without_a_profile():
    run = _run(exposed_ms=30.0, busy_ms=30.0)
    summary = add_findings(run["summary"], run["spec"], None, [], None)
    assert summary["bottleneck"]["class"] == "communication"
    assert "bottleneck" not in add_findings({"scenario": {}}, {"scenario": "single-stream"}, None, [], None)


class _Store:
    """The history's list_runs, as console.collectives.latest reads it."""

    def __init__(self, runs):
        self.runs = runs

    def list_runs(self, **_):
        return self.runs


def _collectives(run_id, ranks, backend="gloo", placement="local", busbw=3.0):
    result = {"backend": backend, "ranks": ranks, "placement": placement,
              "ops": {"all-reduce": [{"size_bytes": 4_000_000, "busbw_gbs": busbw}]}}
    return {"run_id": run_id, "spec": {"scenario": "collectives"}, "summary": {"collectives": result}}


def test_prediction_prefers_the_newest_matching_collectives_run_else_the_probe():
    probe = allreduce([4_000_000], 2, ROWS, source="probe in this run")
    summary = _run(prediction=probe)["summary"]
    store = _Store([_collectives("ffff0000aaaa", 4), _collectives("eeee1111bbbb", 2, placement="ray"),
                    _collectives("dddd2222cccc", 2, busbw=3.0), _collectives("cccc3333dddd", 2, busbw=9.0)])
    found = scaling_verdict.prediction_for(summary, latest(store, n=20))
    assert found["busbw_source"] == "collectives run dddd2222"
    assert found["predicted_s"] == pytest.approx(4_000_000 / 3.0e9)
    assert found["measured_s"] == summary["scenario"]["ddp"]["breakdown"]["comm"]["allreduce_s"]
    assert scaling_verdict.prediction_for(summary, latest(_Store([_collectives("ffff0000aaaa", 4)]), n=20)) == probe
    assert scaling_verdict.prediction_for({"scenario": {}}, latest(store, n=20)) is None
