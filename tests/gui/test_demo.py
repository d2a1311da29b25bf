"""Demo mode, offscreen: a playlist with failing items keeps going and records the failures, a race ends with a
verdict, Esc leaves without losing a run, F11 follows the Run page's run, the theme choice is remembered.

Real runs (catalog "mlp", 0.3 s measured) through the window's RunController; the director's order and waiting
are checked against a scripted controller, which costs no worker."""

import uuid
from types import SimpleNamespace

import numpy as np
import pytest
import shiboken6
from PySide6 import QtCore, QtGui

from console.demo.playlist import parse
from console.ui.app import build_main_window
from console.ui.demo import DemoWindow
from console.ui.demo.director import PlaylistDirector
from console.ui.workspace import Busy
from widgets.demo_tiles import FigureTile, tile_number
from widgets.demo_trace import DemoTrace

RUN_TIMEOUT_MS = 120_000
SHORT = {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    yield win
    demo = win.findChild(DemoWindow)
    if demo is not None:
        demo.close()
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(15)


def open_demo(window, playlist, full_screen=False):
    demo = window.enter_demo_mode(parse(playlist), theme_mode="dark", full_screen=full_screen)
    assert isinstance(demo, DemoWindow)
    QtCore.QCoreApplication.processEvents()
    assert demo.isActiveWindow()  # its keys (Esc, D) are its own, not the window's behind it
    return demo


def test_a_playlist_with_failing_items_keeps_going_and_records_the_failures(qtbot, window, tmp_path):
    garbage = tmp_path / "broken.onnx"
    garbage.write_bytes(b"this is not an ONNX model")
    demo = open_demo(window, {"loop": False, "hold_s": 0, "defaults": SHORT, "items": [
        {"name": "missing model", "run": {"model": str(tmp_path / "nowhere.onnx"), "engine": "onnxruntime"}},
        {"name": "broken model", "run": {"model": str(garbage), "engine": "onnxruntime"}},
        {"name": "good run", "run": {"batch": 2}},
    ]}, full_screen=True)
    assert demo.isFullScreen() and not window.isVisible()  # one screen: the window hides behind demo mode
    with qtbot.waitSignal(demo.director.sig_done, timeout=RUN_TIMEOUT_MS) as done:
        pass
    counts = done.args[0]
    assert counts["items"] == 3 and counts["failed_items"] == 2 and counts["runs"] == 2
    missing, broken, good = demo.director.outcomes
    assert missing["status"] == "failed" and missing["run_ids"] == []
    assert 'item 1 ("missing model"), run.model: model file not found' in missing["message"]
    assert "Fix: " in missing["message"]
    assert broken["status"] == "failed" and len(broken["run_ids"]) == 1
    assert good["status"] == "completed"
    # the failed worker's run and the good one are in the history like any other run
    assert window.store.get_run(broken["run_ids"][0])["status"] == "failed"
    stored = window.store.get_run(good["run_ids"][0])
    assert stored["status"] == "completed" and stored["spec"]["name"] == "good run"
    summary = stored["summary"]
    if summary["latency_ms"]["p50"] is not None:
        assert demo.single.latency.value_text() != "—" and demo.single.latency.unit_text() == "ms"
    else:  # a busy machine ran too few iterations to back a median: said, not shown as a number
        assert demo.single.latency.caption_text().startswith("median not reported")
    assert demo.single.throughput.unit_text() == "inferences/s"
    assert demo.single.power.value_text() in ("not available",) or demo.single.power.unit_text() == "W"
    assert demo.current_view() is demo.single and demo.single.status.text() == "Completed"  # the last item stays
    assert "Playlist finished: 2 runs, 2 failed" in demo.footer_text()
    assert "2 runs, 2 failed" in demo.footer_where.text()
    qtbot.keyClick(demo, QtCore.Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: window.isVisible())
    assert window.workspace.measuring is None


def test_a_race_ends_with_its_verdict_and_interval(qtbot, window):
    demo = open_demo(window, {"loop": False, "hold_s": 0, "items": [
        {"name": "batch race", "race": {"both": SHORT, "a": {"batch": 1}, "b": {"batch": 2}, "rounds": 1}}]})
    qtbot.waitUntil(lambda: demo.race.running_side is not None, timeout=RUN_TIMEOUT_MS)
    assert demo.current_view() is demo.race
    assert [parts["head"].text() for parts in demo.race.sides.values()] == ["A · batch 1", "B · batch 2"]
    with qtbot.waitSignal(demo.director.sig_done, timeout=RUN_TIMEOUT_MS):
        pass
    outcome = demo.director.outcomes[-1]
    assert outcome["kind"] == "race" and outcome["status"] == "completed", outcome["message"]
    verdict = demo.race.verdict
    assert verdict["compare"] is not None and verdict["per_sample"]  # batch 1 vs 2 is judged per sample
    assert demo.current_view() is demo.race and not demo.race.banner.isHidden()
    assert demo.race.banner.headline() == verdict["headline"] and demo.race.status.text() == "Race finished"
    # a winner ("95% CI … · block test p …") or, on a noisy machine, "could not tell apart" with its interval
    assert "95% CI " in demo.race.banner.lines()[0]
    assert "block test p" in demo.race.banner.lines()[0] and "1 round each, alternating" in demo.race.banner.lines()[0]
    assert demo.race.trace.marker_labels() == ["A1", "B1"]
    assert demo.race.trace.point_count("A") > 0 and demo.race.trace.point_count("B") > 0
    a, b = (window.store.get_run(run_id) for run_id in outcome["run_ids"])
    assert (a["spec"]["name"], b["spec"]["name"]) == ("batch race · A: batch 1", "batch race · B: batch 2")
    assert a["status"] == b["status"] == "completed"
    for side in ("A", "B"):
        assert demo.race.sides[side]["tiles"]["latency"].caption_text() == "median, 1 round"


def test_esc_mid_run_cancels_the_demos_run_and_keeps_it_in_the_history(qtbot, window):
    demo = open_demo(window, {"hold_s": 0, "items": [{"name": "long", "run": {**SHORT, "duration_s": 120}}]})
    qtbot.waitUntil(lambda: demo.single.live.iterations > 0, timeout=RUN_TIMEOUT_MS)
    run_id = demo.director.run_in_flight
    assert run_id and window.workspace.measuring == "run"
    with qtbot.waitSignal(window.controller.sig_finished, timeout=30_000) as finished:
        qtbot.keyClick(demo, QtCore.Qt.Key.Key_Escape)
    assert not shiboken6.isValid(demo) and window.isVisible()  # closed and freed: nothing kept alive
    record = finished.args[0]
    assert record["run_id"] == run_id and record["status"] == "cancelled"
    assert record["summary"]["iterations"] > 0
    assert window.store.get_run(run_id)["status"] == "cancelled"
    qtbot.wait(300)  # the looping playlist started nothing after leaving
    assert not window.controller.busy and len(window.store.list_runs()) == 1


def test_f11_shows_the_run_pages_run_and_esc_leaves_it_running(qtbot, window):
    window.run_page.form.set_values({**SHORT, "duration_s": 60})
    run_id = window.start_run()
    assert run_id
    action = next(a for a in window.findChildren(QtGui.QAction) if a.shortcut().toString() == "F11")
    action.trigger()
    demo = window.findChild(DemoWindow)
    assert demo is not None and demo.isVisible() and demo.director is None
    qtbot.waitUntil(demo.isActiveWindow)
    qtbot.waitUntil(lambda: demo.single.live.iterations > 0, timeout=RUN_TIMEOUT_MS)
    assert demo.current_view() is demo.single and demo.single.running
    qtbot.waitUntil(lambda: demo.single.latency.value_text() != "—", timeout=10_000)
    qtbot.keyClick(demo, QtCore.Qt.Key.Key_Escape)
    assert window.isVisible() and window.controller.busy  # the presenter's run goes on
    with qtbot.waitSignal(window.controller.sig_finished, timeout=30_000) as finished:
        window.stop_run()
    assert finished.args[0]["run_id"] == run_id


def test_d_switches_light_and_dark_and_the_choice_is_remembered(qtbot, window):
    demo = window.enter_demo_mode(full_screen=False)
    qtbot.waitUntil(demo.isActiveWindow)
    assert demo.current_view() is demo.message and "waiting for a run" in demo.message.banner.headline()
    first = demo.scheme.name
    qtbot.keyClick(demo, QtCore.Qt.Key.Key_D)
    assert demo.scheme.name != first
    assert window.settings.demo_theme() == demo.scheme.name
    chosen = demo.scheme.name
    demo.close()
    qtbot.waitUntil(lambda: not shiboken6.isValid(demo))
    again = window.enter_demo_mode(full_screen=False)
    assert again.scheme.name == chosen
    again.close()


# ---- The director's logic against a scripted controller (no workers)
class ScriptedController(QtCore.QObject):
    """Plays each started run at once: started, measuring, latencies by its batch, finished."""

    sig_event = QtCore.Signal(object)

    def __init__(self, refuse: int = 0, fail: str = ""):
        super().__init__()
        self.started, self.refuse, self.busy, self.session, self.stopped = [], refuse, False, None, 0
        self.fail = fail  # runs whose name contains this fail in the worker

    def start(self, spec):
        if self.refuse:
            self.refuse -= 1
            raise Busy("Run in progress", "A run is in progress on the Run page")
        run_id = uuid.uuid4().hex
        self.started.append(spec.name)
        self.busy = True
        self.session = SimpleNamespace(run_id=run_id, spec=spec, t0_ns=0)
        QtCore.QTimer.singleShot(0, lambda: self._play(run_id, spec))
        return run_id

    def stop(self):
        self.stopped += 1

    def _play(self, run_id, spec):
        t = np.arange(200, dtype=np.int64) * 1_000_000
        latency = np.full(200, spec.batch * 1_000_000, dtype=np.int64) + np.arange(200) % 7
        self.sig_event.emit({"type": "started", "run_id": run_id, "t0_ns": 0, "spec": spec.to_dict()})
        self.sig_event.emit({"type": "phase", "phase": "measuring", "t_ns": 0})
        self.sig_event.emit({"type": "latencies", "t_ns": t.tolist(), "latency_ns": latency.tolist()})
        self.busy = False
        failed = bool(self.fail) and self.fail in spec.name
        self.sig_event.emit({"type": "finished", "run_id": run_id, "status": "failed" if failed else "completed",
                             "message": "worker exited with code 1 during loading" if failed else "",
                             "summary": {"iterations": 200, "duration_s": 0.2, "valid": True,
                                         "throughput_per_s": 1000.0 / spec.batch}})


def test_rounds_alternate_a_busy_console_is_waited_for_and_the_playlist_loops(qtbot):
    controller = ScriptedController(refuse=2)
    playlist = parse({"hold_s": 0, "defaults": {"model": "mlp"}, "items": [
        {"name": "r", "race": {"a": {"batch": 1}, "b": {"batch": 2}, "rounds": 3}},
        {"name": "bad", "run": {"batch": 0}}]})
    director = PlaylistDirector(controller, playlist)
    waits = []
    director.sig_waiting.connect(waits.append)
    director.start()
    qtbot.waitUntil(lambda: director.counts["loops"] >= 2, timeout=20_000)
    in_flight = director.run_in_flight
    assert director.stop() is bool(in_flight)
    assert waits and waits[0].startswith("Waiting: Run in progress elsewhere")  # waited, not failed
    sides = [name.rsplit("· ", 1)[1][0] for name in controller.started[:6]]
    assert sides == ["A", "B", "B", "A", "A", "B"]
    race, bad = director.outcomes[:2]
    assert race["status"] == "completed" and race["verdict"]["winner"] is None  # same time per sample
    assert bad["status"] == "failed" and "run.batch" in bad["message"]
    assert director.counts["races"] >= 2 and director.counts["failed_items"] >= 2
    assert controller.stopped == int(bool(in_flight))  # only the director's own run in flight is cancelled


def test_a_race_whose_round_fails_shows_no_verdict_and_the_playlist_goes_on(qtbot):
    controller = ScriptedController(fail="B: ")
    playlist = parse({"loop": False, "hold_s": 0, "defaults": {"model": "mlp"}, "items": [
        {"name": "race", "race": {"a": {"batch": 1}, "b": {"batch": 2}, "rounds": 2}},
        {"name": "after", "run": {"batch": 1}}]})
    demo = DemoWindow(controller, playlist, "light")
    qtbot.addWidget(demo)
    demo.show()
    demo.start()
    qtbot.waitUntil(lambda: not demo.director.running, timeout=20_000)
    race, after = demo.director.outcomes
    assert race["status"] == "failed" and "round 1 of B (batch 2) failed: worker exited" in race["message"]
    assert len(race["run_ids"]) == 2  # A's first round, then B's, which failed: no more rounds of this race
    assert demo.race.banner.headline() == "No verdict" and demo.race.banner.tone() == "bad"
    assert after["status"] == "completed"
    assert demo.current_view() is demo.single and demo.single.status.text() == "Completed"
    demo.close()


def test_a_trace_draws_every_round_of_a_side_across_its_gaps(qtbot):
    trace = DemoTrace()
    qtbot.addWidget(trace)
    trace.resize(900, 400)
    trace.show()
    trace.set_series("A", "A · PyTorch", "#1f77b4")
    for start in (0.0, 5.0):  # two rounds of A with B's round between them on the axis
        trace.add_points("A", np.linspace(start, start + 1, 400), np.full(400, 1.0 + start))
        trace.add_median("A", start + 1, 1.0 + start)
        trace.add_gap("A")
    trace.refresh()
    x, y = trace.drawn("A")
    assert x.max() >= 5.99 and (y[x > 5] == 6.0).any()  # the second round is drawn, not clipped away
    mx, my = trace.drawn("A", median=True)
    assert 6.0 in mx and np.isnan(my).any()  # the median line breaks between the rounds
    assert "A · PyTorch" in trace.legend_text()


def test_tiles_say_not_available_and_estimated_never_zero(qtbot):
    tile = FigureTile("Power")
    qtbot.addWidget(tile)
    tile.set_unavailable("no power source on this machine (rapl)", "rapl: no /sys/class/powercap")
    assert tile.value_text() == "not available" and tile.unit_text() == ""
    tile.set_value(41.23, "W", "mean of the last second", estimated=True)
    assert (tile.value_text(), tile.unit_text(), tile.is_estimated()) == ("41.2", "W", True)
    tile.set_value(None, "W")
    assert tile.value_text() == "—" and tile.unit_text() == ""
    assert [tile_number(v) for v in (12_345, 1_234, 0.08351, 2.5e6)] == ["12.3k", "1,234", "0.0835", "2.50M"]


def test_bursts_do_not_flatten_the_median_and_are_said_to_be_off_scale(qtbot):
    trace = DemoTrace()
    qtbot.addWidget(trace)
    trace.set_series("run", "latency per iteration", "#1f77b4")
    latency = np.where(np.arange(2000) % 10 == 0, 80.0, 1.0)  # a busy machine: every tenth iteration stalls
    trace.add_points("run", np.linspace(0, 2, 2000), latency)
    trace.refresh()
    low, high = trace.plot_item.viewRange()[1]
    assert low == 0 and high == 4.0  # 4 × the median: the median line stays readable
    assert trace.off_scale_text() == "10% off scale (max 80.0 ms)"
    trace.add_median("run", 2.0, 10.0)  # the bold line (here a contended second) is always wholly in view
    trace.refresh()
    assert trace.plot_item.viewRange()[1][1] == pytest.approx(11.5)
    trace.clear()
    trace.set_series("run", "latency per iteration", "#1f77b4")
    trace.add_points("run", np.linspace(0, 2, 2000), np.linspace(1.0, 1.2, 2000))  # a quiet machine
    trace.refresh()
    assert trace.plot_item.viewRange()[1][1] == pytest.approx(1.3 * np.percentile(np.linspace(1, 1.2, 2000), 99))
    assert trace.off_scale_text() == ""
