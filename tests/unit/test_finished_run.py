"""console.analysis.finished_run: a finished run's record from what was measured and what was read, no I/O inside."""

import numpy as np
import pytest

from console.analysis import finished_run
from console.analysis.validity import ValidityRules
from console.run.runner import Outcome

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "mode": "inference",
        "scenario": "single-stream", "precision": "fp32"}
CARD = {"card_id": "c" * 32, "host": "box", "measured_at": "2026-01-01T00:00:00Z", "target": "cpu",
        "peak_flops": {"fp32": 1e11}, "memory_bandwidth_gbs": 10.0}


class Reads:
    """A history that answers as told and remembers what it was asked."""

    def __init__(self, card=None, lost=None, baseline=None, fresh_floor=None, card_error=None, baseline_error=None):
        self._card, self._lost, self._baseline, self._fresh = card, lost, baseline, fresh_floor
        self._card_error, self._baseline_error = card_error, baseline_error
        self.asked: list[str] = []

    def noise_floor_now(self, summary):
        self.asked.append("noise_floor_now")
        return self._fresh

    def card(self):
        self.asked.append("card")
        if self._card_error:
            raise self._card_error
        return self._card

    def lost(self):
        self.asked.append("lost")
        return self._lost

    def baseline(self):
        self.asked.append("baseline")
        if self._baseline_error:
            raise self._baseline_error
        return self._baseline


def measured(n=400, ms=2.0, seed=0):
    rng = np.random.default_rng(seed)
    latency = (rng.normal(ms, ms * 0.01, n).clip(ms * 0.5) * 1e6).astype(np.int64)
    t = np.cumsum(latency) - latency[0]
    return finished_run.Measured(latency_ns=latency, t_ns=t, result={"measured_s": float(latency.sum()) / 1e9},
                                 phases=[["measuring", 0]], t0_ns=-5)


def context(**kwargs):
    return finished_run.Context(run_id="r" * 32, spec=dict(SPEC), environment={"hygiene": {"warnings": ["hot"]}},
                                rules=ValidityRules(), clock=lambda: 123, **kwargs)


def test_a_completed_run_is_judged_against_the_card_it_was_given_and_its_baseline():
    m, reads = measured(), Reads(card=CARD)
    finished = finished_run.finish(m, context(warnings=["console shared cores"], notes=["cost"]), Outcome("completed"),
                                   reads)
    assert finished.status == "completed" and finished.error is None and finished.lost is None
    assert reads.asked == ["noise_floor_now", "card", "lost", "baseline"]  # each asked once, in this order
    summary = finished.summary
    assert summary["machine_card"]["card_id"] == CARD["card_id"] and finished.card is CARD
    assert summary["warnings"] == ["hot", "console shared cores"]
    assert summary["notes"][:3] == ["hot", "console shared cores", "cost"]
    assert summary["t0_ns"] == -5 and summary["t_end_ns"] == 123 and summary["iterations"] == 400
    record = finished_run.record(finished, m, context())
    assert record["type"] == "finished" and record["card"] is CARD and record["spec"] == SPEC


def test_a_run_that_lost_data_fails_and_is_not_compared_with_its_baseline():
    lost = finished_run.storage_lost(400, {"iterations": 40, "samples": 3, "writes": 0, "error": None})
    assert lost["stored_iterations"] == 360 and "40 of its 400 measured iterations, 3 telemetry samples" in lost["message"]
    reads = Reads(lost=lost)
    finished = finished_run.finish(measured(), context(), Outcome("completed"), reads)
    assert finished.status == "failed" and finished.message == lost["message"] == finished.error
    assert finished.summary["stored"] is lost and finished.summary["notes"][0] == lost["message"]
    assert "baseline" not in reads.asked
    failed = finished_run.finish(measured(), context(), Outcome("failed", "worker crashed"), Reads(lost=lost))
    assert failed.message == f"worker crashed; {lost['message']}"


def test_a_finding_or_baseline_that_fails_is_a_note_not_a_lost_run():
    reads = Reads(card_error=OSError("disk gone"), baseline_error=ValueError("bad baseline"))
    finished = finished_run.finish(measured(), context(), Outcome("completed"), reads)
    assert finished.status == "completed" and finished.card is None
    assert "findings could not be added (OSError: disk gone)" in finished.summary["notes"]
    assert "not compared with its baseline (ValueError: bad baseline)" in finished.summary["notes"]


def test_a_baseline_comparison_is_stored_with_the_run():
    slow = measured(ms=4.0, seed=1)
    run = {"run_id": "r" * 32, "spec": SPEC, "environment": {}, "hostname": "box", "fingerprint": "f" * 16}
    baseline = {"run_id": "b" * 32, "spec": SPEC, "environment": {}, "hostname": "box", "fingerprint": "f" * 16}
    finished = finished_run.finish(slow, context(), Outcome("completed"),
                                   Reads(baseline=(run, baseline, measured(seed=2).latency_ns)))
    assert finished.summary["baseline"]["run_id"] == "b" * 32 and finished.summary["baseline"]["verdict"]


def test_an_interrupted_run_is_never_valid_and_says_what_is_missing():
    m = measured(n=100)
    summary = finished_run.interrupted_summary(SPEC, m.t_ns, m.latency_ns, 1, ValidityRules(), "2026-12-04T07:00:00Z")
    assert summary["valid"] is False and summary["invalid_reasons"][0]["rule"] == "interrupted"
    assert summary["stored"]["complete"] is False and summary["stored"]["stored_iterations"] == 100
    assert summary["notes"][0].startswith("the run was interrupted; this summary covers only the 100 iterations")


def test_the_op_table_uses_the_card_of_the_record_and_none_for_a_node():
    ops = [{"op": "aten::linear", "calls": 10, "time_s": 0.01, "flops": 1.1e7, "bytes": 2.2e7}]
    looked_up = []

    def lookup(target):
        looked_up.append(target)
        return CARD

    record = {"spec": SPEC, "ops": ops}
    assert finished_run.roofs_card(record, lookup) is CARD and looked_up == ["cpu"]  # an older record: looked up
    assert finished_run.roofs_card({**record, "card": None}, lookup) is None and looked_up == ["cpu"]
    node = {**record, "card": CARD, "environment": {"node": {"host": {"hostname": "lab-b"}}}}
    assert finished_run.roofs_card(node, lookup) is None  # a node's machine is not this host's
    assert finished_run.op_table(record, CARD)[0]["bound"] in ("memory", "compute")
    assert "bound" not in finished_run.op_table(record, None)[0]


@pytest.mark.parametrize("status", ["failed", "cancelled"])
def test_a_run_that_did_not_complete_has_no_analysis_verdict(status):
    assert finished_run.analysis_verdict({"status": status, "ops": [{"op": "x"}]}, CARD) is None


def test_the_clis_check_after_close_fails_a_run_whose_end_did_not_reach_the_file_even_with_a_storage_finding():
    """A model read beside the card's ceiling (findings' `storage` block) once hid a close that lost data."""
    from console.cli.run_cmd import _checked_storage

    class Writer:
        def flush(self):
            return False

        def unstored(self, run_id):
            return {"iterations": 0, "samples": 0, "writes": 1, "error": None}

    summary = {"iterations": 50, "notes": ["n"], "storage": {"model_read_gbs": 1.2, "storage_read_gbs": 2.0}}
    record = {"run_id": "r" * 32, "status": "completed", "message": "", "summary": summary}
    checked = _checked_storage(record, Writer())
    assert checked["status"] == "failed" and "1 other records" in checked["message"]
    assert checked["summary"]["stored"]["complete"] is False and checked["summary"]["notes"][0] == checked["message"]
    assert checked["summary"]["storage"] == summary["storage"]  # the finding is kept beside what the history lacks
    assert record["summary"]["notes"] == ["n"]  # the record it was given is left as it was
