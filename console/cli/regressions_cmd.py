"""`labconsole regressions`: step changes in every configuration's series.

Exit status for CI: 0 no slow-down, 1 a slow-down was found (only then), 3 (EXIT_UNDECIDED) the history could
not be judged — there is none at the path, or it cannot be read; with --json the document then says
`"judged": false` and why."""

from __future__ import annotations

import argparse
import sys

from console.cli.arguments import DATE_FORMS, date_bound
from console.cli.common import EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED, db_path, emit_json, fail, fmt, wants_json
from console.cli.numbers import number

NAME = "regressions"
HELP = ("find step changes (slow-downs) in each configuration's series of runs; exit 1 when one is found, "
        f"{EXIT_UNDECIDED} when the history cannot be judged")
DESCRIPTION = ("A series is the completed, valid runs of one configuration (same model, engine, target, precision, "
               "batch, scenario, host), oldest first; each run contributes its median latency. A change point is "
               "reported when a permutation test on Mann-Whitney U over every split gives p < --alpha AND the "
               "medians before and after differ by at least --threshold.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", metavar="DATE", type=date_bound,
                        help=f"only steps whose first slow run started on or after DATE, {DATE_FORMS}")
    parser.add_argument("--threshold", default="5%", help="smallest change reported (default 5%%; 0.05 works too)")
    parser.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True), default=0.01, help="significance of the permutation test")
    parser.add_argument("--improvements", action="store_true", help="also list steps that made it faster")


def main(args: argparse.Namespace) -> int:
    from console.analysis.regressions import find
    from console.history import HistoryError, damage, open_reader

    threshold = _fraction(args.threshold)
    if threshold is None:
        return fail(f"--threshold: a percentage or a fraction below 1 (5% or 0.05), got {args.threshold!r}")
    if not db_path(args).exists():
        return _undecided(args, f"no history at {db_path(args)}: nothing to judge. Fix: run on this machine "
                                "first, or point --db (or $LABCONSOLE_DB) at the lab's history")
    try:
        with open_reader(db_path(args)) as store:
            found = find(store, since=args.since, threshold=threshold, alpha=args.alpha,
                         include_improvements=args.improvements)
            damage.print_skipped(store)  # a damaged run is left out of its series: one note each on stderr
    except HistoryError as exc:
        return _undecided(args, str(exc))
    if wants_json(args):
        emit_json({"judged": True, "threshold": threshold, "alpha": args.alpha, "findings": found})
    elif not found:
        print(f"no step change of {threshold:.0%} or more (p < {args.alpha}) in any configuration")
    for item in found if not wants_json(args) else []:
        config = item["configuration"] or {}
        label = " · ".join(str(config.get(k)) for k in ("model", "engine", "target", "precision", "batch", "host"))
        print(f"{item['direction'].upper():7} {label}\n        median {fmt(item['before'])} → {fmt(item['after'])} ms  "
              f"ratio {item['ratio']:.3f} (95% CI {item['ci95'][0]:.3f}–{item['ci95'][1]:.3f}, p = "
              f"{item['p_value']:.2g})\n        last good {item['last_good_run'][:8]}, first bad "
              f"{item['first_bad_run'][:8]} ({(item['first_bad_at'] or '')[:19]})")
    return EXIT_FAILED if any(item["direction"] == "slower" for item in found) else EXIT_OK


def _fraction(text: str) -> float | None:
    try:
        value = float(text[:-1]) / 100 if text.strip().endswith("%") else float(text)
    except ValueError:
        return None
    return value if 0 < value < 1 else None


def _undecided(args: argparse.Namespace, why: str) -> int:
    """Cannot judge: say why on stderr (and in the --json document), exit EXIT_UNDECIDED — never 1, which CI
    reads as "a slow-down was found"."""
    print(f"labconsole: cannot judge: {why}", file=sys.stderr)
    if wants_json(args):
        emit_json({"judged": False, "reason": why, "findings": []})
    return EXIT_UNDECIDED
