"""`labconsole export RUN… --format csv|json|trace [--summary] [--out FILE]`: stored runs as files other tools read.

Reads only (open_reader). With --out the file appears whole or not at all: the export goes to a temporary file
beside it, renamed over FILE only once every run was written, so an unknown run or a full disk never leaves a
half-written or emptied FILE behind.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from console.cli.common import EXIT_OK, db_path, error, fail

NAME = "export"
HELP = "write runs as csv (one row per iteration), json (the whole run) or a Chrome trace (Perfetto)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.export import FORMATS

    parser.add_argument("runs", metavar="RUN", nargs="+", help="run id or a unique prefix (≥ 4 characters)")
    parser.add_argument("--format", dest="format", choices=FORMATS, default=None,
                        help="csv: run_id, iteration, t_ns, latency_ms; json: spec, summary, environment, latencies "
                             "and telemetry (`labconsole run --spec` reads it back); trace: Chrome trace events "
                             "for Perfetto or chrome://tracing (default json; csv with --summary)")
    parser.add_argument("--summary", action="store_true",
                        help="csv with one row per run (p50, p99, throughput, valid, energy … as the History table "
                             "shows them) instead of one per iteration")
    parser.add_argument("--out", metavar="FILE", default=None, help="write here instead of standard output")


def main(args: argparse.Namespace) -> int:
    from console.export import export_runs
    from console.history import HistoryError, open_reader

    if args.summary and args.format not in (None, "csv"):
        return fail(f"--summary is a csv form (one row per run); drop --format {args.format} or --summary")
    args.format = args.format or ("csv" if args.summary else "json")
    out_path = Path(args.out).expanduser() if args.out else None
    if out_path is not None and out_path.is_dir():
        return fail(f"--out: {out_path} is a directory; give a file path such as {out_path / 'runs.json'}")
    try:
        store = open_reader(db_path(args))
    except HistoryError as exc:
        return error(exc)
    try:
        runs = []
        for ref in args.runs:
            run = store.get_run(ref)
            if run is None:
                return fail(f"RUN: no run {ref!r} in the history at {store.path} (`labconsole history` lists them); "
                            "nothing was exported")
            runs.append(run)
        if out_path is None:
            export_runs(store, runs, args.format, sys.stdout, summary=args.summary)
            sys.stdout.flush()
            return EXIT_OK
        return _export_to_file(store, runs, args.format, out_path, args.summary)
    except HistoryError as exc:
        return error(exc)
    except BrokenPipeError:  # `| head`: the reader left; not an error of the export
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 — keeps Python's exit flush quiet
        return EXIT_OK
    finally:
        store.close()


# ---- Private API
def _export_to_file(store, runs, fmt: str, out_path: Path, summary: bool) -> int:
    from console.export import export_runs

    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{out_path.name}.", suffix=".part", dir=out_path.parent)
    except OSError as exc:
        return error(f"--out {out_path}: cannot write there ({exc.strerror or exc}); choose another path")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            counts = export_runs(store, runs, fmt, stream, summary=summary)
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the export from the user's group
        os.replace(temp, out_path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return error(f"--out {out_path}: writing failed ({exc.strerror or exc}); {out_path} was left as it was. "
                     "Free disk space or choose another path")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    print(f"exported {counts['runs']} run(s), {counts['iterations']} iterations, {counts['samples']} telemetry "
          f"samples as {fmt}{' (one row per run)' if summary else ''} to {out_path}", file=sys.stderr)
    return EXIT_OK


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
