"""The Topology page: how this machine's sockets, NUMA nodes, PCIe switches, GPUs, drives and NICs hang together
(Graph), what each link gave when measured (Bandwidth), and how fast collectives run across ranks (Collectives).

- Graph: engines.topology.discover reads sysfs and /proc (pure Python, no torch) on a worker thread when the page is
  first shown and on Refresh; the edges carry the newest machine card's measured medians for this host.
- Bandwidth: that card's "links" block as a table (widgets.bandwidth_matrix); with none, the page says how to
  measure one.
- Collectives: a form (ranks, backend, ops, sizes) runs console.collectives on a thread with a progress line and
  Cancel, claims the workspace's one "measuring" state, stores the result as a run, and draws busbw against size
  (widgets.busbw_chart); the stored collectives runs are listed to pick from.

The other parts (discovery, the bandwidth card, the collectives runner: console.ui.topology_sources) are imported
when used: a build without one says which is missing and why, instead of the page failing.

Developer option: LABCONSOLE_TOPOLOGY_FILE=PATH draws the topology JSON in PATH (the output of
`labconsole topology --json`, or a test fixture) instead of discovering this machine, so a layout such as an 8-GPU
box can be looked at on a laptop. The page says so in its source line whenever it is in use.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from console.ui.background import BackgroundCall
from console.ui.pages import PageContext
from console.ui.topology_sources import (
    card_caption,
    check_options,
    collectives_module,
    discover_topology,
    figure_text,
    newest_card_with_links,
)
from widgets import theme
from widgets.bandwidth_matrix import BandwidthMatrix
from widgets.busbw_chart import BusbwChart
from widgets.topology_graph import TopologyGraph

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce")  # nccl-tests' ops
DEFAULT_OPS = ("all-reduce", "all-gather")
DEFAULT_SIZES = "8B..64MiB"
STORED_SHOWN = 20
NO_LINKS_TEXT = ("No machine card of this host has a bandwidth matrix yet. Measure one with "
                 "`labconsole machine --refresh` (or Measure on the Machine page); its host-memory, host↔device, "
                 "device↔device and drive figures then show here and on the graph's edges.")


class TopologyPage(QtWidgets.QWidget):
    sig_progress = QtCore.Signal(object)  # a collectives progress update, from the run's thread
    sig_finished = QtCore.Signal(object)  # {"outcome", "run_id", "error"} from the run's thread
    sig_stored = QtCore.Signal(str)  # run_id of a stored collectives run (the History page reloads)

    def __init__(self, context: PageContext, discover: Callable[[], dict[str, Any]] = discover_topology,
                 collectives: Any = None):
        super().__init__()
        self._workspace = context.workspace
        self._cluster_address = context.cluster_address
        self._discover = discover
        if collectives is None:
            self._collectives, self._collectives_problem = collectives_module()
        else:
            self._collectives, self._collectives_problem = collectives, None
        self._call: BackgroundCall | None = None
        self._discovered_once = False
        self._cancel: threading.Event | None = None
        self._started = 0.0
        self.topology: dict[str, Any] | None = None
        self.card: dict[str, Any] | None = None
        self.stored_runs: list[tuple[str, dict[str, Any]]] = []

        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(self._graph_tab(), "Graph")
        self.tabs.addTab(self._bandwidth_tab(), "Bandwidth")
        self.tabs.addTab(self._collectives_tab(), "Collectives")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.tabs, 1)
        self.sig_progress.connect(self._progress)
        self.sig_finished.connect(self._finished)
        self.reload()

    # ---- Public API
    def refresh(self) -> bool:
        """Discover the topology again on a thread; False when a discovery is already under way."""
        if self._call is not None:
            return False
        self._discovered_once = True
        self.refresh_button.setEnabled(False)
        self.source.setText("Discovering this machine's topology (sysfs, /proc)…")
        self._call = BackgroundCall(self, self._discovered, self._discovery_failed)
        self._call.start(self._discover)
        return True

    @property
    def discovering(self) -> bool:
        return self._call is not None

    def show_topology(self, topology: dict[str, Any]) -> None:
        """Draw `topology` with the card's measured entries on its edges (what a finished discovery does)."""
        self.topology = topology
        self.graph.set_topology(topology, self._entries())
        counts: dict[str, int] = {}
        for node in topology.get("nodes") or []:
            counts[node.get("kind")] = counts.get(node.get("kind"), 0) + 1
        flagged = [lk["id"] for lk in topology.get("links") or [] if lk.get("state") == "low-under-load"]
        idle = [lk["id"] for lk in topology.get("links") or [] if lk.get("state") == "below-max-idle"]
        shown = ", ".join(f"{counts[k]} {k}" for k in ("package", "numa", "pcie-switch", "gpu", "nvme", "nic")
                          if counts.get(k))
        text = f"Host {topology.get('host', '?')} · source: {topology.get('source', '?')} · {shown or 'no devices'}"
        if flagged:
            text += f" · FLAGGED (low under load): {', '.join(flagged)}"
        if idle:
            text += f" · {len(idle)} link(s) read low at idle — not flagged until read under load"
        self.source.setText(text)
        missing = topology.get("not_available") or {}
        notes = []
        if self._card_host_differs():
            notes.append(f"No measured figures on the edges: the newest machine card with a bandwidth matrix is of "
                         f"host {self.card.get('host')}, this topology of {topology.get('host')}.")
        elif self.card is not None:
            notes.append(f"Measured medians on the edges: {card_caption(self.card)}.")
        else:
            notes.append("No measured figures on the edges: no machine card of this host has a bandwidth matrix.")
        if missing:
            notes.append("Not available: " + "; ".join(f"{what} ({why})" for what, why in missing.items()) + ".")
        matrix = topology.get("gpu_matrix")
        if matrix and matrix.get("gpus"):
            notes.append(f"GPU matrix (nvidia-smi topo -m levels, {matrix.get('source') or 'source not given'}): "
                         f"{len(matrix['gpus'])} GPUs; click a GPU for its row.")
        self.graph_notes.setText(" ".join(notes))
        self._fill_bandwidth()

    def reload(self) -> None:
        """Re-read the newest card with links and the stored collectives runs from the history."""
        store = self._workspace.store
        self.card = None
        if store is not None:
            try:
                self.card = newest_card_with_links(store)
            except Exception as exc:  # a history that cannot be read: say so, keep the page
                self.bandwidth.set_message(f"The machine cards could not be read: {exc}")
                return
        self._fill_bandwidth()
        if self.topology is not None:
            self.graph.set_topology(self.topology, self._entries())
        self._reload_collectives()

    def run_collectives(self) -> bool:
        """Start a collectives run from the form on a thread; False (with the reason shown) when it cannot."""
        module = self._collectives
        if module is None or self._cancel is not None:
            return False
        ops = [op for op, box in self.op_boxes.items() if box.isChecked()]
        if not ops:
            self.run_progress.setText("Choose at least one op.")
            return False
        options = {"ranks": self.ranks.value(), "backend": self.backend.currentText(), "ops": ops,
                   "sizes": self.sizes.text().strip().replace(" ", ""), "iters": self.iters.value(),
                   "trials": self.trials.value()}
        if self.where.currentIndex() == 1:
            address = self._cluster_address()
            if not address:
                self.run_progress.setText("No lab cluster is joined: join one (Cluster menu), or run on this machine.")
                return False
            options["cluster"] = address
        problem = check_options(options)
        if problem:
            self.run_progress.setText(problem)
            return False
        from console.ui.workspace import COLLECTIVES

        if not self._workspace.claim_or_say(COLLECTIVES, self.run_progress.setText):
            return False
        self._cancel = threading.Event()
        self._started = time.monotonic()
        self._set_running(True)
        self.run_progress.setText(f"Starting {self.ranks.value()} {options['backend']} ranks…")
        threading.Thread(target=self._run, args=(module, options, self._cancel), name="collectives-run",
                         daemon=True).start()
        return True

    def cancel_collectives(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self.run_progress.setText("Cancelling…")

    @property
    def running(self) -> bool:
        return self._cancel is not None

    def show_collectives(self, index: int) -> None:
        """Show the `index`-th stored collectives result (0: the newest)."""
        if not 0 <= index < len(self.stored_runs) or self._cancel is not None:
            return
        run_id, result = self.stored_runs[index]
        self._show_result(result, f"Stored run {run_id[:8]} · {result.get('label', '')}")

    def shutdown(self) -> None:
        """The window is closing: drop a discovery still to come and cancel a collectives run."""
        if self._call is not None:
            self._call.stop()
        if self._cancel is not None:
            self._cancel.set()

    # ---- Tabs
    def _graph_tab(self) -> QtWidgets.QWidget:
        self.graph = TopologyGraph()
        self.source = QtWidgets.QLabel("The topology is discovered when this page is first shown.")
        self.source.setWordWrap(True)
        self.refresh_button = QtWidgets.QPushButton("Refresh")
        self.refresh_button.setToolTip("read this machine's topology again (sysfs and /proc; about a second)")
        self.refresh_button.clicked.connect(self.refresh)
        self.graph_notes = theme.caption_label()
        head = QtWidgets.QHBoxLayout()
        head.addWidget(self.source, 1)
        head.addWidget(self.refresh_button)
        tab = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addLayout(head)
        layout.addWidget(self.graph, 1)
        layout.addWidget(self.graph_notes)
        return tab

    def _bandwidth_tab(self) -> QtWidgets.QWidget:
        self.bandwidth = BandwidthMatrix()
        tab = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addWidget(self.bandwidth, 1)
        return tab

    def _collectives_tab(self) -> QtWidgets.QWidget:
        self.ranks = _spin_box(2, 1024, 2, "processes taking part (one per GPU with nccl; CPU processes with gloo)")
        self.backend = QtWidgets.QComboBox()
        self.backend.addItems(["gloo", "nccl"])
        self.backend.setToolTip("gloo: CPU processes over TCP (any machine); nccl: one process per NVIDIA GPU")
        self.op_boxes: dict[str, QtWidgets.QCheckBox] = {}
        ops_box = QtWidgets.QGroupBox("Ops")
        ops_layout = QtWidgets.QGridLayout(ops_box)
        for index, op in enumerate(OPS):
            box = QtWidgets.QCheckBox(op)
            box.setChecked(op in DEFAULT_OPS)
            self.op_boxes[op] = box
            ops_layout.addWidget(box, index // 2, index % 2)
        self.sizes = QtWidgets.QLineEdit(DEFAULT_SIZES)
        self.sizes.setToolTip("message sizes: a range doubling from the first to the last (8B..64MiB) or a list "
                              "(1KiB,1MiB)")
        self.iters = _spin_box(1, 100000, 20,
                               "operations timed together in one trial (nccl-tests -n); time per op = trial ÷ this")
        self.trials = _spin_box(1, 1000, 5, "trials per size; the table and chart show their median")
        self.where = QtWidgets.QComboBox()
        self.where.addItems(["this machine (local processes)", "lab cluster (Ray places the ranks)"])
        self.where.setToolTip("lab cluster: one rank per Ray placement-group bundle on the cluster this window "
                              "joined; nothing else launches them")
        form = QtWidgets.QFormLayout()
        form.addRow("Ranks", self.ranks)
        form.addRow("Backend", self.backend)
        form.addRow(ops_box)
        form.addRow("Sizes", self.sizes)
        form.addRow("Ops per trial", self.iters)
        form.addRow("Trials", self.trials)
        form.addRow("Where", self.where)
        self.run_button = QtWidgets.QPushButton("Run")
        self.run_button.setToolTip("time each op at each size across the ranks and keep it in the history")
        self.run_button.clicked.connect(self.run_collectives)
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel_collectives)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        self.run_progress = QtWidgets.QLabel("")
        self.run_progress.setWordWrap(True)
        self.run_bar = QtWidgets.QProgressBar()
        self.run_bar.setRange(0, 1000)
        self.run_bar.setTextVisible(False)
        self.run_bar.setVisible(False)
        self.stored = QtWidgets.QComboBox()
        self.stored.setToolTip("a stored collectives run to show (newest first)")
        self.stored.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.stored.setMinimumContentsLength(18)
        self.stored.currentIndexChanged.connect(self.show_collectives)
        self.figures = QtWidgets.QLabel("")
        self.figures.setWordWrap(True)
        self.figures.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QtWidgets.QVBoxLayout()
        intro = QtWidgets.QLabel("Time per message size of each collective across ranks; algbw = size ÷ time, "
                                 "busbw = algbw × the op's factor (nccl-tests), comparable with the link's speed.")
        intro.setWordWrap(True)
        intro.setStyleSheet(f"color: {theme.MUTED};")
        left.addWidget(intro)
        left.addLayout(form)
        left.addLayout(buttons)
        left.addWidget(self.run_bar)
        left.addWidget(self.run_progress)
        left.addWidget(QtWidgets.QLabel("Show stored"))
        left.addWidget(self.stored)
        left.addWidget(self.figures)
        left.addStretch(1)
        if self._collectives is None:
            self.run_button.setEnabled(False)
            self.run_progress.setText(f"Collectives not available ({self._collectives_problem}).")
        if not self._workspace.usable:
            self.run_button.setEnabled(False)
            self.run_progress.setText(f"The history cannot be opened, so nothing can be measured: "
                                      f"{self._workspace.startup_error}")
        left_box = QtWidgets.QWidget()
        left_box.setLayout(left)
        left_box.setMinimumWidth(300)
        left_box.setMaximumWidth(420)
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(left_box)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setMaximumWidth(440)
        scroll.setMinimumWidth(320)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.chart = BusbwChart()
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(scroll)
        split.addWidget(self.chart)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([380, 1000])
        return split

    # ---- Private API
    def showEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().showEvent(event)
        if not self._discovered_once:
            self.refresh()

    def _entries(self) -> list[dict[str, Any]]:
        """The card's measured entries for the graph's edges: only when the card is of the host drawn (link ids of
        another machine could name different links)."""
        if self._card_host_differs():
            return []
        return list(((self.card or {}).get("links") or {}).get("entries") or [])

    def _card_host_differs(self) -> bool:
        card_host, drawn = (self.card or {}).get("host"), (self.topology or {}).get("host")
        return bool(self.card and self.topology and card_host and drawn and card_host != drawn)

    def _names(self) -> dict[str, str]:
        return {str(n.get("id")): str(n.get("label") or n.get("id")) for n in (self.topology or {}).get("nodes") or []}

    def _fill_bandwidth(self) -> None:
        if self.card is None:
            self.bandwidth.set_message(NO_LINKS_TEXT)
            return
        card = self.card
        caption = card_caption(card)
        self.bandwidth.set_links(card["links"], self._names(),
                                 f"{caption[0].upper()}{caption[1:]} · medians of the card's trials, GB/s per direction")

    def _discovered(self, topology: dict[str, Any]) -> None:
        self._call = None
        self.refresh_button.setEnabled(True)
        self.show_topology(topology)

    def _discovery_failed(self, message: str) -> None:
        self._call = None
        self.refresh_button.setEnabled(True)
        self.source.setText(f"Topology not available: {message}")

    def _reload_collectives(self) -> None:
        module, store = self._collectives, self._workspace.store
        if module is None or store is None:
            self.stored.setEnabled(False)
            if module is None and self.chart.result is None:
                self.chart.caption.setText(f"Collectives not available ({self._collectives_problem}).")
            return
        try:
            self.stored_runs = [(str(run_id), result) for run_id, result in module.latest(store, STORED_SHOWN)
                                if isinstance(result, dict) and result.get("ops")]  # a cancelled run: nothing to draw
        except Exception as exc:  # the history could not be read: say so, keep the page
            self.run_progress.setText(f"Stored collectives runs could not be read: {exc}")
            return
        self.stored.blockSignals(True)
        self.stored.clear()
        self.stored.addItems([f"{run_id[:8]} · {result.get('label', '')}" for run_id, result in self.stored_runs])
        self.stored.blockSignals(False)
        self.stored.setEnabled(bool(self.stored_runs))
        if self.stored_runs and self._cancel is None:
            self.show_collectives(0)
        elif not self.stored_runs:
            self.chart.clear()
            self.chart.caption.setText("No stored collectives run yet: choose ranks, ops and sizes and press Run "
                                       "(or `labconsole collectives`).")

    def _run(self, module: Any, options: dict[str, Any], cancel: threading.Event) -> None:
        record: dict[str, Any] = {"outcome": None, "run_id": None, "error": None, "options": options}
        try:
            outcome = module.run(options, self.sig_progress.emit, cancel)
            record["outcome"] = outcome
            if hasattr(module, "store_with_status"):  # the status as stored: a malformed result is kept failed
                record["run_id"], record["status"], record["cause"] = module.store_with_status(
                    outcome, self._workspace.writer, options)
            else:
                record["run_id"] = module.store(outcome, self._workspace.writer, options)
        except Exception as exc:  # reported on the page: what failed and the message
            record["error"] = f"{type(exc).__name__}: {exc}"
        self.sig_finished.emit(record)

    def _progress(self, update: Any) -> None:
        if self._cancel is None:
            return
        text = update.get("text") if isinstance(update, dict) else str(update)
        fraction = update.get("fraction") if isinstance(update, dict) else None
        if isinstance(fraction, (int, float)) and 0 <= fraction <= 1:
            self.run_bar.setRange(0, 1000)
            self.run_bar.setValue(int(fraction * 1000))
        else:
            self.run_bar.setRange(0, 0)  # busy: no fraction known
        self.run_progress.setText(f"{text or 'running'} ({time.monotonic() - self._started:.0f} s)")

    def _finished(self, record: dict[str, Any]) -> None:
        from console.ui.workspace import COLLECTIVES

        self._workspace.release(COLLECTIVES)
        self._cancel = None
        self._set_running(False)
        took = f"{time.monotonic() - self._started:.1f} s"
        outcome, run_id = record.get("outcome"), record.get("run_id")
        status = record.get("status") or getattr(outcome, "status", None)
        result = getattr(outcome, "result", None)
        if record.get("error"):
            self.run_progress.setText(f"Failed after {took}: {record['error']}")
        elif status == "completed":
            where = f"run {str(run_id)[:8]} in the history" if run_id else "not stored"
            self.run_progress.setText(f"Completed in {took} · {where}")
        else:
            cause = record.get("cause") or getattr(outcome, "message", "") or getattr(outcome, "cause", "") or ""
            self.run_progress.setText(f"{str(status).capitalize()} after {took}" + (f": {cause}" if cause else ""))
        if result:
            self._show_result(result, f"This run · {status}")
        self._reload_collectives()
        if result and status == "completed" and self.stored_runs and self.stored_runs[0][0] == str(run_id):
            self.stored.setCurrentIndex(0)
        if run_id:
            self.sig_stored.emit(str(run_id))

    def _show_result(self, result: dict[str, Any], where: str) -> None:
        self.chart.set_result(result)
        figures = result.get("figures") or {}
        lines = [f"<b>{where}</b>"]
        for name, value in figures.items():
            lines.append(figure_text(name, value))
        if result.get("status_reason"):
            lines.append(f"note: {result['status_reason']}")
        self.figures.setText("<br>".join(lines))

    def _set_running(self, running: bool) -> None:
        self.run_bar.setVisible(running)
        self.run_bar.setRange(0, 1000)
        self.run_bar.setValue(0)
        self.run_button.setEnabled(not running and self._collectives is not None)
        self.cancel_button.setEnabled(running)
        for widget in (self.ranks, self.backend, self.sizes, self.iters, self.trials, self.where,
                       *self.op_boxes.values()):
            widget.setEnabled(not running)


def _spin_box(low: int, high: int, value: int, tip: str) -> QtWidgets.QSpinBox:
    """A whole-number option of the collectives form: its range, default and what it means."""
    box = QtWidgets.QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setToolTip(tip)
    return box
