"""Big-screen views for demo mode: a figure tile, a verdict banner, scaled labels (the live latency trace is
`widgets.demo_trace`).

Read from 3 m away: sizes are pixels on a 1920×1080 screen, scaled with the window (`set_scale`), so a figure
is ~100 px tall and no text is under 24 px; colours are the scheme's foreground on its panel (no grey on grey).
Each view takes its `theme.Scheme` explicitly and can be switched live (`set_scheme`): demo mode has its own
light/dark choice, apart from the window's.

Views only: they are fed numbers and arrays, format them (`widgets.formatting`) and draw; they compute nothing
about runs. Nothing redraws per message: the owner's one timer calls `refresh()`.
"""

from __future__ import annotations

import math
from html import escape

from PySide6 import QtCore, QtGui, QtWidgets

from widgets import layouts, theme
from widgets.formatting import MISSING, as_number, format_number

# Pixel sizes at 1920×1080 (scale 1.0).
VALUE_PX = 104
COMPACT_VALUE_PX = 68
UNIT_PX = 38
LABEL_PX = 32
CAPTION_PX = 25
TICK_PX = 24
_ROLE_COLORS = {"foreground": "foreground", "muted": "muted", "good": "good", "bad": "bad"}


def _color(scheme: theme.Scheme, role: str) -> str:
    if role in _ROLE_COLORS:
        return getattr(scheme, _ROLE_COLORS[role])
    if role == "accent":
        return scheme.status.get("running", scheme.foreground)
    if role == "estimated":
        return scheme.status.get("interrupted", scheme.bad)
    return role  # an explicit colour


def pixel_font(px: float, bold: bool = False) -> QtGui.QFont:
    font = QtGui.QFont()
    font.setPixelSize(max(8, round(px)))
    font.setBold(bold)
    return font


class ScaledLabel(QtWidgets.QLabel):
    """A label whose font is `px` pixels at scale 1, in a colour role of the scheme (foreground, muted, good,
    bad, accent, estimated, or a colour).

    `shrink`: a one-line label that never widens the window; text that does not fit ends in "…" (the whole
    text stays in `text()` and the tooltip). Without it, the label asks for its text's width (or wraps)."""

    def __init__(self, text: str = "", px: float = CAPTION_PX, bold: bool = False, role: str = "foreground",
                 scheme: theme.Scheme | None = None, wrap: bool = False, shrink: bool = False):
        super().__init__()
        self._px, self._bold, self._role = px, bold, role
        self._scheme = scheme or theme.current()
        self._scale = 1.0
        self._shrink = shrink and not wrap
        self._full = ""
        self.setWordWrap(wrap)
        self.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        if self._shrink:
            self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self._apply()
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 — Qt override
        self._full = str(text)
        if self._shrink:
            self._elide()
        else:
            super().setText(self._full)

    def text(self) -> str:
        return self._full

    def set_role(self, role: str) -> None:
        if role != self._role:
            self._role = role
            self._apply()

    def role(self) -> str:
        return self._role

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        self._apply()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        self.setFont(pixel_font(self._px * scale, self._bold))
        if self._shrink:
            self._elide()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 — Qt override
        super().resizeEvent(event)
        if self._shrink:
            self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, max(1, self.width()))
        super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")

    def _apply(self) -> None:
        self.setFont(pixel_font(self._px * self._scale, self._bold))
        self.setStyleSheet(f"color: {_color(self._scheme, self._role)}; background: transparent;")


def tile_number(value: float | None) -> str:
    """A figure short enough for a tile: 3 significant digits, and 10,000 and up as 10.4k, 1.23M."""
    x = as_number(value)
    if x is None or not math.isfinite(x):
        return MISSING
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(x) >= limit:
            return f"{format_number(x / (limit if suffix != 'k' else 1e3))}{suffix}"
    return format_number(x)


class FigureTile(QtWidgets.QFrame):
    """One figure: label (and an ESTIMATED tag when it is one), value with its unit, a caption saying what the
    figure covers. A missing figure reads "not available" with the reason, never 0.

    Value and unit are one rich-text line that wraps the unit under the value when the tile is too narrow for
    both (a long unit, a race's narrower tiles); `compact` tiles use a smaller value."""

    def __init__(self, label: str, scheme: theme.Scheme | None = None, compact: bool = False,
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("figure_tile")
        self._scheme = scheme or theme.current()
        self._scale = 1.0
        self._compact = compact
        self._value_px = COMPACT_VALUE_PX if compact else VALUE_PX
        self._value_text, self._unit_text, self._muted = MISSING, "", True
        self._label = ScaledLabel(label, LABEL_PX, True, "muted", self._scheme, shrink=True)
        self._tag = ScaledLabel("ESTIMATED", CAPTION_PX, True, "estimated", self._scheme)
        self._tag.hide()
        self._figure = QtWidgets.QLabel()
        self._figure.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self._figure.setWordWrap(True)
        self._figure.setStyleSheet("background: transparent;")
        self._caption = ScaledLabel("", CAPTION_PX, False, "muted", self._scheme, wrap=True)
        self._caption.setAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop)
        layouts.column(self, layouts.row((self._label, 1), self._tag), self._figure, self._caption, layouts.STRETCH,
                       margins=(24, 14, 24, 14), spacing=4)
        self._labels = (self._label, self._tag, self._caption)
        self._apply_frame()
        self._show_figure()

    # ---- Public API
    def set_value(self, value: float | None, unit: str, caption: str = "", estimated: bool = False,
                  muted: bool = False) -> None:
        """Show a number (3 significant digits; 10.4k from 10,000) with its unit; `estimated` adds the ESTIMATED
        tag; `muted` greys the value."""
        text = tile_number(value)
        self._value_text, self._unit_text = text, (unit if text != MISSING else "")
        self._muted = muted or text == MISSING
        self._small = False
        self._caption.setText(caption)
        self._caption.setToolTip("")
        self._tag.setVisible(estimated)
        self._show_figure()

    def set_unavailable(self, reason: str, details: str = "") -> None:
        """"not available" and why (`details` on hover): a missing sensor is never shown as 0."""
        self._value_text, self._unit_text, self._muted, self._small = "not available", "", True, True
        self._caption.setText(reason)
        self._caption.setToolTip(details or reason)
        self._tag.hide()
        self._show_figure()

    def clear(self, caption: str = "") -> None:
        self.set_value(None, "", caption)

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        for label in self._labels:
            label.set_scheme(scheme)
        self._apply_frame()
        self._show_figure()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        for label in self._labels:
            label.set_scale(scale)
        margin = round((18 if self._compact else 24) * scale)
        self.layout().setContentsMargins(margin, round(12 * scale), margin, round(12 * scale))
        self._show_figure()

    # Read back (tests, screenshots' checks)
    def label_text(self) -> str:
        return self._label.text()

    def value_text(self) -> str:
        return self._value_text

    def unit_text(self) -> str:
        return self._unit_text

    def caption_text(self) -> str:
        return self._caption.text()

    def is_estimated(self) -> bool:
        return not self._tag.isHidden()

    # ---- Private API
    _small = False

    def _show_figure(self) -> None:
        s, k = self._scheme, self._scale
        color = s.muted if self._muted else s.foreground
        # "not available" is said smaller, on one line
        value_px = round(self._value_px * k * ((0.42 if self._compact else 0.5) if self._small else 1.0))
        html = (f'<span style="font-size:{value_px}px; font-weight:700; color:{color}">'
                f"{_escape(self._value_text)}</span>")
        if self._unit_text:
            html += (f'<span style="font-size:{round(UNIT_PX * k)}px; color:{s.foreground}"> '
                     f"{_escape(self._unit_text)}</span>")
        self._figure.setText(html)

    def _apply_frame(self) -> None:
        s = self._scheme
        self.setStyleSheet(f"QFrame#figure_tile {{ background: {s.panel}; border: 2px solid {s.border}; "
                           "border-radius: 14px; }")


class Banner(QtWidgets.QFrame):
    """A headline and a few lines under it, with a tone: good (a decided verdict), bad (a failure), neutral."""

    def __init__(self, scheme: theme.Scheme | None = None, headline_px: float = 58,
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self._scheme = scheme or theme.current()
        self._tone = "neutral"
        self._headline = ScaledLabel("", headline_px, True, "foreground", self._scheme, wrap=True)
        self._lines = [ScaledLabel("", 32, False, "foreground", self._scheme, wrap=True),
                       *(ScaledLabel("", 27, False, "muted", self._scheme, wrap=True) for _ in range(3))]
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(36, 20, 36, 20)
        layout.setSpacing(8)
        layout.addWidget(self._headline)
        for line in self._lines:
            layout.addWidget(line)
        self._apply_frame()

    def set_text(self, headline: str, lines: list[str] | tuple[str, ...] = (), tone: str = "neutral") -> None:
        self._tone = tone
        self._headline.setText(headline)
        self._headline.set_role({"good": "good", "bad": "bad"}.get(tone, "foreground"))
        for label, text in zip(self._lines, [*lines, *[""] * len(self._lines)], strict=False):
            label.setText(text)
            label.setVisible(bool(text))
        self._apply_frame()

    def headline(self) -> str:
        return self._headline.text()

    def lines(self) -> list[str]:
        return [label.text() for label in self._lines if label.text()]

    def tone(self) -> str:
        return self._tone

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        for label in (self._headline, *self._lines):
            label.set_scheme(scheme)
        self._apply_frame()

    def set_scale(self, scale: float) -> None:
        for label in (self._headline, *self._lines):
            label.set_scale(scale)

    def _apply_frame(self) -> None:
        s = self._scheme
        edge = {"good": s.good, "bad": s.bad}.get(self._tone, s.border)
        self.setStyleSheet(f"QFrame#banner {{ background: {s.panel}; border: 4px solid {edge}; "
                           "border-radius: 14px; }")


def _escape(text: str) -> str:
    return escape(text, quote=False)
