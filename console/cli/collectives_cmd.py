"""`labconsole collectives`: time all-reduce, all-gather, reduce-scatter, all-to-all, broadcast and reduce across N
ranks (local processes, or Ray actors with --cluster) as nccl-tests does, print its table, keep it as a run.

The benchmark runs in a spawned worker (console.collectives.run); the console process never imports torch. The
table reads like nccl-tests' (size, count, type, time in µs, algbw and busbw in GB/s, per op); --json prints the
stored run's id, status and the whole result. Exit codes as `storage`: 0 completed, 1 failed (the cause on
stderr) or the history cannot take it, 2 a bad option found before anything ran, 130 cancelled.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli.common import (
    bad_input,
    emit_json,
    error,
    progress_text,
    status_exit,
    wants_json,
    with_history,
)

NAME = "collectives"
HELP = "time collectives (all-reduce, all-gather, …) across ranks: time, algbw, busbw per size as nccl-tests"
DESCRIPTION = ("Time collective operations with torch.distributed across N ranks (gloo CPU processes, nccl one per "
               "GPU, or Ray actors across a cluster) and report, per size, the time per operation, algbw = S/t and "
               "busbw = algbw × factor exactly as nccl-tests defines them. Each run is kept in the history "
               "(scenario collectives), so `history`, `compare` and `report` show it.")

__all__ = ["NAME", "HELP", "add_arguments", "main", "table_lines"]


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.cli.numbers import number, whole
    from engines.collectives.formulas import OPS

    parser.add_argument("--ranks", type=whole(2, 1024), default=2, metavar="N",
                        help="ranks (default 2): local processes, or Ray actors with --cluster")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                        help="gloo: CPU processes (default); nccl: one rank per NVIDIA GPU")
    parser.add_argument("--ops", default="all", metavar="LIST",
                        help=f"comma-separated, of {','.join(OPS)} (default all)")
    parser.add_argument("--sizes", default="8B..64MiB", metavar="RANGE",
                        help="A..B doubles from A to B (nccl-tests -b/-e/-f 2), or a comma list; B, K/KiB, M/MiB, "
                             "G/GiB (1024), KB/MB/GB (1000) (default 8B..64MiB)")
    parser.add_argument("--iters", type=whole(1, 100000), default=20, metavar="N",
                        help="operations timed per trial (nccl-tests -n; default 20)")
    parser.add_argument("--warmup", type=whole(0, 100000), default=5, metavar="N",
                        help="warm-up operations per size before timing (nccl-tests -w; default 5)")
    parser.add_argument("--trials", type=whole(1, 1000), default=5, metavar="N",
                        help="trials per size; the time is their median (default 5)")
    parser.add_argument("--rank-time", choices=("max", "avg"), default="max",
                        help="one trial's time over ranks: the slowest rank (max, nccl-tests -a 3; default) or the "
                             "average (avg, nccl-tests' default -a 1)")
    parser.add_argument("--cluster", default=None, metavar="ADDR",
                        help="place the ranks across the Ray cluster at HOST:PORT (one placement-group bundle each)")
    parser.add_argument("--tag", action="append", default=None, metavar="TAG", help="tag the stored run (repeatable)")
    parser.add_argument("--timeout", type=number(0, 7 * 86400, low_open=True, unit="s"), default=3600.0,
                        metavar="S", help="stop the run after S seconds (default 3600); it is stored failed")
    parser.add_argument("--stall-timeout", type=number(1, 86400, unit="s"), default=300.0, metavar="S",
                        help="end the run when no rank has reported for S seconds (a hung rank; default 300)")


def main(args: argparse.Namespace) -> int:
    from engines.collectives.errors import CollectivesError
    from engines.collectives.options import normalize

    options = {"ranks": args.ranks, "backend": args.backend, "ops": args.ops, "sizes": args.sizes,
               "iters": args.iters, "warmup": args.warmup, "trials": args.trials, "rank_time": args.rank_time,
               "cluster": args.cluster, "stall_timeout_s": args.stall_timeout}
    try:
        checked = normalize(options)
    except CollectivesError as exc:
        return bad_input(exc)
    return with_history(args, lambda store: _run(args, checked, store))


def table_lines(result: dict[str, Any]) -> list[str]:
    """nccl-tests' table: one block per op (its busbw factor in the heading), a row per size."""
    from engines.collectives.options import format_size

    lines = [f"{'size':>12} {'count':>12} {'type':>7} {'time (us)':>11} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}"]
    for op, rows in (result.get("ops") or {}).items():
        factor = (result.get("busbw_factor") or {}).get(op, "?")
        lines.append(f"# {op} (busbw = algbw × {factor}, n = {result.get('ranks')})")
        for row in rows:
            lines.append(f"{row['size_bytes']:>12} {row['count']:>12} {'float':>7} {row['time_us']:>11.2f} "
                         f"{row['algbw_gbs']:>13.3f} {row['busbw_gbs']:>13.3f}")
        for size, why in ((result.get("skipped") or {}).get(op) or {}).items():
            lines.append(f"{'':>12} {size} not timed: {why}")
        if not rows:
            lines.append("  (no size was timed)")
    figures = result.get("figures") or {}
    peak, small = figures.get("all_reduce_peak_busbw_gbs"), figures.get("all_reduce_small_latency_us")
    if peak is not None:
        smallest = (result.get("ops") or {}).get("all-reduce", [{}])[0].get("size_bytes")
        lines.append(f"all-reduce: peak busbw {peak:.3f} GB/s; latency {small:.1f} us at {format_size(smallest)}")
    return lines


# ---- Private API
def _run(args: argparse.Namespace, options: dict[str, Any], store: Any) -> int:
    from console.cli.progress import ProgressLine
    from console.collectives import run, store_with_status
    from console.history import HistoryError

    as_json = wants_json(args)
    line = ProgressLine.for_command(as_json)

    def show(update: dict[str, Any]) -> None:
        if line.enabled:
            line.show(progress_text("collectives", update))

    outcome = run(options, on_progress=show, timeout_s=float(args.timeout))
    line.close()
    try:
        run_id, status, cause = store_with_status(outcome, store, options, tags=args.tag)
    except HistoryError as exc:
        return error(f"the collectives run ended {outcome.status}, but the history could not keep it: {exc}")
    if as_json:
        emit_json({"run_id": run_id, "status": status, "options": {k: v for k, v in options.items()
                                                                    if k != "sizes_bytes"},
                   "result": outcome.result, "cause": cause, "fix": outcome.fix,
                   "error_kind": outcome.error_kind if status != "completed" else None,
                   "wall_s": round(outcome.wall_s, 3)})
    else:
        label = (outcome.result or {}).get("label") or f"{options['backend']} · {options['ranks']} ranks"
        print(f"collectives {label} · run {run_id[:8]} · {status} · {outcome.wall_s:.1f} s")
        if outcome.result:
            for text in table_lines(outcome.result):
                print(text)
            print(f"method: {outcome.result.get('method')}")
    if status != "completed":
        fix = f" Fix: {outcome.fix}" if outcome.fix and outcome.fix not in (cause or "") else ""
        print(f"labconsole: error: collectives {status}: {cause or 'no cause given'}{fix}", file=sys.stderr)
    return status_exit(status)
