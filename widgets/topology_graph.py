"""The machine's topology drawn as a tree, left to right: machine → packages → NUMA nodes → host bridges, root
ports and switches → devices (GPU, NVMe, NIC, other), with NVLink arcs between GPUs.

A pure view fed the topology dict of engines.topology.discover (docs/topology.md, "## Topology") and, optionally,
the bandwidth entries a machine card keeps (card["links"]["entries"]). Why a tree laid out left to right: a GPU box
has many more devices than levels (8 GPUs behind 4 switches under 2 sockets is ~14 leaves and 7 levels), so the
leaves stack down the screen and the link labels read along horizontal edges.

Each edge says what its link is ("Gen4 x16 · 31.5 GB/s max", current and maximum), and the median of a measured
transfer ending at that device when the card has one ("measured h2d pinned 24.6 GB/s"). How it is drawn follows the
link's state and nothing else: "low-under-load" (the only flagged state: slow while loaded) red and thick, with the
note as tooltip; "below-max-idle" amber and dashed (a PCIe link drops its speed when idle: it reads low at idle and
must be checked under load before anyone calls it slow); NVLink green arcs. Clicking a node or an edge shows its
attributes in the side panel. The wheel zooms, dragging pans, "Fit" shows the whole tree. The words on edges, nodes
and in the panel come from widgets.topology_text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme
from widgets.topology_text import (
    KIND_TITLES,
    STATE_TEXT,
    attribute_rows,
    gpu_matrix_rows,
    link_text,
    measured_for,
    measured_label,
    node_lines,
)

FLAG_COLOR = "#d32f2f"  # low-under-load: the one flagged state
IDLE_COLOR = "#f29100"  # below-max-idle: amber, dashed — reads low at idle, check under load
NVLINK_COLOR = "#2ca02c"
RECOVERED_COLOR = "#2e7d32"
MIN_GAP = 60  # px between two levels at least (the gap grows with the widest edge label into the level)
NODE_W = 175
LINE_H = 15
NODE_PAD = 6
LEAF_GAP = 14  # vertical gap between two stacked nodes
KIND_COLORS = {  # one fill per kind of node (a tint of it), named in the legend
    "machine": "#7f7f7f", "package": "#1f77b4", "numa": "#9467bd", "host-bridge": "#8c564b",
    "pcie-root-port": "#8c564b", "pcie-switch": "#17becf", "pcie-bridge": "#17becf", "gpu": "#2ca02c",
    "accelerator": "#98df8a", "nvme": "#ff7f0e", "nic": "#e377c2", "pcie-device": "#bcbd22",
    "cluster-node": "#7f7f7f",
}


# ---- Layout
def tree_layout(nodes: list[Mapping[str, Any]]) -> dict[str, tuple[int, float, float]]:
    """id → (depth, top y, height) for a left-to-right tidy tree: leaves stacked in order, each parent centred
    on its children. Nodes whose parent is missing are roots (placed one under another)."""
    by_id = {n["id"]: n for n in nodes}
    children: dict[str | None, list[str]] = {}
    for node in nodes:
        parent = node.get("parent")
        children.setdefault(parent if parent in by_id else None, []).append(node["id"])
    place: dict[str, tuple[int, float, float]] = {}
    cursor = 0.0

    def height_of(node_id: str) -> float:
        return len(node_lines(by_id[node_id])) * LINE_H + 2 * NODE_PAD

    def visit(node_id: str, depth: int, seen: set[str]) -> tuple[float, float]:
        nonlocal cursor
        seen.add(node_id)
        h = height_of(node_id)
        kids = [k for k in children.get(node_id, []) if k not in seen]
        if not kids:
            top = cursor
            cursor += h + LEAF_GAP
        else:
            spans = [visit(k, depth + 1, seen) for k in kids]
            centre = (spans[0][0] + spans[-1][1]) / 2
            top = max(centre - h / 2, 0.0)
            cursor = max(cursor, top + h + LEAF_GAP)
        place[node_id] = (depth, top, h)
        return top, top + h

    seen: set[str] = set()
    for root in children.get(None, []):
        visit(root, 0, seen)
    for node in nodes:  # a cycle in `parent` (bad input) leaves nodes unvisited: still drawn, in a last column
        if node["id"] not in place:
            visit(node["id"], 0, seen)
    return place


# ---- The view
class TopologyGraph(QtWidgets.QWidget):
    """The graph with its legend, zoom buttons and the details panel. `set_topology(topology, entries)` draws;
    `select(kind, id)` shows a node's or link's details (what a click does)."""

    sig_selected = QtCore.Signal(str, str)  # "node" | "link", id

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.scene = QtWidgets.QGraphicsScene(self)
        self.view = _View(self.scene, self)
        self.view.sig_clicked.connect(self.select)
        self.topology: dict[str, Any] | None = None
        self.entries: list[dict[str, Any]] = []
        self.node_items: dict[str, QtWidgets.QGraphicsRectItem] = {}
        self.edge_items: dict[str, QtWidgets.QGraphicsPathItem] = {}
        self.edge_labels: dict[str, QtWidgets.QGraphicsSimpleTextItem] = {}
        self.details = QtWidgets.QTableWidget(0, 2)
        self.details.setHorizontalHeaderLabels(["attribute", "value"])
        self.details.horizontalHeader().setStretchLastSection(True)
        self.details.verticalHeader().setVisible(False)
        self.details.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.details.setWordWrap(True)
        self.details_title = QtWidgets.QLabel("Click a node or a link to see its attributes.")
        self.details_title.setWordWrap(True)
        self.details_title.setFont(theme.font(theme.BASE_PT, bold=True))
        fit = QtWidgets.QPushButton("Fit")
        fit.setToolTip("show the whole tree (the wheel zooms, dragging pans)")
        fit.clicked.connect(self.fit)
        zoom_in, zoom_out = QtWidgets.QPushButton("+"), QtWidgets.QPushButton("−")
        zoom_in.setToolTip("zoom in (or the mouse wheel)")
        zoom_out.setToolTip("zoom out (or the mouse wheel)")
        zoom_in.clicked.connect(lambda: self.view.zoom(1.25))
        zoom_out.clicked.connect(lambda: self.view.zoom(0.8))
        self.view.sig_zoomed.connect(self._user_zoomed)
        for button in (zoom_in, zoom_out):
            button.setFixedWidth(32)
        self.legend = QtWidgets.QLabel(self._legend_html())
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        tools = QtWidgets.QHBoxLayout()
        tools.addWidget(self.legend, 1)
        tools.addWidget(zoom_out)
        tools.addWidget(zoom_in)
        tools.addWidget(fit)
        side = QtWidgets.QWidget()
        side_layout = QtWidgets.QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.details_title)
        side_layout.addWidget(self.details, 1)
        side.setMinimumWidth(220)
        side.setMaximumWidth(420)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(self.view)
        split.addWidget(side)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([900, 280])
        self._fitted = True  # the view follows its size until the user zooms
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(tools)
        layout.addWidget(split, 1)

    def set_topology(self, topology: Mapping[str, Any] | None, entries: Iterable[Mapping[str, Any]] = ()) -> None:
        """Draw `topology` (None: clear); `entries`: a machine card's measured bandwidth entries, for the edges."""
        self.scene.clear()
        self.node_items.clear()
        self.edge_items.clear()
        self.edge_labels.clear()
        self.topology = dict(topology) if topology else None
        self.entries = [dict(e) for e in entries]
        if not self.topology:
            return
        nodes = [n for n in self.topology.get("nodes") or [] if isinstance(n, Mapping) and n.get("id")]
        place = tree_layout(nodes)
        by_id = {n["id"]: n for n in nodes}
        links = [lk for lk in self.topology.get("links") or [] if isinstance(lk, Mapping)]
        tree_links: dict[str, Mapping[str, Any]] = {}  # child id → the link into it from its parent
        for link in links:
            child = link.get("b")
            if link.get("kind") == "nvlink" or child not in by_id:
                continue
            if child not in tree_links or link.get("a") == by_id[child].get("parent"):
                tree_links[child] = link
        lefts = self._column_lefts(place, tree_links)
        rects: dict[str, QtCore.QRectF] = {}
        for node_id, (depth, top, height) in place.items():
            rects[node_id] = QtCore.QRectF(lefts[depth], top, NODE_W, height)
        for node in nodes:  # tree edges first, so the nodes are drawn over them
            parent = node.get("parent")
            if parent in rects:
                link = tree_links.get(node["id"])
                self._tree_edge(rects[parent], rects[node["id"]], node, link)
        for link in links:
            if link.get("kind") == "nvlink" and link.get("a") in rects and link.get("b") in rects:
                self._arc_edge(rects[link["a"]], rects[link["b"]], link)
        for node_id, rect in rects.items():
            self._node(by_id[node_id], rect)
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-20, -20, 20, 20))
        self.fit()

    def fit(self) -> None:
        """The whole tree in view, never magnified past 100 % (a small tree keeps its text size)."""
        rect = self.scene.sceneRect()
        if rect.isEmpty():
            return
        self.view.resetTransform()
        viewport = self.view.viewport().rect()
        scale = min(viewport.width() / rect.width(), viewport.height() / rect.height(), 1.0)
        self.view.scale(max(scale, 0.2), max(scale, 0.2))
        self.view.centerOn(rect.center())
        self._fitted = True

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 — Qt's name
        super().resizeEvent(event)
        if self._fitted:
            QtCore.QTimer.singleShot(0, self, self.fit)  # after the splitter has given the view its new size

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 — Qt's name
        super().showEvent(event)
        if self._fitted:
            QtCore.QTimer.singleShot(0, self, self.fit)

    def _user_zoomed(self) -> None:
        self._fitted = False

    def select(self, kind: str, item_id: str) -> None:
        """Show a node's or link's attributes in the side panel (a click on it does this)."""
        topology = self.topology or {}
        found = next((x for x in topology.get("nodes" if kind == "node" else "links") or []
                      if x.get("id") == item_id), None)
        if found is None:
            return
        if kind == "node":
            title = f"{KIND_TITLES.get(found.get('kind'), found.get('kind'))}: {found.get('label') or item_id}"
            rows = [("id", item_id), ("parent", str(found.get("parent")))] + attribute_rows(found.get("attrs") or {})
            rows += gpu_matrix_rows(topology.get("gpu_matrix"), found)
        else:
            title = f"{found.get('kind')} link {item_id}: {STATE_TEXT.get(found.get('state'), found.get('state'))}"
            rows = [("link", link_text(found))] + attribute_rows(
                {k: v for k, v in found.items() if k not in ("id",)})
            for entry in measured_for(found, self.entries):
                rows.append((f"measured {entry.get('id')}", f"{entry['median_gbs']:.2f} GB/s median · "
                                                            f"{entry.get('method') or 'method not recorded'}"))
        self.details_title.setText(title)
        self.details.setRowCount(len(rows))
        for row, (name, value) in enumerate(rows):
            self.details.setItem(row, 0, QtWidgets.QTableWidgetItem(name))
            self.details.setItem(row, 1, QtWidgets.QTableWidgetItem(value))
        self.details.resizeRowsToContents()
        self.sig_selected.emit(kind, item_id)

    def edge_style(self, link_id: str) -> dict[str, Any]:
        """How an edge is drawn (tests read it): {"color": hex, "dashed": bool, "width": float, "tooltip": str}."""
        item = self.edge_items[link_id]
        pen = item.pen()
        return {"color": pen.color().name(), "dashed": pen.style() != QtCore.Qt.PenStyle.SolidLine,
                "width": pen.widthF(), "tooltip": item.toolTip()}

    # ---- Private API
    def _column_lefts(self, place: Mapping[str, tuple[int, float, float]],
                      tree_links: Mapping[str, Mapping[str, Any]]) -> dict[int, float]:
        """Each level's left edge: the gap before a level is as wide as the widest edge label into it (a level
        whose links have short labels takes less room, so the whole tree fits larger on the screen)."""
        metrics = QtGui.QFontMetricsF(theme.font(theme.SMALL_PT - 1))
        widest: dict[int, float] = {}
        for node_id, (depth, _top, _height) in place.items():
            link = tree_links.get(node_id)
            if link is None:
                continue
            lines = [link_text(link), measured_label(link, self.entries) or ""]
            widest[depth] = max(widest.get(depth, 0.0), *(metrics.horizontalAdvance(line) for line in lines))
        lefts, x = {}, 0.0
        for depth in range(max((d for d, _t, _h in place.values()), default=0) + 1):
            if depth:
                x += NODE_W + max(MIN_GAP, widest.get(depth, 0.0) + 24)
            lefts[depth] = x
        return lefts

    def _legend_html(self) -> str:
        fg, muted = theme.FOREGROUND, theme.MUTED

        def swatch(color: str, text: str, dash: bool = False) -> str:
            line = "┅┅" if dash else "━━"
            return f"<span style='color:{color}; font-weight:bold'>{line}</span> {text}"

        parts = [swatch(fg, "link at its maximum"), swatch(IDLE_COLOR, "below max at idle — check under load", True),
                 swatch(FLAG_COLOR, "FLAGGED: low under load"), swatch(NVLINK_COLOR, "NVLink"),
                 swatch(muted, "state unknown", True)]
        kinds = " ".join(f"<span style='color:{c}'>■</span> {KIND_TITLES[k]}" for k, c in KIND_COLORS.items()
                         if k in ("package", "numa", "pcie-switch", "gpu", "accelerator", "nvme", "nic",
                                  "pcie-device"))
        return (f"<span style='color:{fg}'>{' &nbsp; '.join(parts)}<br>{kinds} &nbsp; "
                f"<span style='color:{muted}'>GB/s per direction; 'measured' = median of the machine card's "
                f"trials</span></span>")

    def _pen_for(self, link: Mapping[str, Any] | None) -> tuple[QtGui.QPen, str]:
        state = (link or {}).get("state") or "unknown"
        kind = (link or {}).get("kind")
        if link is None:
            return QtGui.QPen(theme.qcolor(theme.MUTED), 1.0), ""
        if state == "low-under-load":
            pen = QtGui.QPen(QtGui.QColor(FLAG_COLOR), 3.5)
        elif state == "below-max-idle":
            pen = QtGui.QPen(QtGui.QColor(IDLE_COLOR), 2.5, QtCore.Qt.PenStyle.DashLine)
        elif kind == "nvlink":
            pen = QtGui.QPen(QtGui.QColor(NVLINK_COLOR), 2.0)
        elif state == "unknown":
            pen = QtGui.QPen(theme.qcolor(theme.MUTED), 1.5, QtCore.Qt.PenStyle.DotLine)
        else:
            pen = QtGui.QPen(theme.qcolor(theme.FOREGROUND), 1.5)
        pen.setCosmetic(True)
        tip = f"{link.get('id')}: {link_text(link)}\n{STATE_TEXT.get(state, state)}"
        if link.get("note"):
            tip += f"\n{link['note']}"
        for entry in measured_for(link, self.entries):
            tip += f"\nmeasured {entry.get('id')}: {entry['median_gbs']:.2f} GB/s (median)"
        return pen, tip

    def _tree_edge(self, parent: QtCore.QRectF, child: QtCore.QRectF, node: Mapping[str, Any],
                   link: Mapping[str, Any] | None) -> None:
        start = QtCore.QPointF(parent.right(), parent.center().y())
        end = QtCore.QPointF(child.left(), child.center().y())
        path = QtGui.QPainterPath(start)
        bend = (end.x() - start.x()) * 0.5
        path.cubicTo(start + QtCore.QPointF(bend, 0), end - QtCore.QPointF(bend, 0), end)
        pen, tip = self._pen_for(link)
        item = self.scene.addPath(path, pen)
        item.setZValue(0)
        if link is None:
            return
        item.setToolTip(tip)
        item.setData(0, ("link", link.get("id")))
        self.edge_items[str(link.get("id"))] = item
        text = link_text(link)
        measured = measured_label(link, self.entries)
        if measured:
            text += "\n" + measured
        label = self.scene.addSimpleText(text, theme.font(theme.SMALL_PT - 1))
        label.setBrush(pen.color() if link.get("state") in ("low-under-load", "below-max-idle")
                       else theme.qcolor(theme.FOREGROUND))
        box = label.boundingRect()
        label.setPos(end.x() - box.width() - 8, end.y() - box.height() - 1)
        backing = self.scene.addRect(label.sceneBoundingRect().adjusted(-2, 0, 2, 0), QtGui.QPen(QtCore.Qt.PenStyle.NoPen),
                                     QtGui.QBrush(theme.qcolor(theme.BACKGROUND, 200)))
        backing.setZValue(1.5)  # the label stays readable where another edge passes under it
        backing.setData(0, ("link", link.get("id")))
        label.setToolTip(tip)
        label.setData(0, ("link", link.get("id")))
        label.setZValue(2)
        self.edge_labels[str(link.get("id"))] = label

    def _arc_edge(self, a: QtCore.QRectF, b: QtCore.QRectF, link: Mapping[str, Any]) -> None:
        """An NVLink between two GPUs: an arc on the right of the GPU column, wider for GPUs further apart."""
        start = QtCore.QPointF(a.right(), a.center().y())
        end = QtCore.QPointF(b.right(), b.center().y())
        reach = 20 + 0.35 * abs(end.y() - start.y())
        path = QtGui.QPainterPath(start)
        path.cubicTo(start + QtCore.QPointF(reach, 0), end + QtCore.QPointF(reach, 0), end)
        pen, tip = self._pen_for(link)
        item = self.scene.addPath(path, pen)
        item.setToolTip(tip)
        item.setData(0, ("link", link.get("id")))
        item.setZValue(1)
        self.edge_items[str(link.get("id"))] = item

    def _node(self, node: Mapping[str, Any], rect: QtCore.QRectF) -> None:
        color = KIND_COLORS.get(node.get("kind"), "#7f7f7f")
        item = self.scene.addRect(rect, QtGui.QPen(QtGui.QColor(color), 1.5),
                                  QtGui.QBrush(theme.tint(color, 0.18)))
        item.setZValue(3)
        item.setData(0, ("node", node["id"]))
        item.setToolTip(f"{KIND_TITLES.get(node.get('kind'), node.get('kind'))} {node['id']} (click for details)")
        lines = node_lines(node)
        for index, line in enumerate(lines):
            text = QtWidgets.QGraphicsSimpleTextItem(_elide(line, NODE_W - 2 * NODE_PAD), item)
            text.setFont(theme.font(theme.SMALL_PT, bold=index == 0))
            text.setBrush(theme.qcolor(theme.FOREGROUND) if index == 0 else theme.qcolor(theme.MUTED))
            text.setPos(rect.left() + NODE_PAD, rect.top() + NODE_PAD + index * LINE_H - 1)
            text.setData(0, ("node", node["id"]))
            text.setToolTip(line)
        self.node_items[node["id"]] = item


def _elide(text: str, width: float) -> str:
    metrics = QtGui.QFontMetricsF(theme.font(theme.SMALL_PT))
    return metrics.elidedText(text, QtCore.Qt.TextElideMode.ElideRight, width)


class _View(QtWidgets.QGraphicsView):
    """Wheel zooms around the pointer, drag pans, a click on a node or an edge reports it."""

    sig_clicked = QtCore.Signal(str, str)
    sig_zoomed = QtCore.Signal()

    def __init__(self, scene: QtWidgets.QGraphicsScene, parent: QtWidgets.QWidget | None = None):
        super().__init__(scene, parent)
        self.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        self.setDragMode(QtWidgets.QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QtWidgets.QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setBackgroundBrush(theme.qcolor(theme.BACKGROUND))
        self.setMinimumSize(320, 240)

    def zoom(self, factor: float) -> None:
        current = self.transform().m11()
        factor = min(max(factor, 0.1 / current), 4.0 / current)  # 10 %–400 %
        self.scale(factor, factor)
        self.sig_zoomed.emit()

    def wheelEvent(self, event: QtGui.QWheelEvent) -> None:  # noqa: N802 — Qt's name
        self.zoom(math.pow(1.15, event.angleDelta().y() / 120))

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802 — Qt's name
        for item in self.items(event.position().toPoint()):
            data = item.data(0)
            if isinstance(data, tuple) and len(data) == 2:
                self.sig_clicked.emit(str(data[0]), str(data[1]))
                break
        super().mousePressEvent(event)
