"""A sweep of a TorchScript file asks the Run page's question first: No starts nothing, Yes trusts the file for
that sweep's points (trust_code in its base), and a file that is not code is never asked about.

The file is made by a separate Python (this process stays torch-free, as the window's is).
"""

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from console.history import HistoryWriter
from console.ui.app import build_main_window
from console.ui.sweep_page import SweepPage
from console.ui.workspace import Workspace

SCRIPT = """
import sys
import torch


class Double(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


torch.jit.script(Double()).save(sys.argv[1])
"""
SWEEP_TIMEOUT_MS = 240_000


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(win)
    win.show()
    yield win
    win.sweep_page.shutdown()


@pytest.fixture
def question(monkeypatch):
    """QMessageBox.question, answering what `answer[0]` says and recording what it was asked."""
    buttons = QtWidgets.QMessageBox.StandardButton
    asked, answer = [], [buttons.No]

    def ask(parent, title, text, *args):
        asked.append((title, text))
        return answer[0]

    monkeypatch.setattr(QtWidgets.QMessageBox, "question", ask)
    return asked, answer


def torchscript_file(tmp_path: Path) -> str:
    maker = tmp_path / "make_double.py"
    maker.write_text(SCRIPT)
    path = tmp_path / "double.pt"
    subprocess.run([sys.executable, str(maker), str(path)], check=True, timeout=300, capture_output=True)
    return str(path.resolve())


def test_a_torchscript_sweep_asks_first_no_starts_nothing_yes_trusts_its_points(qtbot, window, tmp_path, question):
    asked, answer = question
    path = torchscript_file(tmp_path)
    assert window.add_model_file(path)
    qtbot.waitUntil(lambda: path in window._code_files, timeout=120_000)
    window.run_page.inputs._table.item(0, 3).setText("1x4")  # a Tensor input: the file records no shape
    page = window.sweep_page
    page.set_fields(batch="1")
    page.duration.setValue(0.3)

    assert page.start_sweep() is False and not page.running
    ((title, text),) = asked
    assert title == "This model file is code"
    assert "double.pt is TorchScript, and TorchScript is code" in text  # the Run page's own question
    assert "double.pt is code (TorchScript) and was not trusted" in page._error.text()
    assert window.workspace.measuring is None and window.workspace.store.list_sweeps() == []

    answer[0] = QtWidgets.QMessageBox.StandardButton.Yes
    with qtbot.waitSignal(page.sig_sweep_finished, timeout=SWEEP_TIMEOUT_MS) as finished:
        assert page.start_sweep() is True
    record = finished.args[0]
    assert len(asked) == 2
    assert [p["status"] for p in record["points"]] == ["completed"], [p["message"] for p in record["points"]]
    assert record["base"]["trust_code"] is True
    (run,) = window.workspace.store.runs_of_sweep(record["sweep_id"])
    assert run["spec"]["trust_code"] is True
    assert "trust_code" not in window.run_page.form.values()  # trusted for that sweep only, never remembered


@pytest.mark.parametrize(("code", "yes", "trusted"), [(False, True, None), (True, True, True), (True, False, None)],
                         ids=["not-code", "code-yes", "code-no"])
def test_only_a_file_that_is_code_is_asked_about_and_only_yes_sets_trust(qtbot, tmp_path, monkeypatch, code, yes,
                                                                        trusted):
    from console.sweep import SweepError
    from console.ui import sweep_page

    bases = []

    def sweep_run(base, *args, **kwargs):  # what the sweep would start from; nothing runs
        bases.append(dict(base))
        raise SweepError("", "recorded")

    monkeypatch.setattr(sweep_page, "SweepRun", sweep_run)
    writer = HistoryWriter.open(tmp_path / "h.db")
    workspace = Workspace(tmp_path / "h.db", writer, telemetry_hz=None)
    model = str(tmp_path / "model.pt")
    asked = []
    page = SweepPage(workspace, base_values=lambda: {"model": model, "target": "cpu"},
                     is_code=lambda path: path == model and code,
                     trusts_code=lambda path: asked.append(path) or yes)
    qtbot.addWidget(page)
    page.set_fields(batch="1")
    assert page.start_sweep() is False
    assert asked == ([model] if code else [])
    if code and not yes:
        assert bases == [] and "model.pt is code (TorchScript) and was not trusted" in page._error.text()
    else:
        (base,) = bases
        assert base.get("trust_code") is trusted
    page._base_values = lambda: {"model": "mlp", "target": "cpu"}  # a catalog model: never asked about
    asked.clear()
    page.start_sweep()
    assert asked == [] and "trust_code" not in bases[-1]
    writer.close()
