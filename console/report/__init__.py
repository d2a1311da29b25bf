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

__all__ = ["Report", "ReportError", "gather", "write_html", "FORMATS"]

FORMATS = (".html", ".htm", ".pdf")


def write_html(report: Report, path: str | os.PathLike) -> Path:
    """Write the report as one self-contained HTML file, whole or not at all (beside it, then renamed)."""
    target = Path(path)
    _write_atomically(target, html.render(document.build(report)).encode("utf-8"))
    return target


def _write_atomically(target: Path, data: bytes) -> None:
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ReportError(f"cannot write {target} ({exc.strerror or exc}): choose a directory you can write to, "
                          "with free space") from exc


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
