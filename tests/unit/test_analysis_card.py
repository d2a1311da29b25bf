"""console.machine.cards.card_for_analysis and console.analysis.finished_run.analysis_verdict: where the CLI's and the
window's Analyze get their machine card and verdict."""

import socket

from analysis_samples import CARD, gemm_run

from console.analysis.finished_run import analysis_verdict
from console.machine.cards import MachineError, card_before_analysis, card_for_analysis

MINE = {**CARD, "host": socket.gethostname(), "quick": False}


def test_a_fresh_history_measures_once_then_reuses_the_stored_card(tmp_path, monkeypatch):
    db, calls = tmp_path / "history.db", []

    def measure(target, storage_dir=None, repeats=5, quick=False, on_progress=None, timeout_s=None):
        calls.append((target, quick))
        on_progress("peak FLOP/s")
        return dict(MINE)

    monkeypatch.setattr("console.machine.cards.measure", measure)
    heard = []
    assert card_before_analysis("cpu", db) is None
    first = card_for_analysis("cpu", db, on_progress=heard.append)
    assert first.measured and first.note == "" and first.card["card_id"] and heard == ["peak FLOP/s"]
    second = card_for_analysis("cpu", db)
    assert not second.measured and second.card["card_id"] == first.card["card_id"]
    assert card_before_analysis("cpu", db)["card_id"] == first.card["card_id"] and calls == [("cpu", False)]


def test_a_card_that_cannot_be_measured_is_a_note_not_an_error(tmp_path, monkeypatch):
    def measure(*_args, **_kwargs):
        raise MachineError("no such device: cuda:7")

    monkeypatch.setattr("console.machine.cards.measure", measure)
    answer = card_for_analysis("cpu", tmp_path / "history.db")
    assert answer.card is None and not answer.measured
    assert "no machine card (MachineError: no such device: cuda:7)" in answer.note


def test_the_verdict_is_the_stored_one_else_judged_against_the_card():
    r = gemm_run()
    record = {"status": "completed", "spec": r["spec"], "summary": r["summary"], "ops": r["ops"],
              "profile": r["profile"]}
    assert analysis_verdict(record, CARD)["class"] == "compute"
    stored = {**record, "summary": {**record["summary"], "bottleneck": {"class": "cache-resident"}}}
    assert analysis_verdict(stored, CARD)["class"] == "cache-resident"  # what the session stored wins
    assert analysis_verdict({**record, "status": "failed"}, CARD) is None
    assert analysis_verdict({**record, "ops": []}, CARD) is None
