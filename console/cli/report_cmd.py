"""`labconsole report RUN [RUN…] [--sweep ID] --out FILE.html|FILE.pdf`: a report a director can forward.

A run, a comparison (several runs: each against the first), a sweep or an analysed run, in one self-contained
HTML file or a PDF (A4 or Letter). Reads the history only (open_reader); the file appears whole or not at all.
The PDF is drawn by Qt (console.ui.report_pdf), imported only when a PDF is asked for.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from console.cli.common import EXIT_OK, db_path, emit_json, error, fail, wants_json

NAME = "report"
HELP = "write a report of runs, a comparison or a sweep as self-contained HTML or PDF"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", metavar="RUN", nargs="*",
                        help="run ids or unique prefixes (≥ 4 characters); several: each is compared with the first")
    parser.add_argument("--sweep", metavar="ID", default=None, help="report this sweep's points (its id or prefix)")
    parser.add_argument("--out", metavar="FILE", required=True,
                        help="FILE.html (one self-contained file: charts embedded, nothing fetched) or FILE.pdf")
    parser.add_argument("--page", choices=("a4", "letter"), default="a4", help="PDF page size (default a4)")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError, open_reader
    from console.report import FORMATS, ReportError, describe, gather, write_bytes, write_html

    out = Path(args.out).expanduser()
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        return fail(f"--out: {out.name} is neither .html nor .pdf; name the file FILE.html or FILE.pdf")
    if out.is_dir():
        return fail(f"--out: {out} is a directory; give a file path such as {out / ('report' + '.html')}")
    if not args.runs and args.sweep is None:
        return fail("name the runs to report (`labconsole history` lists them) or a sweep with --sweep ID")
    try:
        with open_reader(db_path(args)) as store:
            report = gather(store, list(args.runs), args.sweep)
    except ReportError as exc:
        return fail(str(exc))
    except HistoryError as exc:
        return error(exc)
    try:
        if suffix == ".pdf":
            from console.ui.report_pdf import pdf_bytes

            write_bytes(out, pdf_bytes(report, args.page))
        else:
            write_html(report, out)
    except ReportError as exc:
        return error(exc)
    facts = {**describe(report), "out": str(out)}
    if wants_json(args):
        emit_json(facts)
    else:
        print(facts["finding"])
        print(f"report written to {out}")
    return EXIT_OK
