"""The report as a PDF, from Qt: A4 or Letter, text laid out by QTextDocument, charts drawn as vectors by
QSvgRenderer from the same SVG the HTML report inlines (console.report.document decides the content once).

Blocks flow down the page; one that does not fit the rest of a page starts the next, and a table taller than a
whole page is cut across pages by QTextDocument's own pagination. Usable without a window: `ensure_app()` starts
an offscreen QGuiApplication when the command line asks for a PDF on a machine with no display.
"""

from __future__ import annotations

import os
from html import escape

from PySide6 import QtCore, QtGui, QtSvg

from console.report import document, svg
from console.report.content import Report

PAGE_SIZES = {"a4": QtGui.QPageSize.PageSizeId.A4, "letter": QtGui.QPageSize.PageSizeId.Letter}
DPI = 96  # layout units are CSS pixels, so the charts' 760 px and the text's points keep their proportions
MARGIN_MM = 14
GAP = 8.0  # px between blocks
BASE_PT = 9
EMPHASIS = {"good": "#eaf6ea", "bad": "#fbecec"}


# ---- Public API
def ensure_app() -> QtGui.QGuiApplication:
    """The running Qt application, or an offscreen one for a command line without a display."""
    app = QtGui.QGuiApplication.instance()
    if app is None:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QtGui.QGuiApplication([])
    return app


def pdf_bytes(report: Report, page: str = "a4") -> bytes:
    """The report's PDF file, in memory (the caller writes it whole or not at all)."""
    if page not in PAGE_SIZES:
        raise ValueError(f"page must be one of {', '.join(PAGE_SIZES)}, got {page!r}")
    ensure_app()
    buffer = QtCore.QBuffer()
    buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    writer = QtGui.QPdfWriter(buffer)
    writer.setResolution(DPI)
    writer.setPageSize(QtGui.QPageSize(PAGE_SIZES[page]))
    writer.setPageMargins(QtCore.QMarginsF(MARGIN_MM, MARGIN_MM, MARGIN_MM, MARGIN_MM),
                          QtGui.QPageLayout.Unit.Millimeter)
    blocks = document.build(report)
    writer.setTitle(next((b.text for b in blocks if b.kind == "title"), "Lab Console report"))
    writer.setCreator("Lab Console")
    painter = QtGui.QPainter(writer)
    try:
        _Flow(painter, writer).blocks(blocks)
    finally:
        painter.end()
    buffer.close()
    return bytes(buffer.data())


# ---- Private API
class _Flow:
    """Places blocks top to bottom, page after page."""

    def __init__(self, painter: QtGui.QPainter, writer: QtGui.QPdfWriter):
        self.painter, self.writer = painter, writer
        area = writer.pageLayout().paintRectPixels(DPI)
        self.width, self.height = float(area.width()), float(area.height())
        self.y = 0.0

    def blocks(self, blocks: list[document.Block]) -> None:
        for index, block in enumerate(blocks):
            if block.kind == "figure":
                self._figure(block.svg)
            else:
                keep_with_next = block.kind == "heading" and index + 1 < len(blocks)
                self._text(_qt_html(block), keep_with_next)

    def _new_page(self) -> None:
        self.writer.newPage()
        self.y = 0.0

    def _text(self, html_text: str, keep_with_next: bool = False) -> None:
        doc = QtGui.QTextDocument()
        doc.documentLayout().setPaintDevice(self.writer)
        doc.setDefaultFont(QtGui.QFont("DejaVu Sans", BASE_PT))
        doc.setDocumentMargin(0)
        doc.setHtml(html_text)
        doc.setTextWidth(self.width)
        height = doc.size().height()
        needed = height + (120 if keep_with_next else 0)  # a heading never ends a page alone
        if self.y > 0 and self.y + needed > self.height and height <= self.height:
            self._new_page()
        if height <= self.height - self.y:
            self._draw(doc, self.y, QtCore.QRectF(0, 0, self.width, height))
            self.y += height + GAP
            return
        if self.y > 0:
            self._new_page()
        doc.setPageSize(QtCore.QSizeF(self.width, self.height))  # QTextDocument cuts itself into pages
        for number in range(doc.pageCount()):
            if number:
                self._new_page()
            self._draw(doc, 0, QtCore.QRectF(0, number * self.height, self.width, self.height))
        self.y = (doc.size().height() - (doc.pageCount() - 1) * self.height) + GAP

    def _draw(self, doc: QtGui.QTextDocument, at_y: float, clip: QtCore.QRectF) -> None:
        self.painter.save()
        self.painter.translate(0, at_y - clip.top())
        doc.drawContents(self.painter, clip)
        self.painter.restore()

    def _figure(self, svg_text: str) -> None:
        renderer = QtSvg.QSvgRenderer(QtCore.QByteArray(svg.standalone(svg_text).encode("utf-8")))
        size = renderer.defaultSize()
        if not renderer.isValid() or size.width() <= 0:
            self._text("<p><i>a chart could not be drawn</i></p>")
            return
        scale = min(1.0, self.width / size.width())
        width, height = size.width() * scale, size.height() * scale
        if self.y > 0 and self.y + height > self.height:
            self._new_page()
        renderer.render(self.painter, QtCore.QRectF(0, self.y, width, height))
        self.y += height + GAP


_QT_TEXT_TAGS = {  # the blocks that are one escaped text, by kind, in the tags and sizes QTextDocument lays out
    "title": '<p style="font-size:18pt; font-weight:bold;">{}</p>',
    "heading": '<p style="font-size:12.5pt; font-weight:bold; margin-top:6px;">{}</p>',
    "finding": ('<table width="100%" cellpadding="8" style="background-color:#f3f7fc;"><tr>'
                '<td style="font-size:12.5pt;">{}</td></tr></table>'),
    "note": '<p style="color:#666666; font-size:7.5pt;">{}</p>',
    "code": '<pre style="font-size:7pt; background-color:#f6f6f6;">{}</pre>',
}


def _qt_html(block: document.Block) -> str:
    """A block in the HTML subset QTextDocument lays out (its own tags, sizes in pt)."""
    text = escape(block.text)
    if block.kind in _QT_TEXT_TAGS:
        return _QT_TEXT_TAGS[block.kind].format(text)
    if block.kind == "table":
        head = "".join(f'<th align="left" bgcolor="#f0f0f0">{escape(h)}</th>' for h in block.headers)
        rows = []
        for row, emphasis in block.emphasised_rows():
            colour = EMPHASIS.get(emphasis, "")
            css = f' bgcolor="{colour}"' if colour else ""
            rows.append(f"<tr{css}>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>")
        return (f'<table width="100%" border="1" cellspacing="0" cellpadding="3" '
                f'style="border-color:#cccccc; font-size:7.5pt;"><tr>{head}</tr>{"".join(rows)}</table>')
    return f"<p>{text}</p>"
