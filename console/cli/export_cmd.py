"""`labconsole export RUN… --format csv|json|trace [--summary] [--out FILE]`: stored runs as files other tools read.

Reads only (open_reader). --out goes through console.files.output_file, checked before the history is opened: a file
appears whole or not at all (a temporary file beside it, renamed over FILE only once every run was written, so an
unknown run or a full disk never leaves a half-written or emptied FILE behind); `-` or /dev/stdout is standard
output; a character device or FIFO is written into, never replaced.
"""

from __future__ import annotations

import argparse
import sys

from console.cli.arguments import history_failure
from console.cli.common import EXIT_OK, db_path, error, fail
from console.files.output_file import OutputError, check_out, write_out

NAME = "export"
HELP = "write runs as csv (one row per iteration), json (the whole run) or a Chrome trace (Perfetto)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.report.export import FORMATS

    parser.add_argument("runs", metavar="RUN", nargs="+", help="run id or a unique prefix (≥ 4 characters)")
    parser.add_argument("--format", dest="format", choices=FORMATS, default=None,
                        help="csv: run_id, iteration, t_ns, latency_ms; json: spec, summary, environment, latencies "
                             "and telemetry (`labconsole run --spec` reads it back); trace: Chrome trace events "
                             "for Perfetto or chrome://tracing (default json; csv with --summary)")
    parser.add_argument("--summary", action="store_true",
                        help="csv with one row per run (p50, p99, throughput, valid, energy … as the History table "
                             "shows them) instead of one per iteration")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="write here instead of standard output: a file appears whole or not at all; - is "
                             "standard output; a device or FIFO is written into, never replaced")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError, open_reader
    from console.report.export import export_runs

    if args.summary and args.format not in (None, "csv"):
        return fail(f"--summary is a csv form (one row per run); drop --format {args.format} or --summary")
    args.format = args.format or ("csv" if args.summary else "json")
    target = None
    if args.out is not None:
        try:
            target = check_out(args.out, example="runs.json", keep=db_path(args))
        except OutputError as exc:
            return fail(str(exc))
        if target.is_stdout:
            target = None  # `--out -` is the default: the same stream, the same errors
    try:
        store = open_reader(db_path(args))
    except HistoryError as exc:
        if target is not None:
            target.close()
        return error(exc)
    try:
        runs = []
        for ref in args.runs:
            run = store.get_run(ref)
            if run is None:
                return fail(f"RUN: no run {ref!r} in the history at {store.path} (`labconsole history` lists them); "
                            "nothing was exported")
            if all(run["run_id"] != seen["run_id"] for seen in runs):  # `export c588 c588`: each run once
                runs.append(run)
        if target is None:
            export_runs(store, runs, args.format, sys.stdout, summary=args.summary)
            sys.stdout.flush()
            return EXIT_OK
        return _export_to_file(store, runs, args.format, target, args.summary)
    except HistoryError as exc:  # an id prefix too short or ambiguous: 2, like an unknown id
        return history_failure(exc)
    finally:
        store.close()
        if target is not None:
            target.close()


# ---- Private API
def _export_to_file(store, runs, fmt: str, target, summary: bool) -> int:
    from console.report.export import export_runs

    try:
        counts = write_out(target, lambda stream: export_runs(store, runs, fmt, stream, summary=summary),
                           binary=False)
    except OutputError as exc:
        return error(str(exc))
    print(f"exported {counts['runs']} run(s), {counts['iterations']} iterations, {counts['samples']} telemetry "
          f"samples as {fmt}{' (one row per run)' if summary else ''} to {target.text}", file=sys.stderr)
    return EXIT_OK
