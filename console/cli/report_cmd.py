"""`labconsole report RUN [RUN…] [--sweep ID] --out FILE.html|FILE.pdf`: a report a director can forward.

A run, a comparison (several runs: each against the first), a sweep or an analysed run, in one self-contained
HTML file or a PDF (A4 or Letter). Reads the history only (open_reader). --out goes through console.files.output_file,
checked before the history is read: a file appears whole or not at all; `-` or /dev/stdout is standard output
(the finding then goes to standard error); a character device or FIFO is written into, never replaced. The PDF is
drawn by Qt (console.ui.report_pdf), imported only when a PDF is asked for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.cli.arguments import history_failure
from console.cli.common import EXIT_OK, db_path, emit_json, error, fail, wants_json

NAME = "report"
HELP = "write a report of runs, a comparison or a sweep as self-contained HTML or PDF"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", metavar="RUN", nargs="*",
                        help="run ids or unique prefixes (≥ 4 characters); several: each is compared with the first")
    parser.add_argument("--sweep", metavar="ID", default=None, help="report this sweep's points (its id or prefix)")
    parser.add_argument("--out", metavar="FILE", required=True,
                        help="FILE.html (one self-contained file: charts embedded, nothing fetched) or FILE.pdf; "
                             "- or /dev/stdout: standard output (HTML unless --format pdf); a device or FIFO is "
                             "written into, never replaced")
    parser.add_argument("--format", dest="format", choices=("html", "pdf"), default=None,
                        help="html or pdf (default: from --out's suffix; html for standard output, a device or FIFO)")
    parser.add_argument("--page", choices=("a4", "letter"), default="a4", help="PDF page size (default a4)")


def main(args: argparse.Namespace) -> int:
    from console.files.output_file import OutputError, check_out, shown, write_out
    from console.history import HistoryError, damage, open_reader
    from console.report import ReportError, describe, gather, html_bytes

    if not args.runs and args.sweep is None:
        return fail("name the runs to report (`labconsole history` lists them) or a sweep with --sweep ID")
    try:
        target = check_out(args.out, example="report.html", keep=db_path(args))
    except OutputError as exc:
        return fail(str(exc))
    with target:
        fmt = _format(args, target)
        if isinstance(fmt, int):
            return fmt
        if target.is_stdout and wants_json(args):
            return fail("--json and --out - both write to standard output; drop --json or give --out FILE.html")
        try:
            with open_reader(db_path(args)) as store:
                report = gather(store, list(args.runs), args.sweep)
                damage.print_skipped(store)  # a damaged point of the sweep or run of a series: a note each
        except ReportError as exc:
            return fail(str(exc))
        except HistoryError as exc:  # an id prefix too short or ambiguous: 2, like an unknown id
            return history_failure(exc)
        try:
            if fmt == "pdf":
                from console.ui.report_pdf import pdf_bytes

                data = pdf_bytes(report, args.page)
            else:
                data = html_bytes(report)
            write_out(target, lambda stream: stream.write(data), binary=True)
        except (ReportError, OutputError) as exc:
            return error(exc)
    facts = {**describe(report), "out": args.out if target.is_stdout else str(target.path or args.out)}
    if wants_json(args):
        emit_json(facts)
    else:
        said = sys.stderr if target.is_stdout else sys.stdout  # standard output carries the report itself
        print(facts["finding"], file=said)
        print(f"report written to {'standard output' if target.is_stdout else shown(facts['out'])}", file=said)
    return EXIT_OK


# ---- Private API
def _format(args: argparse.Namespace, target) -> str | int:
    """html or pdf: --format, else --out's suffix; a stream, device or FIFO has no suffix to go by, so HTML."""
    from console.files.output_file import FILE

    suffix = Path(args.out).suffix.lower() if args.out != "-" else ""
    by_suffix = {".html": "html", ".htm": "html", ".pdf": "pdf"}.get(suffix)
    if args.format and by_suffix and args.format != by_suffix:
        return fail(f"--out {Path(args.out).name} ends in {suffix} but --format is {args.format}; make them agree")
    if args.format:
        return args.format
    if by_suffix:
        return by_suffix
    if target.kind == FILE:
        return fail(f"--out: {Path(args.out).name} is neither .html nor .pdf; name the file FILE.html or FILE.pdf "
                    "(or say --format html|pdf)")
    return "html"
