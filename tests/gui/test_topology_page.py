"""The Topology page: the graph of an 8-GPU, 4-switch, 2-socket fixture (flag colours, NVLink arcs, click →
details, measured medians on the device edges), the card's bandwidth entries as table rows (or how to measure one),
the busbw chart (one line per op, log2 size ticks), and a collectives run through a fake console.collectives
(progress, the workspace's measuring state, stored and listed). Fixture data: test_topology_page_data.py."""

from __future__ import annotations

import json
import platform
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PySide6 import QtCore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_topology_page_data import (  # noqa: E402
    FLAGGED_GPU,
    GPU_BDFS,
    IDLE_GPU,
    card_links,
    collectives_result,
    eight_gpu_box,
)

from console.ui import topology_page, topology_sources  # noqa: E402
from console.ui.pages import PAGES, PageContext, shortcut  # noqa: E402
from console.ui.topology_page import OPS, TopologyPage  # noqa: E402
from console.ui.topology_sources import check_options, discover_topology, figure_text  # noqa: E402
from console.ui.workspace import COLLECTIVES, STORAGE, Workspace  # noqa: E402
from widgets.bandwidth_matrix import efficiency_percent  # noqa: E402
from widgets.busbw_chart import BusbwChart, Log2SizeAxis, size_text  # noqa: E402
from widgets.topology_graph import FLAG_COLOR, IDLE_COLOR, NVLINK_COLOR  # noqa: E402
from widgets.topology_text import link_text, pcie_generation  # noqa: E402


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace.open(tmp_path / "history.db", worker_entry=lambda *_: None, telemetry_hz=None)
    yield ws
    ws.close()


@dataclass
class FakeOutcome:
    status: str
    result: dict[str, Any] | None
    cause: str | None = None

    @property
    def message(self) -> str:
        return self.cause or ""


class FakeCollectives:
    """console.collectives as the contract gives it: run(options, on_progress, cancel), store, latest."""

    def __init__(self, block: threading.Event | None = None):
        self.block, self.stored, self.options, self.seen_measuring = block, [], None, None

    def run(self, options, on_progress, cancel):
        self.options = options
        on_progress({"text": "all-reduce 8 B (1 of 26)", "fraction": 0.04})
        if self.block is not None:
            self.block.wait(5)
        if cancel.is_set():
            return FakeOutcome("cancelled", None, "cancelled by the user")
        return FakeOutcome("completed", collectives_result(options["ranks"]))

    def store(self, outcome, db, options=None):
        run_id = f"run{len(self.stored):05d}abcdef"
        self.stored.insert(0, (run_id, outcome.result))
        return run_id

    def latest(self, db, n):
        return self.stored[:n]


def make_page(qtbot, workspace, discover=eight_gpu_box, collectives=None) -> TopologyPage:
    page = TopologyPage(PageContext(workspace, base_values=dict, targets=list), discover=discover,
                        collectives=collectives or FakeCollectives())
    qtbot.addWidget(page)
    return page


def discovered(qtbot, page) -> None:
    page.refresh()
    qtbot.waitUntil(lambda: not page.discovering, timeout=5000)


def store_card(workspace, links, quick: bool = False) -> None:
    workspace.writer.add_machine_card({"target": "cpu", "host": platform.node(), "memory_bandwidth_gbs": 10.0,
                                       "links": links, "quick": quick})
    assert workspace.writer.flush()


def test_the_page_keeps_its_shortcut():
    position = [info.name for info in PAGES].index("topology")
    assert PAGES[position].title == "Topology" and shortcut(position) == "Ctrl+8"  # as docs/topology.md says


def test_link_text_names_generation_width_and_rate():
    links = {lk["id"]: lk for lk in eight_gpu_box()["links"]}
    assert link_text(links[f"pcie:{GPU_BDFS[0]}"]) == "Gen5 x16 · 63.0 GB/s max"
    assert link_text(links[f"pcie:{FLAGGED_GPU}"]) == "Gen3 x8 (max Gen5 x16) · 7.9 of 63.0 GB/s"
    assert link_text(links["nvlink:0-1"]) == "NVLink ×18 · 450.0 GB/s max"
    assert pcie_generation(16.0) == "Gen4" and pcie_generation(None) is None and pcie_generation(12.0) == "12 GT/s"


def test_graph_draws_flags_nvlink_and_measured_medians(qtbot, workspace):
    store_card(workspace, card_links())
    page = make_page(qtbot, workspace, discover=lambda: {**eight_gpu_box(), "host": platform.node()})
    discovered(qtbot, page)
    graph = page.graph
    assert len(graph.node_items) == len(eight_gpu_box()["nodes"])
    flagged = graph.edge_style(f"pcie:{FLAGGED_GPU}")
    assert flagged["color"] == FLAG_COLOR and not flagged["dashed"] and "still Gen3 x8" in flagged["tooltip"]
    idle = graph.edge_style(f"pcie:{IDLE_GPU}")
    assert idle["color"] == IDLE_COLOR and idle["dashed"] and "check under load" in idle["tooltip"]
    at_max = graph.edge_style(f"pcie:{GPU_BDFS[0]}")
    assert at_max["color"] not in (FLAG_COLOR, IDLE_COLOR) and not at_max["dashed"]
    nvlinks = [key for key in graph.edge_items if key.startswith("nvlink:")]
    assert len(nvlinks) == 28 and {graph.edge_style(k)["color"] for k in nvlinks} == {NVLINK_COLOR}
    label = graph.edge_labels[f"pcie:{FLAGGED_GPU}"].text()
    assert "Gen3 x8" in label and "measured 11.8 GB/s (h2d pinned, median)" in label
    assert "measured" not in graph.edge_labels[f"pcie:{'0000:16:00.0'}"].text()  # an uplink only passed through
    assert "FLAGGED (low under load): pcie:" + FLAGGED_GPU in page.source.text()
    assert "1 link(s) read low at idle" in page.source.text()
    # every node lies right of its parent (a left-to-right tree)
    nodes = {n["id"]: n for n in eight_gpu_box()["nodes"]}
    for node_id, item in graph.node_items.items():
        parent = nodes[node_id]["parent"]
        if parent:
            assert item.rect().left() > graph.node_items[parent].rect().left()


def test_clicking_a_node_shows_its_attributes_and_the_wheel_zooms(qtbot, workspace):
    page = make_page(qtbot, workspace)
    page.resize(1300, 700)
    page.show()
    qtbot.waitUntil(lambda: page.topology is not None, timeout=5000)
    graph = page.graph
    item = graph.node_items["numa1"]
    point = graph.view.mapFromScene(item.sceneBoundingRect().center())
    qtbot.mouseClick(graph.view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)
    assert graph.details_title.text() == "NUMA node: NUMA 1"
    rows = {graph.details.item(r, 0).text(): graph.details.item(r, 1).text() for r in range(graph.details.rowCount())}
    assert rows["memory_bytes"] == str(1024 * 2**30) and rows["caches.L3"] == str(105 * 2**20)
    graph.select("node", f"pci:{GPU_BDFS[2]}")
    rows = {graph.details.item(r, 0).text(): graph.details.item(r, 1).text() for r in range(graph.details.rowCount())}
    assert rows["topo -m → GPU0"] == "NV18" and "topo -m → GPU2" not in rows  # its own cell (X) left out
    graph.select("link", f"pcie:{FLAGGED_GPU}")
    assert "FLAGGED" in graph.details_title.text()
    before = graph.view.transform().m11()
    graph.view.zoom(2.0)
    assert graph.view.transform().m11() == pytest.approx(before * 2.0)
    graph.fit()
    assert graph.view.transform().m11() == pytest.approx(before)


def test_bandwidth_tab_lists_the_cards_entries(qtbot, workspace):
    links = card_links()
    store_card(workspace, links)
    page = make_page(qtbot, workspace)
    discovered(qtbot, page)
    table = page.bandwidth
    assert table.row_count() == len(links["entries"])
    texts = [[table.cell(r, c).text() for c in range(7)] for r in range(table.row_count())]
    flagged = next(t for t in texts if t[1] == "NUMA 1 → GPU 5" and t[0] == "host → device")
    assert flagged[3] == "11.80" and flagged[5] == "63.0" and flagged[6] == "19"
    row = texts.index(flagged)
    assert table.cell(row, 6).foreground().color().name() == "#c62828"  # 19 % of the link: red
    good = texts.index(next(t for t in texts if t[0] == "device → device"))
    assert table.cell(good, 6).text() == "86" and table.cell(good, 6).foreground().color().name() == "#2e7d32"
    missing = next(t for t in texts if t[0] == "drive → memory")
    assert missing[3].startswith("not available (no writable directory") and missing[6] == "—"
    assert table.table.columnSpan(texts.index(missing), 3) == 2  # the reason spans the median and spread cells
    assert "cudaMemcpyAsync" in table.cell(row, 0).toolTip()
    assert "d2d:gpu2->gpu3 (peer access not enabled)" in table.caption.text()
    assert efficiency_percent({"median_gbs": 5.0, "theoretical_gbs": None}) is None


def test_a_full_card_wins_over_a_newer_quick_one_and_a_quick_card_says_it_is_no_ceiling(qtbot, workspace):
    links = card_links()
    store_card(workspace, links, quick=True)
    page = make_page(qtbot, workspace)
    assert "QUICK card" in page.bandwidth.message.text() and "not ceilings" in page.bandwidth.message.text()
    store_card(workspace, links)  # full, older than the quick one below
    store_card(workspace, links, quick=True)
    assert topology_sources.newest_card_with_links(workspace.store)["quick"] is False


def test_without_a_card_the_page_says_how_to_measure_one(qtbot, workspace):
    store_card(workspace, None)  # a card measured before links existed
    page = make_page(qtbot, workspace)
    assert page.bandwidth.row_count() == 0
    assert "labconsole machine --refresh" in page.bandwidth.message.text()


def test_the_chart_draws_one_busbw_line_per_op(qtbot):
    chart = BusbwChart()
    qtbot.addWidget(chart)
    result = collectives_result(4)
    result["ops"]["reduce"] = [{"size_bytes": 8, "busbw_gbs": None}]  # no figure: left out, said so
    chart.set_result(result)
    assert set(chart.lines) == {"all-reduce", "all-gather", "broadcast"} and not chart.algbw_lines
    xs, ys = chart.lines["all-reduce"].getData()
    assert xs[0] == 3.0 and ys[-1] == pytest.approx(result["ops"]["all-reduce"][-1]["busbw_gbs"])
    assert "No busbw figure for reduce" in chart.caption.text() and "all-reduce × 2(n-1)/n" in chart.caption.text()
    chart.algbw_box.setChecked(True)
    assert set(chart.algbw_lines) == set(chart.lines)
    assert chart.algbw_lines["all-reduce"].opts["pen"].style() == QtCore.Qt.PenStyle.DashLine
    axis = Log2SizeAxis("bottom")
    assert axis.tickStrings([3.0, 10.0, 20.0, 30.0], 1, 1) == ["8 B", "1 KiB", "1 MiB", "1 GiB"]
    assert axis.tickValues(3, 27, 500)[0][0] == 4.0  # 24 doublings: every fourth ticked
    assert size_text(3 * 2**20) == "3 MiB"


def test_a_collectives_run_claims_the_workspace_and_is_stored(qtbot, workspace):
    gate = threading.Event()
    fake = FakeCollectives(block=gate)
    page = make_page(qtbot, workspace, collectives=fake)
    assert "No stored collectives run yet" in page.chart.caption.text()
    page.ranks.setValue(4)
    page.op_boxes["broadcast"].setChecked(True)
    assert page.run_collectives()
    assert workspace.measuring == COLLECTIVES and page.running and not page.run_button.isEnabled()
    qtbot.waitUntil(lambda: "all-reduce 8 B" in page.run_progress.text(), timeout=3000)
    gate.set()
    qtbot.waitUntil(lambda: not page.running, timeout=5000)
    assert fake.options == {"ranks": 4, "backend": "gloo", "ops": ["all-reduce", "all-gather", "broadcast"],
                            "sizes": "8B..64MiB", "iters": 20, "trials": 5}
    assert workspace.measuring is None and page.run_progress.text().startswith("Completed in")
    assert page.stored.count() == 1 and set(page.chart.lines) == {"all-reduce", "all-gather", "broadcast"}
    assert "all reduce peak busbw:" in page.figures.text() and "GB/s" in page.figures.text()


def test_the_lab_cluster_choice_needs_a_joined_cluster_and_passes_its_address(qtbot, workspace):
    address = {"value": ""}
    fake = FakeCollectives()
    page = TopologyPage(PageContext(workspace, base_values=dict, targets=list,
                                    cluster_address=lambda: address["value"]), discover=eight_gpu_box,
                        collectives=fake)
    qtbot.addWidget(page)
    page.where.setCurrentIndex(1)
    page.iters.setValue(7)
    assert not page.run_collectives() and "No lab cluster is joined" in page.run_progress.text()
    assert workspace.measuring is None and fake.options is None
    address["value"] = "10.0.0.5:6379"
    assert page.run_collectives()
    qtbot.waitUntil(lambda: not page.running, timeout=5000)
    assert fake.options["cluster"] == "10.0.0.5:6379" and fake.options["iters"] == 7


def test_a_result_the_history_keeps_as_failed_is_not_shown_as_completed(qtbot, workspace):
    class Malformed(FakeCollectives):
        def store_with_status(self, outcome, db, options=None):
            return self.store(outcome, db, options), "failed", "the collectives result cannot be kept as completed"

    page = make_page(qtbot, workspace, collectives=Malformed())
    assert page.run_collectives()
    qtbot.waitUntil(lambda: not page.running, timeout=5000)
    assert page.run_progress.text().startswith("Failed after") and "cannot be kept" in page.run_progress.text()


def test_a_cancelled_run_and_a_busy_workspace(qtbot, workspace):
    gate = threading.Event()
    page = make_page(qtbot, workspace, collectives=FakeCollectives(block=gate))
    workspace.claim(STORAGE)
    assert not page.run_collectives() and "storage benchmark is measuring" in page.run_progress.text()
    workspace.release(STORAGE)
    assert page.run_collectives()
    page.cancel_collectives()
    gate.set()
    qtbot.waitUntil(lambda: not page.running, timeout=5000)
    assert page.run_progress.text().startswith("Cancelled after") and page.stored.count() == 0
    page.sizes.setText("8B..lots")
    assert not page.run_collectives() and "lots" in page.run_progress.text() and workspace.measuring is None


def test_missing_parts_are_said_not_hidden(qtbot, workspace, monkeypatch):
    monkeypatch.setattr(topology_page, "collectives_module", lambda: (None, "console.collectives cannot be imported"))
    page = TopologyPage(PageContext(workspace, base_values=dict, targets=list),
                        discover=lambda: (_ for _ in ()).throw(RuntimeError("no sysfs here")))
    qtbot.addWidget(page)
    assert not page.run_button.isEnabled()
    assert page.run_progress.text() == "Collectives not available (console.collectives cannot be imported)."
    discovered(qtbot, page)
    assert page.source.text() == "Topology not available: RuntimeError: no sysfs here"


def test_the_developer_file_is_named_as_the_source(tmp_path, monkeypatch):
    path = tmp_path / "box.json"
    path.write_text(json.dumps(eight_gpu_box()))
    monkeypatch.setenv(topology_sources.TOPOLOGY_FILE_ENV, str(path))
    assert discover_topology()["source"] == f"developer file {path} (fixture:hgx-8gpu)"
    path.write_text("{}")
    with pytest.raises(ValueError, match="no 'nodes' list"):
        discover_topology()


def test_the_form_is_checked_by_the_collectives_options_and_names_the_fix():
    from engines.collectives.formulas import OPS as ENGINE_OPS

    assert OPS == ENGINE_OPS  # the form offers exactly the ops the runner times
    assert check_options({"ranks": 2, "backend": "gloo", "ops": ["all-reduce"], "sizes": "8B..64MiB"}) is None
    problem = check_options({"ranks": 2, "backend": "gloo", "ops": ["all-reduce"], "sizes": "64MiB..8B"})
    assert "run downwards" in problem and "8B..64MiB" in problem
    assert figure_text("all_reduce_small_latency_us", 21.5) == "all reduce small latency: 21.5 µs"


def test_the_page_fits_a_laptop_screen(qtbot, workspace):
    store_card(workspace, card_links())
    page = make_page(qtbot, workspace)
    discovered(qtbot, page)
    for index in range(page.tabs.count()):
        page.tabs.setCurrentIndex(index)
        hint = page.minimumSizeHint()
        assert hint.height() <= 660 and hint.width() <= 1280, (index, hint)


def test_a_real_gloo_run_from_the_form_is_stored_and_drawn(qtbot, workspace):
    """console.collectives for real: two gloo ranks in a spawned worker (about 5 s), stored through the window's
    writer and read back by console.collectives.latest."""
    import console.collectives as collectives

    page = make_page(qtbot, workspace, collectives=collectives)
    page.op_boxes["all-gather"].setChecked(False)
    page.sizes.setText("8B..1KiB")
    assert page.run_collectives()
    qtbot.waitUntil(lambda: not page.running, timeout=90000)
    assert page.run_progress.text().startswith("Completed in"), page.run_progress.text()
    assert page.stored.count() == 1 and set(page.chart.lines) == {"all-reduce"}
    xs, ys = page.chart.lines["all-reduce"].getData()
    assert list(xs) == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0] and all(y > 0 for y in ys)
    assert "gloo · 2 ranks" in page.chart.caption.text()


def test_a_card_of_another_host_puts_no_figures_on_the_edges(qtbot, workspace):
    store_card(workspace, card_links())
    page = make_page(qtbot, workspace)  # the fixture's host is hgx-test, the card this host's
    discovered(qtbot, page)
    assert not any("measured" in label.text() for label in page.graph.edge_labels.values())
    assert f"is of host {platform.node()}, this topology of hgx-test" in page.graph_notes.text()
    assert page.bandwidth.row_count() == len(card_links()["entries"])  # the table still shows this host's card


def test_the_graph_of_the_discovered_dgx1_like_fixture(qtbot, workspace, tmp_path):
    """engines.topology.discover on part T's described DGX-1-like sysfs tree, its planted under-load readings
    applied by check_links_under_load: the page draws what discovery says (flagged red, the NVMe idle-low amber
    before it is checked, the recovered GPU link solid)."""
    from engines.topology import check_links_under_load, discover
    from tests.fixtures.topology.materialize import manifest, materialize

    root = materialize("gpu-switch-box", tmp_path)
    idle = discover(str(root), nvml=None)
    page = make_page(qtbot, workspace, discover=lambda: idle)
    discovered(qtbot, page)
    assert page.graph.edge_style("pcie:0000:85:00.0")["color"] == IDLE_COLOR  # the NVMe: low at idle, unchecked
    under = manifest("gpu-switch-box")["under_load"]

    class Load:  # the fixture's under-load readings while "loaded" (as T's own test does)
        def __init__(self, lnk):
            self.bdf = lnk["id"].split(":", 1)[1]

        def __enter__(self):
            speed, width = under.get(self.bdf, (None, None))
            if speed:
                (root / "sys/bus/pci/devices" / self.bdf / "current_link_speed").write_text(speed + "\n")
                (root / "sys/bus/pci/devices" / self.bdf / "current_link_width").write_text(f"{width}\n")
            return self

        def __exit__(self, *exc):
            return False

    loaded = check_links_under_load(discover(str(root), nvml=None), Load, root=str(root), hold_s=0.0)
    page.show_topology(loaded)
    gpus = [n for n in loaded["nodes"] if n["kind"] == "gpu"]
    assert len(gpus) == 8 and len(page.graph.node_items) == len(loaded["nodes"])
    assert page.graph.edge_style("pcie:0000:89:00.0")["color"] == FLAG_COLOR
    recovered = page.graph.edge_style("pcie:0000:03:00.0")
    assert recovered["color"] not in (FLAG_COLOR, IDLE_COLOR) and not recovered["dashed"]
    assert "pcie:0000:89:00.0" in page.source.text() and "FLAGGED" in page.source.text()
