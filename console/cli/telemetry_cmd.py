"""`labconsole telemetry`: what every telemetry source sees — available or why not, and its metrics."""

from __future__ import annotations

import argparse

from console.cli.common import EXIT_CANCELLED, EXIT_OK, emit_json, error, fail
from console.cli.numbers import number

NAME = "telemetry"
HELP = "what every telemetry source sees: available or why not, metrics"
USES_HISTORY = False
MAX_SECONDS = 86400.0  # a day: longer is a monitoring job, not a look at the sources


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.telemetry.registry import source_names
    from console.telemetry.sampler import MAX_RATE_HZ, MIN_RATE_HZ

    parser.add_argument("--seconds", type=number(0, MAX_SECONDS, low_open=True, unit="s"), default=3.0,
                        help=f"how long to sample, up to {MAX_SECONDS:g} s (default 3)")
    parser.add_argument("--rate", type=number(MIN_RATE_HZ, MAX_RATE_HZ, unit="Hz"), default=10.0,
                        help=f"samples per second, {MIN_RATE_HZ:g}-{MAX_RATE_HZ:g} (default 10)")
    parser.add_argument("--source", action="append", default=None, metavar="NAME",
                        help=f"only this source (repeatable): {', '.join(source_names())}")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def main(args: argparse.Namespace) -> int:
    from console.telemetry.snapshot import collect, format_text

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
