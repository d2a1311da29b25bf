"""The window on a lab cluster: other nodes' targets in the Run page as node/target, and a run on one of them streams
into the plots, lands in the history under the node's host, stops on Esc, and fails clearly when its node is lost.

One cluster for the module, as in tests/e2e/test_cluster.py (ray.cluster_utils.Cluster: a head that takes no runs
and fake nodes with their own labels and host names, all on this machine). Screenshots go to /tmp/cluster-shots.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab_cluster import TOKEN, lab_cluster, node_args  # noqa: E402 — before Ray: it reads the token once

ray = pytest.importorskip("ray", reason="the cluster extra is not installed (pip install 'lab-console[cluster]')")

from PySide6 import QtWidgets  # noqa: E402

from console.ui.app import build_main_window  # noqa: E402

SHOTS = Path("/tmp/cluster-shots")
RUN_TIMEOUT_MS = 180_000
# This machine's own targets, as discovery gives them (the window's own discovery is off in these tests)
LOCAL = [{"id": "cpu", "name": "host CPU", "kind": "cpu", "available": True, "reason": "",
          "engines": ["torch", "onnxruntime"],
          "engine_details": {"torch": {"available": True, "reason": "", "precisions": ["fp32"], "notes": {}},
                             "onnxruntime": {"available": True, "reason": "", "precisions": ["fp32"], "notes": {}}}}]




@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with lab_cluster(str(tmp_path_factory.mktemp("ray"))) as made:
        yield made


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    win._set_targets(LOCAL)
    yield win
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(30)


def _join(qtbot, win, address: str) -> list[dict]:
    with qtbot.waitSignal(win._cluster.sig_targets, timeout=RUN_TIMEOUT_MS) as joined:
        assert win.connect_cluster(address)
    return joined.args[0]


def _target_items(win) -> dict[str, bool]:
    """The Run page's target list: value → enabled."""
    from widgets.run_form import _VALUE_ROLE

    combo = win.run_page.form._combo("target")
    return {combo.itemData(i, _VALUE_ROLE): combo.model().item(i).isEnabled() for i in range(combo.count())}


def _start_on(qtbot, win, target: str, duration_s: float) -> list[dict]:
    """Start a run on `target` from the form; returns the list the run's events are appended to."""
    events: list[dict] = []
    win.controller.sig_event.connect(lambda e: events.append({"type": e["type"], "busy": win.controller.busy,
                                                              "points": win.run_page.plots.latency.data()[1].size}))
    win.run_page.form.set_values({"model": "mlp", "target": target, "duration_s": duration_s, "batch": 1})
    assert win.run_page.form.values()["target"] == target
    assert win.start_run() is not None
    return events


def _measuring(qtbot, win) -> None:
    qtbot.waitUntil(lambda: win.run_page.plots.latency.data()[1].size > 0 or not win.controller.busy,
                    timeout=RUN_TIMEOUT_MS)
    assert win.controller.busy, win.controller.wait(0) and win.controller.wait(0)["message"]


def _finished(qtbot, win) -> dict:
    qtbot.waitUntil(lambda: not win.controller.busy, timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: win.run_page.progress.status() is not None, timeout=10_000)
    return win.controller.wait(0)


def test_the_window_starts_without_importing_ray():
    done = subprocess.run([sys.executable, "-c", "import sys, console.ui.app, console.ui.main_window; "
                                                 "print('ray' in sys.modules)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_other_nodes_targets_appear_as_node_slash_target(qtbot, window, lab):
    targets = _join(qtbot, window, lab["address"])
    items = _target_items(window)
    assert items.get("cpu") is True  # this machine's own, first
    assert items.get("lab-a/cpu") is True and items.get("lab-b/cpu") is True
    assert list(items)[0] == "cpu"
    assert {t["node"]["host"] for t in targets} == {"lab-a", "lab-b"}  # the head takes no runs: not offered
    assert window.settings.cluster_address() == lab["address"]  # remembered; the token is not
    qs = window.settings._qs
    assert all(TOKEN not in str(qs.value(key)) for key in qs.allKeys())
    label = window.findChild(QtWidgets.QLabel, "cluster_label")
    assert label.isVisible() and "2 nodes" in label.text()
    window.run_page.form.set_values({"target": "lab-a/cpu"})
    combo = window.run_page.form._combo("target")
    combo.showPopup()
    qtbot.wait(200)
    window.grab().save(str(SHOTS / "targets-window.png"))
    combo.view().window().grab().save(str(SHOTS / "targets-list.png"))
    combo.hidePopup()


def test_a_run_on_a_node_streams_into_the_plots_and_lands_under_its_host(qtbot, window, lab):
    _join(qtbot, window, lab["address"])
    events = _start_on(qtbot, window, "lab-b/cpu", duration_s=4.0)
    _measuring(qtbot, window)
    qtbot.wait(1500)
    window.grab().save(str(SHOTS / "remote-run-midway.png"))
    record = _finished(qtbot, window)
    assert record["status"] == "completed", record["message"]
    kinds = [e["type"] for e in events]
    assert kinds.index("node") < kinds.index("latencies") < kinds.index("finished")
    # live: latency batches reached the plots while the run was still going, more than one of them
    live = [e for e in events if e["type"] == "latencies" and e["busy"]]
    assert len(live) > 1
    assert any(e["type"] == "samples" for e in events)  # the node's telemetry, streamed with the run
    window.run_page.plots.refresh()
    assert window.run_page.plots.latency.data()[1].size == record["summary"]["iterations"]
    assert "CPU total" in window.run_page.plots.cpu.series_names()
    assert "lab-b" in window.run_page.summary.message_text()
    run = window.store.get_run(record["run_id"])
    assert run["hostname"] == "lab-b" and run["status"] == "completed"
    assert run["target"] == "cpu"  # the node's target id; the node is the run's host
    window.history_page.reload()
    assert window.history_page.table.run_id_at(0) == record["run_id"]
    window.grab().save(str(SHOTS / "remote-run-finished.png"))


def test_stop_cancels_the_run_on_the_node(qtbot, window, lab):
    _join(qtbot, window, lab["address"])
    _start_on(qtbot, window, "lab-a/cpu", duration_s=120.0)
    _measuring(qtbot, window)
    window.stop_run()
    record = _finished(qtbot, window)
    assert record["status"] == "cancelled" and "ray.cancel" in record["message"]
    assert record["summary"]["iterations"] > 0
    assert window.run_page.progress.status() == "cancelled"
    stored = window.store.get_run(record["run_id"])
    assert stored["status"] == "cancelled" and stored["hostname"] == "lab-a"
    window.grab().save(str(SHOTS / "remote-run-cancelled.png"))


def test_a_node_lost_mid_run_ends_it_failed_with_the_cause(qtbot, window, lab):
    cluster = lab["cluster"]
    node = cluster.add_node(**node_args("fake-c", "lab-c"))
    cluster.wait_for_nodes()
    _join(qtbot, window, lab["address"])
    assert _target_items(window).get("lab-c/cpu") is True
    _start_on(qtbot, window, "lab-c/cpu", duration_s=120.0)
    _measuring(qtbot, window)
    cluster.remove_node(node, allow_graceful=False)
    record = _finished(qtbot, window)
    assert record["status"] == "failed"
    message = window.run_page.summary.message_text()
    assert "lab-c" in message and ("lost" in message or "died" in message), message
    assert window.run_page.progress.status() == "failed"
    assert window.store.get_run(record["run_id"])["status"] == "failed"
    window.grab().save(str(SHOTS / "remote-run-node-lost.png"))


def test_a_cluster_that_cannot_be_joined_says_how_to_fix_it(qtbot, window, lab, monkeypatch, tmp_path):
    with qtbot.waitSignal(window._cluster.sig_failed, timeout=60_000):
        window.connect_cluster("127.0.0.1:1")
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert dialog is not None and dialog.windowTitle() == "Cannot join the lab cluster"
    assert "nothing answers at 127.0.0.1:1" in dialog.text() and "labconsole node start --head" in dialog.text()
    dialog.close()
    dialog.deleteLater()
    qtbot.wait(50)
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token either
    with qtbot.waitSignal(window._cluster.sig_failed, timeout=60_000) as failed:
        window.connect_cluster(lab["address"])
    assert "no Ray cluster token" in failed.args[0] and "RAY_AUTH_TOKEN" in failed.args[0]
    assert not any("/" in value for value in _target_items(window))  # nothing of a cluster is offered


def test_a_fleet_sweep_records_each_point_under_its_node_and_the_pages_show_it(qtbot, window, lab):
    import json

    env = {**os.environ, "LABCONSOLE_DB": str(window.db_path)}
    done = subprocess.run([sys.executable, "-m", "console", "sweep", "--model", "mlp", "--batch", "1,2",
                           "--duration", "1", "--cluster", lab["address"], "--on", "accel=fake-a,accel=fake-b",
                           "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {(p["point"]["on"], p["hostname"]) for p in report["points"]} == {
        ("accel=fake-a", "lab-a"), ("accel=fake-b", "lab-b")}
    assert [p["label"] for p in report["points"]][:2] == ["on accel=fake-a · b1", "on accel=fake-a · b2"]
    assert TOKEN not in done.stdout + done.stderr
    window.sweep_page.reload()
    window.open_sweep(report["sweep_id"])
    table = window.sweep_page.table
    machine = table.columnCount() - 1
    assert table.horizontalHeaderItem(machine).text() == "Machine"
    assert [table.item(r, machine).text() for r in range(table.rowCount())] == ["lab-a", "lab-a", "lab-b", "lab-b"]
    window.grab().save(str(SHOTS / "fleet-sweep.png"))
    by_host = {p["hostname"]: p["run_id"] for p in report["points"]}
    window.compare_runs([by_host["lab-a"], by_host["lab-b"]])
    page = window.page("compare")
    qtbot.waitUntil(lambda: not page.busy, timeout=30_000)
    labels = [run["label"] for run in page.data["runs"]]
    assert labels[0].endswith(" · on lab-a") and labels[1].endswith(" · on lab-b"), labels
    qtbot.wait(300)
    window.grab().save(str(SHOTS / "fleet-compare.png"))


def test_a_fleet_sweep_started_from_the_sweeps_page_runs_each_point_on_its_node(qtbot, window, lab):
    _join(qtbot, window, lab["address"])
    page = window.sweep_page
    window.run_page.form.set_values({"model": "mlp", "target": "cpu", "batch": 1})
    page.set_fields(batch="1", on="accel=fake-a,accel=fake-b")
    page.duration.setValue(0.5)
    with qtbot.waitSignal(page.sig_sweep_finished, timeout=RUN_TIMEOUT_MS) as finished:
        assert page.start_sweep() is True, page._error.text()
    record = finished.args[0]
    assert record["status"] == "completed", record
    machine = page.table.columnCount() - 1
    assert [page.table.item(r, machine).text() for r in range(page.table.rowCount())] == ["lab-a", "lab-b"]
    window.show_page("sweeps")
    qtbot.wait(300)
    window.grab().save(str(SHOTS / "fleet-sweep-from-page.png"))
