"""How every chart looks and what its menu offers: axis pens and fonts from the theme, a faint grid, labels that keep
their unit, and the "Export PNG/SVG…" entries (widgets.chart_export).

Apart from widgets.theme so the theme stays at the bottom (colours and fonts, no pyqtgraph) and the export, which
reads the theme, does not import it back.
"""

from __future__ import annotations

import pyqtgraph as pg

from widgets import chart_export, theme


def style_plot(plot: pg.PlotItem, x_label: str, y_label: str) -> None:
    """Axis pens, large tick and label fonts, a faint grid, the export entries; labels carry their unit.

    pyqtgraph's automatic SI prefixes are off for good: "latency (ms)" must never turn into "latency (kms)", and
    pyqtgraph 0.14 recomputes the prefix whenever a label is set even with auto-prefix disabled (an axis spanning
    0.4–0.8 would tick 400–800), so the ranges where it may apply are emptied too.
    """
    foreground = theme.current().foreground
    tick_font = theme.font(theme.BASE_PT)
    for name, text in (("bottom", x_label), ("left", y_label)):
        axis = plot.getAxis(name)
        axis.enableAutoSIPrefix(False)
        axis.setPen(pg.mkPen(foreground))
        axis.setTextPen(pg.mkPen(foreground))
        axis.setStyle(tickFont=tick_font, tickTextOffset=6)
        axis.setLabel(text, **{"color": foreground, "font-size": f"{theme.AXIS_LABEL_PT}pt"})
        axis.setSIPrefixEnableRanges(((0.0, 0.0),))
        axis.updateAutoSIPrefix()
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.hideButtons()
    chart_export.install(plot)  # every chart is styled here, so every chart gets "Export PNG/SVG…"
