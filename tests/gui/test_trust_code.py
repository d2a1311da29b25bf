"""A TorchScript file in the window: it is code, so Run asks first; No starts nothing, Yes trusts it for that run.

The file is made by a separate Python (this process stays torch-free, as the window's is); its inputs are read in
the window's inspection worker, which never loads it.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from console.ui.app import build_main_window
from engines import sandbox

SCRIPT = """
import sys
import torch


class Ones(torch.nn.Module):
    def forward(self, n: int) -> torch.Tensor:
        return torch.ones(n) * 2


torch.jit.script(Ones()).save(sys.argv[1])
"""


@pytest.fixture
def window(qtbot, tmp_path):
    win = build_main_window(tmp_path / "history.db", discover_targets=False)
    qtbot.addWidget(win)
    win.show()
    yield win
    if win.controller is not None and win.controller.busy:
        win.controller.stop()
        win.controller.wait(15)


def torchscript_file(tmp_path: Path) -> str:
    maker = tmp_path / "make_ones.py"
    maker.write_text(SCRIPT)
    path = tmp_path / "ones.pt"
    subprocess.run([sys.executable, str(maker), str(path)], check=True, timeout=300, capture_output=True)
    return str(path.resolve())


def test_running_torchscript_asks_first_and_yes_trusts_it_for_that_run(qtbot, window, tmp_path, monkeypatch):
    path = torchscript_file(tmp_path)
    assert window.add_model_file(path)
    qtbot.waitUntil(lambda: path in window._code_files, timeout=120_000)
    assert window._code_files[path] is True  # from the inspection, which read the signature without loading
    window.run_page.inputs._table.item(0, 3).setText("3")
    window.run_page.form.set_values({"duration_s": 0.3, "warmup_s": 0.05})
    buttons = QtWidgets.QMessageBox.StandardButton
    asked, answer = [], [buttons.No]

    def question(parent, title, text, *args):
        asked.append((title, text))
        return answer[0]

    monkeypatch.setattr(QtWidgets.QMessageBox, "question", question)
    assert window.start_run() is None and not window.controller.busy
    ((title, text),) = asked
    assert title == "This model file is code"
    assert "ones.pt is TorchScript, and TorchScript is code" in text and "can create and write files" in text
    abi, _ = sandbox.available()
    if abi:
        assert f"sandboxed here (Landlock ABI {abi}): it can write only in its own temporary folder" in text
    else:
        assert "offers no sandbox" in text
    assert "was not trusted" in window.status.currentMessage()

    answer[0] = buttons.Yes
    with qtbot.waitSignal(window.controller.sig_finished, timeout=240_000) as finished:
        assert window.start_run() is not None
    record = finished.args[0]
    assert record["status"] == "completed", record["message"]
    assert record["spec"]["trust_code"] is True and len(asked) == 2
    assert record["environment"]["sandbox"]["active"] is bool(abi)
    assert "trust_code" not in window.run_page.form.values()  # trusted for that run only, never remembered

    # Re-run of that stored run (it trusted its file; a colleague's imported history could too): asked again
    answer[0] = buttons.No
    assert window.rerun(record["spec"]) is None and len(asked) == 3 and not window.controller.busy
