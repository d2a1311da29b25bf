"""`labconsole telemetry`: what every telemetry source sees — available or why not, and its metrics."""

from __future__ import annotations

import argparse

from console.cli.common import EXIT_CANCELLED, EXIT_OK, emit_json, error, fail

NAME = "telemetry"
HELP = "what every telemetry source sees: available or why not, metrics"
USES_HISTORY = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.telemetry.registry import source_names

    parser.add_argument("--seconds", type=float, default=3.0, help="how long to sample (default 3)")
    parser.add_argument("--rate", type=float, default=10.0, help="samples per second, 0.5-50 (default 10)")
    parser.add_argument("--source", action="append", default=None, metavar="NAME",
                        help=f"only this source (repeatable): {', '.join(source_names())}")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from console.telemetry.snapshot import collect, format_text

    if not args.seconds > 0:
        return fail(f"--seconds: must be > 0, got {args.seconds:g}")
    try:
        report = collect(args.seconds, rate_hz=args.rate, sources=args.source)
    except ValueError as exc:
        return fail(str(exc).replace("rate_hz", "--rate"))
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except RuntimeError as exc:
        return error(exc)
    if args.json:
        emit_json(report)
    else:
        print(format_text(report))
    return EXIT_OK
