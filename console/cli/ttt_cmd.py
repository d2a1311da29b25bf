"""`labconsole time-to-train`: train the catalog's ttt-mlp task to a target eval accuracy on N ranks, several runs with
a seed each, keep each as a run, and score them as MLPerf Training does (fastest and slowest dropped, mean of the
rest).

Each run goes to a spawned worker (console.ttt.run); the console process never imports torch. The table gives per
run its seed, whether it reached the target, the time-to-train (first step to the evaluation that reached it,
evaluation included, initialisation and data generation excluded), steps, samples and energy (RAPL counters, or
why not). --json prints the runs (id, status, seed, result, cause) and the score. Exit codes as `collectives`:
0 every run completed and a score was given, 1 a run failed or the rule gives no score (the reason on stderr),
2 a bad option found before anything ran, 130 cancelled.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from typing import Any

from console.cli.common import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    bad_input,
    emit_json,
    error,
    progress_text,
    wants_json,
    with_history,
)

NAME = "time-to-train"
HELP = "train a small real task to a target quality on N ranks, several seeds, scored as MLPerf Training"
DESCRIPTION = ("Train the catalog's ttt-mlp task (an MLP learning a fixed random teacher's classes) with "
               "torch.distributed DDP on N ranks until rank 0's evaluation reaches --target accuracy, --runs times "
               "with a different seed each. Each run is kept in the history (scenario time-to-train); the score is "
               "MLPerf Training's: the fastest and the slowest run dropped, the mean of the rest; a run that does "
               "not reach the target counts as infinitely slow.")

__all__ = ["NAME", "HELP", "add_arguments", "main", "table_lines"]


# ---- Public API
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.cli.numbers import number, whole
    from engines.ttt.options import DEFAULTS, MAX_SEED

    parser.add_argument("--ranks", type=whole(1, 1024), default=1, metavar="N",
                        help="data-parallel ranks (default 1): local processes, or Ray actors with --cluster")
    parser.add_argument("--runs", type=whole(1, 100), default=5, metavar="N",
                        help="runs, a seed each (default 5; the score needs 3 or more)")
    parser.add_argument("--target", type=number(0, 1, low_open=True), default=DEFAULTS["target_quality"],
                        metavar="Q", help="eval accuracy to reach (default 0.9)")
    parser.add_argument("--batch", type=whole(1, 1 << 20), default=DEFAULTS["global_batch"], metavar="N",
                        help="global batch: samples per optimizer step over all ranks (default 128; a multiple "
                             "of --ranks)")
    parser.add_argument("--max-steps", type=whole(1, 10_000_000), default=DEFAULTS["max_steps"], metavar="N",
                        help="steps after which a run counts as not reached (default 3000)")
    parser.add_argument("--eval-every", type=whole(1, 10_000_000), default=DEFAULTS["eval_every"], metavar="N",
                        help="evaluate on rank 0 every N steps (default 25)")
    parser.add_argument("--seed", type=whole(0, MAX_SEED - 100), default=None, metavar="S",
                        help="first run's seed; run i uses S+i (default: drawn at random, printed)")
    parser.add_argument("--threads", type=whole(1, 4096), default=None, metavar="N",
                        help="threads per rank (default: each rank its share of the cores)")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                        help="gloo: CPU processes (default); nccl: one rank per NVIDIA GPU")
    parser.add_argument("--cluster", default=None, metavar="ADDR",
                        help="the Ray cluster at HOST:PORT: Ray places the --ranks (one bundle a rank); the worker "
                             "stays here. Energy is then not available (RAPL is read on this machine only)")
    parser.add_argument("--tag", action="append", default=None, metavar="TAG", help="tag the stored runs (repeatable)")
    parser.add_argument("--timeout", type=number(0, 7 * 86400, low_open=True, unit="s"), default=3600.0,
                        metavar="S", help="stop a run after S seconds (default 3600); it is stored failed")


def main(args: argparse.Namespace) -> int:
    from engines.ttt.errors import TimeToTrainError
    from engines.ttt.options import normalize

    seed = args.seed if args.seed is not None else secrets.randbelow(1 << 30)
    options = {"ranks": args.ranks, "backend": args.backend, "target_quality": args.target,
               "global_batch": args.batch, "max_steps": args.max_steps, "eval_every": args.eval_every,
               "seed": seed, "cluster": args.cluster, "threads": args.threads}
    try:
        checked = normalize(options)
    except TimeToTrainError as exc:
        return bad_input(exc)
    if checked["cluster"] is not None:
        from console.cli.ranks_cluster import check_address

        problem = check_address(checked["cluster"])  # a typo in the address costs no worker
        if problem is not None:
            return problem
    return with_history(args, lambda store: _run_all(args, checked, store))


def table_lines(rows: list[dict[str, Any]], scored: dict[str, Any]) -> list[str]:
    """One line per run (its number, run id, seed, reached, time-to-train, steps, samples, energy), then the score."""
    lines = [f"{'run':>4} {'id':>8} {'seed':>11} {'reached':>8} {'time (s)':>9} {'steps':>7} {'samples':>9} "
             f"{'energy (J)':>11}  note"]
    dropped = scored.get("dropped") or {}
    for i, row in enumerate(rows):
        result = row.get("result") or {}
        note = ("dropped (fastest)" if dropped.get("fastest") == i else
                "dropped (slowest)" if dropped.get("slowest") == i else "")
        if row["status"] != "completed":
            note = f"{row['status']}: {row.get('cause') or 'no cause given'}"
        time_s = result.get("time_to_train_s")
        energy = result.get("energy_j")
        lines.append(f"{i + 1:>4} {row['run_id'][:8]:>8} {row['seed']:>11} "
                     f"{('yes' if result.get('reached') else 'no') if result else '—':>8} "
                     f"{f'{time_s:.3f}' if isinstance(time_s, (int, float)) else '—':>9} "
                     f"{result.get('steps', '—'):>7} {result.get('samples', '—'):>9} "
                     f"{f'{energy:.1f}' if isinstance(energy, (int, float)) else '—':>11}  {note}".rstrip())
    if scored.get("score_s") is not None:
        used = ", ".join(f"#{i + 1}" for i in scored["used"])
        lines.append(f"score: {scored['score_s']:.3f} s (mean of runs {used}; the fastest and slowest dropped)")
        energy = scored.get("energy_score_j")
        lines.append(f"energy score: {energy:.1f} J" if energy is not None
                     else f"energy score: {scored.get('energy_why') or 'not available'}")
    else:
        lines.append(f"score: none: {scored.get('why')}" + (f". Fix: {scored['fix']}" if scored.get("fix") else ""))
    return lines


# ---- Private API
def _run_all(args: argparse.Namespace, options: dict[str, Any], store: Any) -> int:
    from console.cli.progress import ProgressLine
    from console.history import HistoryError
    from console.ttt import run, score, store_with_status

    as_json = wants_json(args)
    rows: list[dict[str, Any]] = []
    for index in range(args.runs):
        opts = {**options, "seed": options["seed"] + index}
        opts.pop("placement", None)
        line = ProgressLine.for_command(as_json)

        def show(update: dict[str, Any], index: int = index, line: Any = line) -> None:
            if line.enabled:
                line.show(progress_text(f"time-to-train run {index + 1}/{args.runs}", update))

        outcome = run(opts, on_progress=show, timeout_s=float(args.timeout))
        line.close()
        try:
            run_id, status, cause = store_with_status(outcome, store, opts, tags=args.tag)
        except HistoryError as exc:
            return error(f"time-to-train run {index + 1} ended {outcome.status}, but the history could not keep "
                         f"it: {exc}")
        rows.append({"run_id": run_id, "status": status, "seed": opts["seed"], "result": outcome.result,
                     "cause": cause, "fix": outcome.fix if status != "completed" else None,
                     "error_kind": outcome.error_kind if status != "completed" else None,
                     "wall_s": round(outcome.wall_s, 3)})
        if not as_json:
            print(f"run {index + 1}/{args.runs} · seed {opts['seed']} · run {run_id[:8]} · {status}"
                  + (f" · {outcome.result.get('time_to_train_s'):.3f} s" if status == "completed"
                     and isinstance((outcome.result or {}).get("time_to_train_s"), (int, float)) else ""),
                  flush=True)
        if status == "cancelled":
            break
    completed = [row for row in rows if row["status"] == "completed"]
    scored = score([row["result"] for row in completed])
    scored = _by_run(scored, rows, completed)
    if as_json:
        emit_json({"options": {k: v for k, v in options.items() if k != "placement"}, "runs": rows, "score": scored})
    else:
        for text in table_lines(rows, scored):
            print(text)
        method = next((row["result"].get("method") for row in completed if row.get("result")), None)
        if method:
            print(f"method: {method}")
    if any(row["status"] == "cancelled" for row in rows):
        print("labconsole: error: time-to-train cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    failed = [row for row in rows if row["status"] != "completed"]
    if failed:
        first = failed[0]
        fix = f" Fix: {first['fix']}" if first.get("fix") and first["fix"] not in (first.get("cause") or "") else ""
        print(f"labconsole: error: time-to-train: {len(failed)} of {len(rows)} runs {first['status']}; run "
              f"{rows.index(first) + 1}: {first.get('cause') or 'no cause given'}{fix}", file=sys.stderr)
        return EXIT_FAILED
    if scored["score_s"] is None:
        print(f"labconsole: error: time-to-train: no score: {scored['why']}. Fix: {scored['fix']}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _by_run(scored: dict[str, Any], rows: list[dict[str, Any]], completed: list[dict[str, Any]]) -> dict[str, Any]:
    """The score's indices (into the completed runs) as indices into every run, with the run ids beside them."""
    where = [rows.index(row) for row in completed]
    out = dict(scored)
    out["used"] = [where[i] for i in scored["used"]]
    out["dropped"] = {k: (where[v] if v is not None else None) for k, v in scored["dropped"].items()}
    out["used_run_ids"] = [rows[i]["run_id"] for i in out["used"]]
    return out
