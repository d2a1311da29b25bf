"""Colours and fonts shared by every widget, in a light and a dark scheme (charts are styled from them by
widgets.plot_style).

The console is also shown on a big screen to people who did not set up the run, so every view uses the same
background, text colour, large type, and one colour per meaning (run status, series). The scheme follows the
desktop: a dark window colour in the application's palette picks the dark scheme (``use_for``), and the app can pin
either one. It is chosen once at start-up, before any widget is built: widgets read ``theme.FOREGROUND`` and the
other colour names when they build, and those names resolve to the scheme in use (see ``__getattr__``).

Only PySide6's QtGui is imported here, so the light shell can pick its scheme before pyqtgraph is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from PySide6 import QtGui, QtWidgets


@dataclass(frozen=True)
class Scheme:
    """Every colour a view uses, as a hex string."""

    name: str
    background: str  # plots, cards
    foreground: str  # text, axes
    muted: str  # captions, units, secondary text
    border: str
    panel: str  # placeholder backgrounds
    good: str
    bad: str
    latency: str
    p50: str
    p99: str
    palette: tuple[str, ...]  # one colour per series
    status: dict[str, str] = field(default_factory=dict)
    band: str = "#9e9e9e"  # a shaded time span without a colour of its own
    band_alpha: int = 40  # fill of a shaded span over the background (0-255)
    window: str = ""  # the Qt palette's window colour (pinned schemes)
    selection: str = ""  # the Qt palette's highlight colour (pinned schemes)
    alternate: str = ""  # the Qt palette's alternate row colour (pinned schemes)


LIGHT = Scheme(
    name="light",
    background="#ffffff", foreground="#222222", muted="#666666", border="#d0d0d0", panel="#f5f6f8",
    good="#2e7d32", bad="#c62828", latency="#4c78a8", p50="#f58518", p99="#c62828",
    # Tableau 10: distinct, colour-blind friendlier, prints well.
    palette=("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
             "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"),
    status={"completed": "#2e7d32", "failed": "#c62828", "interrupted": "#e65100", "cancelled": "#757575",
            "running": "#1565c0"},
    band_alpha=40, window="#efefef", selection="#308cc6", alternate="#f7f7f7",
)
DARK = Scheme(
    name="dark",
    background="#1e1f22", foreground="#e8e8e8", muted="#a3a7ae", border="#45484e", panel="#2a2c30",
    good="#66bb6a", bad="#ef5350", latency="#7aa6d6", p50="#ffa040", p99="#ff6b6b",
    # Tableau 10, lifted so each series stands out on a dark background as much as on white.
    palette=("#5fa2dd", "#ff9f40", "#5cc25c", "#ff6b6b", "#b39ddb",
             "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#6edbe8"),
    status={"completed": "#66bb6a", "failed": "#ef5350", "interrupted": "#ffa726", "cancelled": "#a3a7ae",
            "running": "#64b5f6"},
    band_alpha=48, window="#2b2d31", selection="#3d6fb4", alternate="#25272b",
)
SCHEMES = {scheme.name: scheme for scheme in (LIGHT, DARK)}
MODES = ("auto", "light", "dark")

_current = LIGHT

# Names the views read, resolved against the scheme in use (module __getattr__, PEP 562).
_COLOR_NAMES = {
    "BACKGROUND": "background", "FOREGROUND": "foreground", "MUTED": "muted", "BORDER": "border",
    "PANEL": "panel", "GOOD": "good", "BAD": "bad", "LATENCY_COLOR": "latency", "P50_COLOR": "p50",
    "P99_COLOR": "p99", "PALETTE": "palette", "STATUS_COLORS": "status", "BAND_COLOR": "band",
    "BAND_ALPHA": "band_alpha",
}

SMALL_PT = 10
BASE_PT = 11
AXIS_LABEL_PT = 12
TITLE_PT = 14
FIGURE_PT = 22


def __getattr__(name: str) -> Any:
    try:
        return getattr(_current, _COLOR_NAMES[name])
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def title_label(text: str) -> QtWidgets.QLabel:
    """A chart's or panel's title line: the title size, bold."""
    label = QtWidgets.QLabel(text)
    label.setFont(font(TITLE_PT, bold=True))
    return label


def caption_label() -> QtWidgets.QLabel:
    """The small, muted, wrapped line under a chart that says how its figures were obtained."""
    label = QtWidgets.QLabel("")
    label.setWordWrap(True)
    label.setFont(font(SMALL_PT))
    label.setStyleSheet(f"color: {_current.muted};")
    return label


def read_only_rows(table: QtWidgets.QTableWidget, header: QtGui.QFont | None = None) -> None:
    """A table to read, not edit: the base font (its header `header`, bold by default), no row numbers, whole
    rows selected, alternating rows, no grid, one line per cell."""
    table.setFont(font(BASE_PT))
    table.horizontalHeader().setFont(header or font(BASE_PT, bold=True))
    table.verticalHeader().hide()
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.setShowGrid(False)
    table.setWordWrap(False)


# ---- Choosing the scheme
def current() -> Scheme:
    return _current


def use(scheme: Scheme) -> None:
    """Make `scheme` the one views read from now on (widgets already built keep their colours)."""
    global _current
    _current = scheme


def is_dark(palette: QtGui.QPalette) -> bool:
    """A window colour darker than mid-grey: the desktop runs a dark theme."""
    return palette.color(QtGui.QPalette.ColorRole.Window).lightness() < 128


def scheme_for(palette: QtGui.QPalette) -> Scheme:
    return DARK if is_dark(palette) else LIGHT


def use_for(app: Any, mode: str = "auto") -> Scheme:
    """Pick the scheme for a QApplication and return it.

    ``auto`` follows the desktop's palette; ``light`` or ``dark`` pins that scheme and gives the application the
    matching palette (Fusion style, which honours it on every platform), so Qt's own widgets agree with the plots.
    """
    if mode not in MODES:
        raise ValueError(f"theme {mode!r} is not one of {', '.join(MODES)}")
    if mode == "auto":
        scheme = scheme_for(app.palette())
    else:
        scheme = SCHEMES[mode]
        app.setStyle("Fusion")
        app.setPalette(qpalette(scheme))
    use(scheme)
    return scheme


def qpalette(scheme: Scheme) -> QtGui.QPalette:
    """A Qt palette in the scheme's colours: windows, inputs, buttons, selection, tooltips, disabled text."""
    role, group = QtGui.QPalette.ColorRole, QtGui.QPalette.ColorGroup
    palette = QtGui.QPalette()
    colors = {
        role.Window: scheme.window, role.WindowText: scheme.foreground, role.Base: scheme.background,
        role.AlternateBase: scheme.alternate, role.Text: scheme.foreground, role.Button: scheme.window,
        role.ButtonText: scheme.foreground, role.BrightText: scheme.bad, role.Highlight: scheme.selection,
        role.HighlightedText: "#ffffff", role.ToolTipBase: scheme.panel, role.ToolTipText: scheme.foreground,
        role.PlaceholderText: scheme.muted, role.Link: scheme.status["running"], role.Mid: scheme.border,
        role.Dark: scheme.border, role.Light: scheme.panel, role.Midlight: scheme.panel,
        role.Shadow: "#000000",
    }
    for name, color in colors.items():
        palette.setColor(name, QtGui.QColor(color))
    disabled = tint(scheme.muted, 0.6, base=scheme.window)
    for name in (role.WindowText, role.Text, role.ButtonText):
        palette.setColor(group.Disabled, name, disabled)
    return palette


# ---- Helpers
def font(point_size: float, bold: bool = False) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPointSizeF(point_size)
    f.setBold(bold)
    return f


def qcolor(color: str, alpha: int = 255) -> QtGui.QColor:
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    return c


def tint(color: str, strength: float, base: str | None = None) -> QtGui.QColor:
    """An opaque colour between the background (or `base`) and `color`. Curves use this rather than alpha: Qt
    strokes a translucent polyline through its path stroker, which is 10-100× slower on dense data."""
    bottom, top = QtGui.QColor(base or _current.background), QtGui.QColor(color)
    mix = [round(b + (t - b) * strength) for b, t in zip(bottom.getRgb()[:3], top.getRgb()[:3], strict=True)]
    return QtGui.QColor(*mix)

