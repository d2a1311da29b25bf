"""The Machine page: every host's newest card side by side with units, spread and method; Measure runs in the
background with progress and stores the card. The worker is replaced by a function: no timing, no torch."""

import socket
import subprocess
import sys

import pytest

from console.ui.machine_page import MachinePage
from console.ui.pages import PageContext
from console.ui.workspace import RUN, Workspace


def card(host, target, fp32, measured_at="2026-01-02T03:04:05Z", quick=False):
    return {"target": target, "device_name": "Test device", "host": host, "measured_at": measured_at,
            "quick": quick, "repeats": 5, "peak_flops": {"fp32": fp32}, "memory_bandwidth_gbs": 5.31,
            "call_floor_us": {"torch": 21.0, "onnxruntime": 20.0}, "llc_bytes": 8 * 1024 ** 2,
            "caches": {"l3": 8 * 1024 ** 2}, "storage_read_gbs": 1.1,
            "storage": {"dir": "/data", "state": "warm", "bytes": 1, "reason": "posix_fadvise is not available"},
            "h2d_gbs": None, "device_memory_bandwidth_gbs": None,
            "spread": {"peak_flops.fp32": {"min": fp32 * 0.98, "max": fp32 * 1.02, "cv": 0.015, "n": 5}},
            "method": {"peak_flops.fp32": "torch.matmul 2048×2048 fp32, median of 5"},
            "not_available": {"h2d_gbs": "no GPU on this target (cpu)"}}


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace.open(tmp_path / "history.db", worker_entry=lambda *_: None, telemetry_hz=None)
    yield ws
    ws.close()


def make_page(qtbot, workspace, measure=None, targets=()):
    context = PageContext(workspace, base_values=dict, targets=lambda: list(targets))
    page = MachinePage(context, **({"measure_card": measure} if measure else {}))
    qtbot.addWidget(page)
    return page


def test_stored_cards_of_every_host_are_shown_side_by_side(qtbot, workspace, tmp_path):
    workspace.store.add_machine_card(card("lab-gpu-01", "cpu", 9.9e10))
    workspace.store.add_machine_card(card(socket.gethostname(), "cpu", 4.12e10))
    workspace.store.add_machine_card(card(socket.gethostname(), "cpu", 1e9, measured_at="2025-01-01T00:00:00Z"))
    page = make_page(qtbot, workspace)
    view = page.view
    assert view.table.columnCount() == 2
    assert view.table.horizontalHeaderItem(0).text() == f"{socket.gethostname()} · cpu"  # this host first
    assert view.cell_text(0, "peak_flops.fp32") == "41.2 GFLOP/s\n40.4–42 GFLOP/s, cv 1.5%, n=5"
    assert view.cell_text(1, "peak_flops.fp32").startswith("99 GFLOP/s")
    assert view.cell_text(0, "memory_bandwidth_gbs") == "5.31 GB/s"
    assert view.cell_text(0, "call_floor_us.torch") == "21 µs"
    assert view.cell_text(0, "storage_read_gbs") == "1.1 GB/s (warm)"
    assert view.cell_text(0, "h2d_gbs.pinned") == "not available"
    view.choose(0, "peak_flops.fp32")
    assert "Method: torch.matmul 2048×2048 fp32" in view.detail.text()
    view.choose(0, "h2d_gbs.pinned")
    assert "no GPU on this target (cpu)" in view.detail.text()
    view.choose(0, "storage_read_gbs")
    assert "posix_fadvise is not available" in view.detail.text()
    page.resize(1100, 760)
    page.show()
    assert page.grab().save(str(tmp_path / "machine.png"))


def test_an_empty_history_says_how_to_get_a_card(qtbot, workspace):
    page = make_page(qtbot, workspace)
    assert page.view.empty.isVisibleTo(page) and "press Measure" in page.view.empty.text()
    assert not page.view.table.isVisibleTo(page)


def test_measure_runs_in_the_background_shows_progress_and_stores_the_card(qtbot, workspace, tmp_path):
    asked = []

    def fake_measure(target, storage_dir, repeats, quick, on_progress):
        asked.append((target, storage_dir, repeats, quick))
        on_progress("peak FLOP/s fp32: 3/5")
        return card(socket.gethostname(), target, 3.3e10)

    progress = []
    page = make_page(qtbot, workspace, fake_measure,
                     targets=[{"id": "cpu", "kind": "cpu", "available": True},
                              {"id": "cuda:0", "kind": "cuda", "available": True},
                              {"id": "mps", "kind": "mps", "available": False}])
    page.show()  # the discovered targets are read when the page is shown
    assert [page.target.itemText(i) for i in range(page.target.count())] == ["cpu", "cuda:0"]
    page.sig_progress.connect(progress.append)
    page.storage.setText(str(tmp_path))
    page.measure_button.click()
    assert not page.measure_button.isEnabled()
    qtbot.waitUntil(lambda: not page.measuring, timeout=10_000)
    assert asked == [("cpu", str(tmp_path), 5, False)] and progress == ["peak FLOP/s fp32: 3/5"]
    assert page.measure_button.isEnabled() and page.progress.text().startswith("Measured cpu in")
    assert page.view.cell_text(0, "peak_flops.fp32").startswith("33 GFLOP/s")
    assert len(workspace.store.machine_cards()) == 1


def test_a_failed_measurement_says_why(qtbot, workspace, tmp_path):
    def failing(*_args):
        raise ValueError("storage directory /x does not exist: create it, or choose another with --storage DIR")

    page = make_page(qtbot, workspace, failing)
    page.measure_button.click()
    qtbot.waitUntil(lambda: not page.measuring, timeout=10_000)
    assert "does not exist" in page.progress.text() and page.measure_button.isEnabled()


def test_measuring_is_refused_while_a_run_measures(qtbot, workspace):
    page = make_page(qtbot, workspace, lambda *_args: pytest.fail("must not measure during a run"))
    workspace.claim(RUN)
    page.measure_button.click()
    assert not page.measuring and "A run is measuring" in page.progress.text()


def test_the_page_never_imports_the_engines():
    """Checked in a fresh interpreter, so no other test's imports can hide or fake it."""
    probe = ("import sys; import console.ui.machine_page, console.machine.cards, widgets.machine_card_view; "
             "print(sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_window_builds_the_machine_page_and_lists_stored_cards(qtbot, tmp_path):
    """Through the real window: the page is built while the window is still building itself."""
    from console.history import HistoryStore
    from console.ui.app import build_main_window

    with HistoryStore(tmp_path / "history.db") as store:
        store.add_machine_card(card(socket.gethostname(), "cpu", 4.12e10))
    window = build_main_window(tmp_path / "history.db", discover_targets=False, telemetry_hz=None)
    qtbot.addWidget(window)
    page = window.page("machine")
    window.show()
    window.tabs.setCurrentWidget(page)
    assert window.tabs.tabText(window.tabs.indexOf(page)) == "Machine"
    assert page.view.cell_text(0, "peak_flops.fp32").startswith("41.2 GFLOP/s")
    assert [page.target.itemText(i) for i in range(page.target.count())] == ["cpu"]


def test_a_run_is_refused_while_the_machine_card_measures_and_the_reverse(tmp_path):
    """One measuring state: the machine card's ceilings and a run would disturb each other."""
    from console.ui.workspace import MACHINE, RUN, Busy, Workspace

    workspace = Workspace(tmp_path / "h.db", worker_entry=lambda *a: None)
    workspace.claim(MACHINE)
    with pytest.raises(Busy, match="machine card is measuring"):
        workspace.claim(RUN)
    workspace.release(MACHINE)
    workspace.claim(RUN)
    with pytest.raises(Busy, match="run is measuring"):
        workspace.check_free(MACHINE)


def test_the_noise_floor_is_a_row_of_the_card(qtbot, workspace):
    measured = {**card(socket.gethostname(), "cpu", 4.12e10),
                "noise_floor": {"spread": 0.071, "max_spread": 0.12, "k": 3, "window_s": 1.0, "windows": 10}}
    workspace.store.add_machine_card(measured)
    workspace.store.add_machine_card(card("old-host", "cpu", 1e10))  # measured before the noise floor existed
    page = make_page(qtbot, workspace)
    view = page.view
    assert view.cell_text(0, "noise_floor.spread") == "7.1% over 3 × 1-s windows, worst 12%"
    assert view.cell_text(1, "noise_floor.spread") == "not available"
