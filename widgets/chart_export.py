"""Export a chart as PNG or SVG: ``export_chart(plot, path)``, and "Export PNG…" / "Export SVG…" on its menu.

Every chart is styled by ``plot_style.style_plot``, which calls :func:`install`, so each one gets the two menu entries
without code of its own. A chart's title and legend are QLabels above the plot (they read well from a distance
and never hide data), so a plain pyqtgraph export would lose them; a chart names its title with
:func:`set_title`, and for the moment of the export the title and a legend of the plot's named curves are put
into the plot itself, then taken out again. A chart smaller than :data:`MIN_SIZE` is exported at that size, so a
narrow chart still gives a readable figure.

PNG is drawn at :data:`PNG_SCALE` times the on-screen size (crisp on slides and high-DPI screens) and says so in
its DPI; SVG keeps paths as vectors and text as ``<text>``, so labels stay sharp, searchable and editable.

pyqtgraph 0.14's SVGExporter stops on closed paths, which Qt 6's SVG generator writes with a closing ``Z``
(pyqtgraph issue 3495); :func:`_patch_svg_closed_paths` teaches it to pass them through unchanged.

Where to save is the caller's: the menu asks with a file dialog that starts in the last export directory
(QSettings key :data:`SETTINGS_KEY`). A failure (unwritable path, full disk) is a :class:`ChartExportError` with
the reason in words, shown as a message box from the menu, never an exception out of a slot.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme

FORMATS = {".png": "PNG", ".svg": "SVG"}
PNG_SCALE = 2.0
MIN_SIZE = QtCore.QSizeF(640, 400)  # logical pixels: below this, title, legend and ticks crowd the data out
MAX_LEGEND = 12  # entries; more would bury the chart (64 per-core lines are one "per core" entry anyway)
SETTINGS_KEY = "charts/export_dir"
ERROR_OBJECT_NAME = "chart_export_error"

_TITLE = "_labconsole_export_title"
_LEGEND = "_labconsole_export_legend"
_INSTALLED = "_labconsole_export_actions"
_LEGEND_ROW = 4  # PlotItem's grid: title 0, top axis 1, view 2, bottom axis 3


class ChartExportError(RuntimeError):
    """The chart could not be exported; the message says where and why in words a person can act on."""


# ---- Public API
def export_chart(plot: Any, path: str | os.PathLike, *, scale: float = PNG_SCALE) -> Path:
    """Write `plot` (a PlotWidget or PlotItem) to `path`, PNG or SVG by its suffix; returns the path written.

    The file is written whole or not at all (a temporary file beside it, then renamed), so a full disk never
    leaves half a PNG under the name asked for.
    """
    target = Path(path).expanduser()
    kind = FORMATS.get(target.suffix.lower())
    if kind is None:
        raise ChartExportError(f"Cannot export to {target.name}: the file name must end in .png or .svg.")
    item = plot_item(plot)
    if item.scene() is None or not item.scene().views():
        raise ChartExportError("Cannot export this chart: it is not shown in a window.")
    with _dressed(item):
        data = _png_bytes(item, scale) if kind == "PNG" else _svg_bytes(item)
    _write_atomically(target, data)
    return target


def install(plot: Any) -> None:
    """Add "Export PNG…" and "Export SVG…" to the chart's context menu (once, however often it is styled)."""
    item = plot_item(plot)
    if getattr(item, _INSTALLED, None):
        return
    menu = item.getViewBox().menu
    first = menu.actions()[0] if menu.actions() else None
    actions = {}
    for suffix, text in ((".png", "Export PNG…"), (".svg", "Export SVG…")):
        action = QtGui.QAction(text, menu)
        action.setObjectName(f"chart_export{suffix.replace('.', '_')}")
        action.setToolTip(f"Save this chart as a {FORMATS[suffix]} file, with its title, axis labels and legend")
        action.triggered.connect(lambda _checked=False, s=suffix, i=item: ask_and_export(i, s))
        menu.insertAction(first, action)
        actions[suffix] = action
    menu.insertSeparator(first)
    setattr(item, _INSTALLED, actions)
    _adopt_pyqtgraph_export(item.scene())


def export_actions(plot: Any) -> dict[str, QtGui.QAction]:
    """The chart's menu entries by suffix: {".png": "Export PNG…", ".svg": "Export SVG…"}; {} if not installed."""
    return dict(getattr(plot_item(plot), _INSTALLED, None) or {})


def set_title(plot: Any, title: str | QtWidgets.QLabel | Callable[[], str]) -> None:
    """The chart's title in exports: a text, the QLabel that shows it (read at export time), or a callable."""
    setattr(plot_item(plot), _TITLE, title)


def set_legend(plot: Any, entries: Callable[[], list[tuple[Any, str]]]) -> None:
    """The legend of exports, as (curve, label) pairs read at export time; by default the named curves in the
    order they were added."""
    setattr(plot_item(plot), _LEGEND, entries)


def title_of(plot: Any) -> str:
    """The title an export of `plot` carries ("" when it has none)."""
    item = plot_item(plot)
    source = getattr(item, _TITLE, None)
    if isinstance(source, QtWidgets.QLabel):
        text = source.text()
    elif callable(source):
        text = source()
    else:
        text = source or ""
    if not text and item.titleLabel.isVisible():
        text = item.titleLabel.text
    return " ".join(str(text or "").split())


def ask_and_export(plot: Any, suffix: str, parent: QtWidgets.QWidget | None = None) -> Path | None:
    """Ask where to save (starting in the last export directory), export, and say what went wrong if it did.

    Returns the file written, or None when the dialog was cancelled or the export failed (a message box says why).
    """
    item = plot_item(plot)
    parent = parent or item.getViewWidget()
    settings = QtCore.QSettings()
    start_dir = str(settings.value(SETTINGS_KEY, "") or "") or str(Path.home())
    suggested = str(Path(start_dir) / f"{_file_stem(title_of(item))}{suffix}")
    kind = FORMATS[suffix]
    chosen, _ = QtWidgets.QFileDialog.getSaveFileName(parent, f"Export chart as {kind}", suggested,
                                                      f"{kind} {'image' if kind == 'PNG' else 'drawing'} (*{suffix})")
    if not chosen:
        return None
    path = Path(chosen)
    if path.suffix.lower() not in FORMATS:
        path = path.with_name(path.name + suffix)
    try:
        written = export_chart(item, path)
    except ChartExportError as exc:
        _show_error(parent, str(exc))
        return None
    settings.setValue(SETTINGS_KEY, str(written.parent))
    return written


def plot_item(plot: Any) -> pg.PlotItem:
    """The PlotItem of a PlotWidget, of a view that exposes one as ``plot_item`` (the live plots), or the item."""
    if isinstance(plot, pg.PlotItem):
        return plot
    if isinstance(getattr(plot, "plot_item", None), pg.PlotItem):
        return plot.plot_item
    getter = getattr(plot, "getPlotItem", None)
    if getter is None:
        raise TypeError(f"not a pyqtgraph chart: {type(plot).__name__}")
    return getter()


# ---- Private API
@contextlib.contextmanager
def _dressed(item: pg.PlotItem) -> Iterator[None]:
    """For the export: the title on top, the legend under the x axis, at least MIN_SIZE; all undone after."""
    title = title_of(item)
    had_title = item.titleLabel.isVisible()
    geometry = item.geometry()
    legend = _legend(item)
    try:
        if title and not had_title:
            item.setTitle(_html(title), color=theme.FOREGROUND, size=f"{theme.TITLE_PT}pt", bold=True)
        if legend is not None:
            item.layout.addItem(legend, _LEGEND_ROW, 1)
        if geometry.width() < MIN_SIZE.width() or geometry.height() < MIN_SIZE.height():
            item.setGeometry(QtCore.QRectF(geometry.topLeft(), geometry.size().expandedTo(MIN_SIZE)))
        _settle(item)
        yield
    finally:
        if legend is not None:
            item.layout.removeItem(legend)
            if legend.scene() is not None:
                legend.scene().removeItem(legend)
        if title and not had_title:
            item.setTitle(None)
        item.setGeometry(geometry)
        _settle(item)
        item.update()


def _adopt_pyqtgraph_export(scene: Any) -> None:
    """pyqtgraph's own "Export..." (CSV, Matplotlib, print, other sizes) stays, named for what it adds, and its SVG
    gets the same closed-path fix as ours."""
    entries = getattr(scene, "contextMenu", None)
    if not entries or getattr(scene, "_labconsole_export_adopted", False):
        return
    entries[0].setText("More export formats…")
    entries[0].triggered.connect(lambda *_: _patch_svg_closed_paths())
    scene._labconsole_export_adopted = True


def _settle(item: pg.PlotItem) -> None:
    """Apply a layout change now: the exporters paint items directly, without an event loop turn."""
    item.layout.invalidate()
    item.layout.activate()
    scene = item.scene()
    if scene is not None and hasattr(scene, "prepareForPaint"):
        scene.prepareForPaint()  # view boxes update their transforms here


def _legend(item: pg.PlotItem) -> pg.LegendItem | None:
    """A legend of the plot's named, visible curves with data (one entry per name), or None when none is named."""
    entries: list[tuple[Any, str]] = []
    seen: set[str] = set()
    provider = getattr(item, _LEGEND, None)
    candidates = provider() if provider else [(data, data.name() if hasattr(data, "name") else None)
                                              for data in item.listDataItems()]
    for data, name in candidates:
        if not name or name in seen or not data.isVisible():
            continue
        x = data.getData()[0] if hasattr(data, "getData") else None
        if x is None or len(x) == 0:
            continue
        seen.add(name)
        entries.append((data, str(name)))
    if not entries:
        return None
    legend = pg.LegendItem(offset=None, labelTextColor=theme.FOREGROUND, labelTextSize=f"{theme.BASE_PT}pt",
                           colCount=min(len(entries[:MAX_LEGEND]), 4), horSpacing=8)
    # A legend ignores the view's zoom on screen; in a 2x export it must scale with everything else.
    legend.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, False)
    for data, name in entries[:MAX_LEGEND]:
        legend.addItem(data, _html(name))
    if len(entries) > MAX_LEGEND:
        legend.addItem(pg.PlotDataItem(), f"… and {len(entries) - MAX_LEGEND} more")
    return legend


def _png_bytes(item: pg.PlotItem, scale: float) -> bytes:
    from pyqtgraph.exporters import ImageExporter  # here: a dozen ms of imports nobody needs until an export

    exporter = ImageExporter(item)
    width = max(1, round(item.sceneBoundingRect().width() * scale))
    exporter.parameters()["width"] = width  # the height follows, keeping the aspect ratio
    image = exporter.export(toBytes=True)
    if image is None or image.isNull():
        raise ChartExportError("Cannot export this chart: Qt could not draw it into an image.")
    dots_per_meter = round(96 * scale / 0.0254)  # opens at its on-screen size in slides and documents
    image.setDotsPerMeterX(dots_per_meter)
    image.setDotsPerMeterY(dots_per_meter)
    buffer = QtCore.QBuffer()
    buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    writer = QtGui.QImageWriter(buffer, b"png")
    writer.setText("Title", title_of(item) or "Lab Console chart")
    writer.setText("Software", "Lab Console")
    if not writer.write(image):
        raise ChartExportError(f"Cannot export this chart: PNG encoding failed ({writer.errorString()}).")
    return bytes(buffer.data())


def _svg_bytes(item: pg.PlotItem) -> bytes:
    from pyqtgraph.exporters import SVGExporter

    _patch_svg_closed_paths()
    try:
        svg = SVGExporter(item).export(toBytes=True).decode("utf-8")
    except Exception as exc:  # pyqtgraph's SVG rebuild is fragile: say so instead of crashing the window
        raise ChartExportError(f"Cannot export this chart as SVG ({type(exc).__name__}: {exc}); "
                               "export it as PNG instead.") from exc
    rect = item.sceneBoundingRect()
    title = title_of(item) or "Lab Console chart"
    svg = svg.replace("<title>pyqtgraph SVG export</title>", f"<title>{_html(title)}</title>", 1)
    svg = svg.replace("<desc>Generated with Qt and pyqtgraph</desc>", "<desc>Exported from Lab Console</desc>", 1)
    svg = svg.replace(' viewBox ="', f' width="{round(rect.width())}" height="{round(rect.height())}" viewBox="', 1)
    # A clip path's outline is geometry only; SVG Tiny viewers (Qt's own) that skip clipping would stroke it.
    svg = re.sub(r'(<clipPath\b[^>]*>\s*<path )', r'\1stroke="none" fill="none" ', svg)
    # Qt names its default font "Sans Serif", which no browser knows (it would fall back to a serif face).
    family = QtGui.QFontInfo(theme.font(theme.BASE_PT)).family().replace("'", "")
    svg = re.sub(r'font-family="(?:&quot;)?Sans Serif(?:&quot;)?"', f"font-family=\"'{_html(family)}', sans-serif\"",
                 svg)
    return svg.encode("utf-8")


_CLOSE = re.compile(r"\s*[Zz]\s*")
_CLOSE_WITH_POINT = re.compile(r"Z\S*")


def _patch_svg_closed_paths() -> None:
    """Let pyqtgraph's SVGExporter rebuild paths that Qt closes with "Z" (it expects "x,y" pairs only).

    Each "Z" is handed over as "Z0,0" (a pair it can parse, keeping the subpath's place) and made a plain "Z"
    again afterwards. Patched once, at the first SVG export, and only while pyqtgraph has the function.
    """
    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = getattr(module, "correctCoordinates", None)
    if original is None or getattr(original, "_closes_paths", False):
        return

    def correct_coordinates(node, defs, item, options):
        closed = []
        for path in node.getElementsByTagName("path"):
            d = path.getAttribute("d")
            if "Z" in d or "z" in d:
                path.setAttribute("d", _CLOSE.sub(" Z0,0 ", d).strip())
                closed.append(path)
        try:
            return original(node, defs, item, options)
        finally:
            for path in closed:
                path.setAttribute("d", _CLOSE_WITH_POINT.sub("Z", path.getAttribute("d")).strip())

    correct_coordinates._closes_paths = True
    module.correctCoordinates = correct_coordinates


def _write_atomically(target: Path, data: bytes) -> None:
    where = target.parent if str(target.parent) else Path(".")
    if not where.is_dir():
        raise ChartExportError(f"Cannot save the chart to {target}: the folder {where} does not exist.")
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".part", dir=where)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _file_mode(target))  # mkstemp makes it private; an exported chart is for sharing
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ChartExportError(f"Cannot save the chart to {target}: {reason}.") from exc
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _file_mode(target: Path) -> int:
    """The mode a plain new file gets here (0o666 less the umask), or the replaced file's own mode."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        pass
    umask = 0o022
    try:  # read, not set: os.umask() would change it for every thread for a moment
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                umask = int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o666 & ~umask


def _show_error(parent: QtWidgets.QWidget | None, text: str) -> None:
    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, "Chart not exported", text,
                                QtWidgets.QMessageBox.StandardButton.Ok, parent)
    box.setObjectName(ERROR_OBJECT_NAME)
    box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()  # not exec(): a modal loop inside a menu slot would stall the live plots


def _file_stem(title: str) -> str:
    stem = re.sub(r"[^\w.-]+", "-", title.strip().lower()).strip("-.")
    return stem[:60] or "chart"


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
