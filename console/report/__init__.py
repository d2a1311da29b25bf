"""Reports a director can forward: one run, a comparison, a sweep or an analysed run, as HTML or PDF.

`content.gather` reads what the report needs from the history (read-only), `finding` says it in one sentence,
`document.build` lays it out as blocks, and `html.render` (here) or `console.ui.report_pdf` (Qt) writes the file.
Qt-free except for the PDF writer, which lives under console/ui.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from console.report import document, html
from console.report.content import Report, ReportError, gather

__all__ = ["Report", "ReportError", "gather", "html_bytes", "write_html", "FORMATS"]

FORMATS = (".html", ".htm", ".pdf")


def html_bytes(report: Report) -> bytes:
    """The report as one self-contained HTML document, UTF-8."""
    return html.render(document.build(report)).encode("utf-8")


def write_html(report: Report, path: str | os.PathLike) -> Path:
    """Write the report as one self-contained HTML file, whole or not at all (beside it, then renamed)."""
    target = Path(path)
    _write_atomically(target, html_bytes(report))
    return target


def _write_atomically(target: Path, data: bytes) -> None:
    """Through console.files.output_file: a file whole or not at all, a device or FIFO written into, never replaced."""
    from console.files.output_file import OutputError, write_bytes_to

    try:
        write_bytes_to(target, data, option="report file", example="report.html")
    except OutputError as exc:
        raise ReportError(str(exc)) from None


def write_bytes(target: str | os.PathLike, data: bytes) -> Path:
    """Write any finished report file (e.g. the PDF's bytes) whole or not at all."""
    path = Path(target)
    _write_atomically(path, data)
    return path


def describe(report: Report) -> dict[str, Any]:
    """What `report --json` prints: the kind, the finding and the runs."""
    from console.report.finding import finding

    return {"kind": report.kind, "finding": finding(report), "runs": [view.run["run_id"] for view in report.runs],
            "analysed": report.analysed, "sweep_id": (report.sweep or {}).get("sweep_id")}
