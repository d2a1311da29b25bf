"""A user's model file in the window: opened, its inputs read in a worker, the engine chosen for it, run."""

import os

import onnx
import pytest
from onnx import TensorProto, helper
from PySide6 import QtWidgets

from console.ui.app import build_main_window


def dynamic_onnx(path):
    """y = x · 2 + bias over a [batch, features] input whose feature size is dynamic too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "features"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "features"])
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "double", [x], [y], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    return win


def test_an_opened_onnx_file_selects_its_engine_asks_for_inputs_and_runs(qtbot, window, tmp_path):
    path = dynamic_onnx(tmp_path / "double.onnx")
    assert window.add_model_file(path)
    form = window.run_page.form
    assert form.values()["model"] == path and form.values()["engine"] == "onnxruntime"
    torch_index = form.combo("engine").findData("torch")
    assert "runs on ONNX Runtime" in form.combo("engine").itemData(torch_index, 3)  # ToolTipRole
    qtbot.waitUntil(lambda: not window.run_page.inputs.isHidden(), timeout=60_000)
    assert window.run_page.inputs.errors() == ["input 'x' needs a shape for batch × features"]
    # Without the missing dimension the run is refused with the reason, nothing is spawned.
    assert window.start_run() is None
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert "input 'x' needs a shape" in dialog.text()
    dialog.close()
    window.run_page.inputs._table.item(0, 3).setText("1x16")
    form.set_values({"duration_s": 0.5})
    with qtbot.waitSignal(window.controller.sig_finished, timeout=120_000) as finished:
        assert window.start_run() is not None
    record = finished.args[0]
    assert record["status"] == "completed", record["message"]
    details = record["environment"]["engine"]
    assert "sha256" in str(details) and record["spec"]["inputs"] == {"x": [1, 16]}
    cold = record["summary"]["cold_start"]
    assert cold["read_bytes"] == os.path.getsize(path) and cold["read_s"] > 0


def test_a_pickle_file_is_refused_when_opened(qtbot, window, tmp_path):
    bad = tmp_path / "weights.pth"
    bad.write_bytes(b"\x80\x04K\x01.")
    assert not window.add_model_file(str(bad))
    dialog = window.findChild(QtWidgets.QMessageBox, "error_dialog")
    assert "never loads" in dialog.text()
    assert str(bad) not in [window.run_page.form.combo("model").itemData(i)
                            for i in range(window.run_page.form.combo("model").count())]
