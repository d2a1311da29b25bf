"""The Confirm action in the window, offscreen, with a fake confirmation (console.cli.analyze_confirm.confirm_run's
signature; no worker is spawned): the button's state and its reasons, progress while the rounds go on, Cancel,
the answer shown beside the verdict and stored with the run, and the History page showing a stored one."""

import threading
from types import SimpleNamespace

import pytest
from PySide6 import QtCore

from console.analysis.summary_markdown import run_markdown
from console.cli.analyze_confirm import store as store_confirmation
from console.history import HistoryStore
from console.ui.app import build_main_window
from console.ui.confirm_action import detail, headline, why_not
from console.ui.workspace import CONFIRM, RUN, Busy
from engines.spec import RunSpec

VERDICT = {"class": "compute", "confidence": 0.8, "secondary": "host-overhead",
           "scores": {"compute": 0.8, "host-overhead": 0.2},
           "sentence": "Bound by compute (80%): 78% of op time in GEMMs", "recommendation": "…", "evidence": {}}
SUMMARY = {"iterations": 900, "batch": 1, "duration_s": 3.0, "throughput_per_s": 300.0,
           "latency_ms": {"p50": 3.3, "p90": 3.5, "p99": 4.0, "mean": 3.4}, "valid": True, "invalid_reasons": []}
OPS = [{"op": "aten::linear", "calls": 40, "time_s": 0.048, "flops": 5.2e7, "bytes": 1.05e8}]
EXPERIMENT = {"intervention": "batch ×4", "predicted": {"class": "compute", "range": [3.0, 4.5]},
              "rival": {"class": "host-overhead", "range": [0.8, 1.25]}, "ratio": 3.91, "ci95": [3.72, 4.08],
              "rounds": 4, "max_rounds": 10, "outcome": "as predicted",
              "sentence": "batch ×4: ×3.91 [3.72, 4.08] over 4 rounds a side; compute predicted ×3–4.5 — as predicted"}
CONFIRMED = {"outcome": "confirmed", "verdict": "compute", "tested": "compute", "rival": "host-overhead",
             "says": "compute", "rules_out": ["host-overhead"], "also_fits": [], "experiments": [EXPERIMENT],
             "untestable": ["threads ×2: other processes used half a core as the run started"], "notes": [],
             "sentence": "confirmed: compute over host-overhead — batch ×4 ×3.91 within ×3–4.5; rules out "
                         "host-overhead", "round_s": 2.0}
PLANNED = SimpleNamespace(axis=SimpleNamespace(name="batch ×4"),
                          tested=SimpleNamespace(cls="compute", to_dict=lambda: {"range": [3.0, 4.5]}))


class FakeSession:
    def __init__(self):
        self.cancelled = threading.Event()

    def cancel(self):
        self.cancelled.set()


class FakeConfirm:
    """confirm_run's stand-in: says its plan, hands over one round's session, reports a round, waits for `go`
    (or the session's cancel), then stores and returns its block as confirm_run does."""

    def __init__(self, block=CONFIRMED):
        self.block, self.calls, self.go, self.session = block, [], threading.Event(), FakeSession()

    def __call__(self, db, spec, record, verdict, card, max_rounds, partition, on_text=None, on_progress=None,
                 on_session=None):
        self.calls.append({"db": db, "spec": spec, "record": record, "verdict": verdict, "card": card,
                           "max_rounds": max_rounds, "partition": partition})
        on_text("  … confirming compute: batch ×4 (predicted ×3–4.5, host-overhead ×0.8–1.25)")
        on_session(self.session)
        on_progress(PLANNED, {"side": "A", "round": 2, "n": 1204})
        while not (self.go.is_set() or self.session.cancelled.is_set()):
            self.go.wait(0.01)
        if self.session.cancelled.is_set():  # run_confirmation: a cancelled round stops it, and it is stored
            block = {"outcome": "failed", "sentence": "not finished: batch ×4: round 3 of B cancelled",
                     "experiments": [], "untestable": []}
        else:
            block = dict(self.block)
        return block, store_confirmation(db, record["run_id"], verdict, block)


def stored_run(db, verdict=VERDICT, environment=None, status="completed") -> str:
    with HistoryStore(db) as store:
        run_id = store.create_run(RunSpec(model="mlp", duration_s=3.0, profile_iterations=20).to_dict())
        summary = {**SUMMARY, "bottleneck": verdict} if verdict else dict(SUMMARY)
        store.finish_run(run_id, status, summary=summary, environment=environment)
        store.add_ops(run_id, OPS)
    return run_id


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    fake = FakeConfirm()
    win.confirm._confirm = fake
    win.fake = fake
    yield win
    fake.go.set()
    if win.confirm.running:
        qtbot.waitUntil(lambda: not win.confirm.running, timeout=10_000)


def open_on_history(window, run_id):
    window.history_page.reload()
    window.history_page.open_run(run_id)
    window.show_page("history")
    return window.history_page.confirm_panel


def test_the_button_is_off_with_the_reason_when_the_run_cannot_be_confirmed(qtbot, window):
    panel = open_on_history(window, stored_run(window.db_path, verdict=None))
    assert panel.isVisible() and not panel.button.isEnabled()
    assert "no verdict to confirm" in panel.button.toolTip() and "Analyze" in panel.reason_text()
    verdict_run = stored_run(window.db_path)
    panel = open_on_history(window, verdict_run)
    assert panel.button.isEnabled() and panel.reason_text() == ""
    assert "Ctrl+Shift+K" in panel.button.toolTip()
    window.workspace.claim(RUN)  # a run measures: the rounds would share its cores
    window.confirm.refresh()
    assert not panel.button.isEnabled() and "a run is in progress" in panel.button.toolTip()
    with pytest.raises(Busy):  # and the reverse: nothing starts a confirmation past the workspace
        window.workspace.claim(CONFIRM)
    assert window.confirm.confirm("history") is False and window.fake.calls == []
    window.workspace.release(RUN)
    window.confirm.refresh()
    assert panel.button.isEnabled()
    remote = stored_run(window.db_path, environment={"node": {"node_id": "n1" * 8, "host": {"hostname": "lab-b"}}})
    panel = open_on_history(window, remote)
    assert not panel.button.isEnabled() and "lab node lab-b" in panel.button.toolTip()
    failed = stored_run(window.db_path, status="failed")
    assert "the run failed" in (why_not(window.store.get_run(failed)) or "")
    other = {**window.store.get_run(verdict_run), "host_id": "elsewhere", "hostname": "lab-c"}
    assert "measured on lab-c" in why_not(other, None, window.store.host_id)


def test_confirm_on_the_history_page_shows_progress_then_the_answer_stored_with_the_run(qtbot, window):
    run_id = stored_run(window.db_path)
    panel = open_on_history(window, run_id)
    qtbot.mouseClick(panel.button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "round 3 of at most 10" in panel.progress_text(), timeout=10_000)
    assert panel.progress_text().startswith("batch ×4 (experiment 1 of")
    assert panel.cancel_button.isVisible() and not panel.button.isVisible() and panel.bar.isVisible()
    assert window.workspace.measuring == CONFIRM
    assert window.start_run() is None  # no run beside the rounds: the same cores
    call = window.fake.calls[0]
    assert call["partition"] is window.workspace.partition and call["db"] == window.db_path
    assert call["verdict"]["class"] == "compute" and call["record"]["ops"][0]["op"] == "aten::linear"
    assert call["spec"].model == "mlp" and call["max_rounds"] == 10
    with qtbot.waitSignal(window.confirm.sig_finished, timeout=10_000) as finished:
        window.fake.go.set()
    assert finished.args[0] == run_id and finished.args[2] == ""
    assert window.workspace.measuring is None and panel.button.isVisible() and not panel.cancel_button.isVisible()
    assert panel.headline_text() == "Confirmed: compute"
    assert panel.sentence_text().startswith("compute over host-overhead — batch ×4 ×3.91")
    assert panel.table.rowCount() == 1 and panel.cell_text(0, 0) == "batch ×4"
    assert panel.cell_text(0, 2) == "×3.91 [3.72, 4.08]" and panel.cell_text(0, 4) == "as predicted"
    assert "cannot test threads ×2" in panel.notes_text() and f"kept with run {run_id[:8]}" in panel.notes_text()
    stored = window.store.get_run(run_id)["summary"]["bottleneck"]
    assert stored["class"] == "compute" and stored["confirmation"]["outcome"] == "confirmed"
    assert "confirmed" in run_markdown(window.store.get_run(run_id))  # the report's words have it too
    assert window.history_page.copy_markdown() == run_markdown(window.store.get_run(run_id))
    # Opened again (another session of the window): the History page shows the stored confirmation.
    window.history_page.open_run(run_id)
    assert panel.headline_text() == "Confirmed: compute" and panel.table.rowCount() == 1
    assert "again" in panel.button.toolTip()


def test_cancel_stops_the_round_and_keeps_what_the_run_had(qtbot, window):
    run_id = stored_run(window.db_path)
    panel = open_on_history(window, run_id)
    assert window.confirm_verdict() is True  # Run ▸ Confirm verdict acts on the History page in front
    qtbot.waitUntil(lambda: "round 3" in panel.progress_text(), timeout=10_000)
    with qtbot.waitSignal(window.confirm.sig_finished, timeout=10_000) as finished:
        window.stop_run()  # Esc
        assert "Cancelling" in panel.progress_text() and not panel.cancel_button.isEnabled()
    assert window.fake.session.cancelled.is_set() and finished.args[2] == "cancelled"
    assert panel.headline_text() == "Confirmation cancelled" and "nothing was stored" in panel.sentence_text()
    assert "confirmation" not in window.store.get_run(run_id)["summary"]["bottleneck"]  # taken back
    assert window.workspace.measuring is None and panel.button.isEnabled()


def test_the_run_page_confirms_the_run_just_analysed(qtbot, window):
    page = window.run_page
    run_id = stored_run(window.db_path)
    record = {"type": "finished", "status": "completed", "message": "", "run_id": run_id, "ops": OPS,
              "spec": RunSpec(model="mlp", duration_s=3.0).to_dict(), "profile": None,
              "summary": {**SUMMARY, "bottleneck": dict(VERDICT)}, "environment": {}}
    window.controller.sig_event.emit({"type": "started", "run_id": run_id, "t0_ns": 1, "spec": record["spec"]})
    assert not page.confirm_panel.isVisible()
    window.controller.sig_event.emit(record)
    assert page.confirm_panel.isVisible() and page.confirm_panel.button.isEnabled()
    window.show_page("run")
    with qtbot.waitSignal(window.confirm.sig_finished, timeout=10_000):
        window.fake.go.set()
        assert window.confirm_verdict() is True
    assert page.confirm_panel.headline_text() == "Confirmed: compute"
    assert page.last_record["summary"]["bottleneck"]["confirmation"]["outcome"] == "confirmed"
    assert "confirmed" in page.copy_markdown()


def test_the_outcome_words():
    assert headline(CONFIRMED) == "Confirmed: compute"
    refuted = {"outcome": "refuted", "says": "host-overhead", "also_fits": [], "shown": True,
               "sentence": "refuted — the data says host-overhead instead: batch ×4 ×1.02 [0.97, 1.08] where "
                           "compute predicted ×3–4.5"}
    assert headline(refuted) == "Refuted — the data says host-overhead instead"
    assert detail(refuted).startswith("batch ×4 ×1.02")
    assert headline({**refuted, "shown": False, "also_fits": []}) == "Refuted — only host-overhead is not ruled out"
    assert headline({**refuted, "shown": False, "also_fits": ["cache-resident"]}) == \
        "Refuted — only host-overhead and cache-resident are not ruled out"
    assert headline({**refuted, "says": "none of the classes"}) == "Refuted — the data fits none of the classes"
    assert headline({"outcome": "undecided"}) == "Undecided at this machine's noise"
    assert headline({"outcome": "untestable"}) == "Not testable here"


def test_the_round_cap_is_set_beside_the_button_and_remembered(qtbot, window, tmp_path):
    run_id = stored_run(window.db_path)
    panel = open_on_history(window, run_id)
    assert panel.rounds.value() == 10 and panel.rounds.isVisible()
    panel.rounds.setValue(6)  # as typed or stepped: every panel shows it, the next confirmation uses it
    assert window.confirm.max_rounds == 6 and window.run_page.confirm_panel.rounds.value() == 6
    assert "up to 6 rounds a side" in panel.button.toolTip()
    qtbot.mouseClick(panel.button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(window.fake.calls), timeout=10_000)
    assert window.fake.calls[0]["max_rounds"] == 6 and not panel.rounds.isVisible()
    window.fake.go.set()
    qtbot.waitUntil(lambda: not window.confirm.running, timeout=10_000)
    assert panel.rounds.isVisible()
    again = build_main_window(tmp_path / "history.db", telemetry_hz=None, discover_targets=False)
    qtbot.addWidget(again)
    assert again.confirm.max_rounds == 6 and again.history_page.confirm_panel.rounds.value() == 6
