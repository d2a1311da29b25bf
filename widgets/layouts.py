"""Lay a widget's parts out top to bottom or side by side in one call.

The charts and panels here each built the same QVBoxLayout by hand (margins, spacing, then one add per part);
`column` and `row` say it once. A part is a widget, a layout, `(part, stretch)`, or `STRETCH` (spare room).
"""

from __future__ import annotations

from PySide6 import QtWidgets

STRETCH = object()  # a part that takes the spare room (QBoxLayout.addStretch(1))


def column(parent: QtWidgets.QWidget | None, *parts: object, margins: tuple[int, int, int, int] = (0, 0, 0, 0),
           spacing: int | None = None) -> QtWidgets.QVBoxLayout:
    """`parent`'s layout (none where `parent` is None): `parts` top to bottom."""
    return _fill(QtWidgets.QVBoxLayout(parent) if parent is not None else QtWidgets.QVBoxLayout(),
                 parts, margins, spacing)


def row(*parts: object, margins: tuple[int, int, int, int] | None = None,
        spacing: int | None = None) -> QtWidgets.QHBoxLayout:
    """A layout of `parts` left to right, to nest in a column (Qt's default margins unless `margins`)."""
    return _fill(QtWidgets.QHBoxLayout(), parts, margins, spacing)


def _fill(layout: QtWidgets.QBoxLayout, parts: tuple[object, ...], margins: tuple[int, int, int, int] | None,
          spacing: int | None) -> QtWidgets.QBoxLayout:
    if margins is not None:
        layout.setContentsMargins(*margins)
    if spacing is not None:
        layout.setSpacing(spacing)
    for part in parts:
        part, stretch = part if isinstance(part, tuple) else (part, 0)
        if part is STRETCH:
            layout.addStretch(1)
        elif isinstance(part, QtWidgets.QLayout):
            layout.addLayout(part, stretch)
        else:
            layout.addWidget(part, stretch)
    return layout
