"""`labconsole compare A B`: is run B faster or slower than run A, beyond the noise, equally fast, or can these
runs not tell? With the smallest difference they could resolve, what differs between them, and `--fail-on` for
CI (exit status 1 when the answer is yes, EXIT_UNDECIDED when the runs cannot answer). `--interleave` re-runs
both stored specs in alternating rounds until the question is answered or a cap (console.cli.compare_rounds)."""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import (  # EXIT_UNDECIDED (3): the runs cannot answer, or cannot be read
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNDECIDED,
    db_path,
    emit_json,
    fail,
    fmt,
    open_writer,
    undecided,
    wants_json,
)
from console.cli.numbers import number, whole

NAME = "compare"
FAIL_ON = ("slower", "faster", "different")
HELP = "is run B faster or slower than run A?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="run id or a unique prefix (≥ 4 characters)")
    parser.add_argument("run_b", metavar="RUN_B")
    parser.add_argument("--noise", type=number(0, 1, high_open=True), default=0.02, help="ratio band treated as noise, and within which runs count as equally fast (default 0.02 = ±2%%)")
    parser.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True), default=0.01, help="significance of the block test, Mann-Whitney U on block medians (default 0.01)")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help=f"exit with status 1 when B is slower / faster / either beyond --noise, "
                             f"{EXIT_UNDECIDED} when the runs cannot tell (for CI)")
    rounds = parser.add_argument_group("interleaved rounds (when one pair of runs cannot answer)")
    rounds.add_argument("--interleave", action="store_true",
                        help="re-run both runs' stored specs here in alternating rounds (A B B A …), judged pair by "
                             "pair, until the --fail-on question (or, without it, any verdict) is answered or "
                             "--max-rounds")
    rounds.add_argument("--max-rounds", metavar="N", type=whole(8, 1000), default=16,
                        help="the cap: rounds a side (default 16; at least 8, the fewest pairs the paired test "
                             "can judge at p < 0.01)")
    rounds.add_argument("--round-duration", metavar="S", type=number(0, 3600, low_open=True, unit="s"),
                        default=2.0, help="measured seconds per round (default 2)")
    rounds.add_argument("--trust-code", action="store_true",
                        help="a stored spec that trusted its model file's code runs again only with this")


def main(args: argparse.Namespace) -> int:
    from console.analysis.compare import answer, compare
    from console.analysis.fingerprint import differences
    from console.collectives.runs import is_collectives_run
    from console.history import HistoryError, open_reader
    from console.storage.figures import compare_figures, comparison_lines
    from console.storage.runs import is_storage_run
    from console.ttt.runs import is_ttt_run

    def has_figures(run: dict[str, Any]) -> bool:  # storage, collectives, time-to-train runs: by their figures
        return is_storage_run(run) or is_collectives_run(run) or is_ttt_run(run)

    try:
        with open_reader(db_path(args)) as store:
            runs = []
            for option, ref in (("RUN_A", args.run_a), ("RUN_B", args.run_b)):
                run = store.get_run(ref)
                if run is None:
                    return undecided(f"{option}: no run {ref!r} in the history (`labconsole history` lists them)")
                latency_ns = store.latencies(run["run_id"])[1]
                if latency_ns.size < 2 and not has_figures(run):  # a storage run still has its figures
                    return undecided(f"{option}: run {run['run_id'][:8]} has {latency_ns.size} measured "
                                     "iterations; a comparison needs at least 2 in each run")
                runs.append((run, latency_ns / 1e6))
    except HistoryError as exc:
        return undecided(exc)
    (run_a, a_ms), (run_b, b_ms) = runs
    storage = compare_figures(run_a, run_b) if has_figures(run_a) or has_figures(run_b) else None
    if storage is not None and (args.interleave or a_ms.size < 2 or b_ms.size < 2):
        return _storage_figures_only(args, run_a, run_b, a_ms.size, b_ms.size, storage)
    result = compare(a_ms, b_ms, noise=args.noise, alpha=args.alpha)
    result["answer"] = answer(result, args.fail_on)
    if args.interleave:
        judged = _interleave(args, [run_a, run_b])
        if isinstance(judged, int):
            return judged
        result = {**judged, "pair": {key: result[key] for key in ("ratio", "ci95", "p_value", "verdict", "mde",
                                                                  "explanation")}}
    changes = differences(run_a, run_b)
    from console.analysis.partition_note import partition_note

    partition = partition_note(run_a, run_b)  # a window run and a headless one compare alike only when equal
    if args.interleave:  # the rounds here ran both sides the same way: the note is about the stored pair only
        partition = {**partition, "applies_to": "the stored pair; the interleaved rounds ran both sides alike"}
    same = not any(change["kind"] == "configuration" for change in changes)
    report = {"run_a": run_a["run_id"], "run_b": run_b["run_id"], "label_a": _run_label(run_a),
              "label_b": _run_label(run_b), **result, "same_configuration": same, "differences": changes,
              "partition": partition}
    if storage is not None:
        report["storage_figures"] = storage
    if wants_json(args):
        emit_json(report)
    else:
        print(f"A {run_a['run_id'][:8]}  {report['label_a']}\nB {run_b['run_id'][:8]}  {report['label_b']}")
        if "pair" in result:
            print(f"  the stored pair: {result['pair']['explanation']}\n  interleaved rounds here, "
                  f"{result['rounds']} a side ({' '.join(result['order'][:8])}{' …' if len(result['order']) > 8 else ''}):")
        print(f"  B/A median ratio {result['ratio']:.4f}  95% CI [{fmt(result['ci95'][0], 4)}, "
              f"{fmt(result['ci95'][1], 4)}]  {result['p_label']} = {result['p_value']:.3g}")
        print(f"  verdict: {result['verdict']} — {result['explanation']}")
        if "decision" in result:
            print(f"  decision: {result['decision']}")
        elif args.fail_on and result["answer"] == "undecided":
            print(f"  this pair cannot answer --fail-on {args.fail_on}: add --interleave to re-run both specs in "
                  "alternating rounds until it can")
        if storage is not None:
            print("\n".join(comparison_lines(storage)))
        _print_differences(changes, same)
        if partition["same"] is not True and storage is None:  # a storage run has no core partition
            scope = f" ({partition['applies_to']})" if "applies_to" in partition else ""
            print(f"  {partition['text']}{scope}")
    if not args.fail_on:
        return EXIT_OK
    return {"yes": EXIT_FAILED, "no": EXIT_OK}.get(result["answer"], EXIT_UNDECIDED)


def _interleave(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any] | int:
    """The comparison over interleaved rounds of both stored specs, or an exit code after saying why not."""
    from console.analysis.interleave import interleaved
    from console.cli.compare_rounds import RoundFailed, progress_printer, round_specs, runner

    specs = round_specs(args, runs)
    if isinstance(specs, str):
        return fail(specs)
    writer = open_writer(args)
    if writer is None:
        return EXIT_UNDECIDED  # open_writer said why: the history cannot take the rounds
    try:
        return interleaved(runner(specs, writer), question=args.fail_on, max_rounds=args.max_rounds,
                           noise=args.noise, alpha=args.alpha, on_progress=progress_printer(wants_json(args)))
    except RoundFailed as exc:
        return undecided(f"--interleave stopped: {exc}")
    finally:
        writer.close()


def _print_differences(changes: list[dict[str, Any]], same: bool) -> None:
    if not same:
        print("  different configurations (allowed; the ratio compares different measurements):")
    for change in changes:
        if change["kind"] == "configuration":
            print(f"    {change['field']}: {change['a']!r} → {change['b']!r}")
    changed = [change for change in changes if change["kind"] == "environment"]
    if changed:
        print("  what changed around the measurement:")
    for change in changed:
        print(f"    {change['field']}: {change['a']!r} → {change['b']!r}")


def _storage_figures_only(args: argparse.Namespace, run_a: dict[str, Any], run_b: dict[str, Any], n_a: int,
                          n_b: int, storage: dict[str, Any]) -> int:
    """Two runs of which one is a storage run whose latencies cannot be compared (fewer than 2, or --interleave,
    which re-runs model specs only): their figures side by side; exit 3 when --fail-on asked what they cannot say."""
    from console.storage.figures import comparison_lines

    if args.interleave:
        return fail("--interleave re-runs model specs; repeat a storage run with `labconsole storage KIND` and "
                    "compare the stored runs")
    timed = ("timed operations" if "collectives" in (_scenario(run_a), _scenario(run_b)) else
             "per-step times" if "time-to-train" in (_scenario(run_a), _scenario(run_b)) else "timed reads")
    why = (f"the latencies cannot be compared: A stored {n_a} {timed}, B {n_b}; a comparison needs at least 2 "
           "in each run")
    if wants_json(args):
        emit_json({"run_a": run_a["run_id"], "run_b": run_b["run_id"], "label_a": _run_label(run_a),
                   "label_b": _run_label(run_b), "verdict": None, "answer": "undecided" if args.fail_on else None,
                   "explanation": why, "storage_figures": storage})
    else:
        print(f"A {run_a['run_id'][:8]}  {_run_label(run_a)}\nB {run_b['run_id'][:8]}  {_run_label(run_b)}")
        print(f"  {why}")
        print("\n".join(comparison_lines(storage)))
    return undecided(why) if args.fail_on else EXIT_OK


def _scenario(run: dict[str, Any]) -> str:
    return str((run.get("spec") or {}).get("scenario") or "")


def _run_label(run: dict[str, Any]) -> str:
    spec = run.get("spec") or {}
    if str(spec.get("scenario") or "").startswith("storage-"):
        return f"{run['model']} · {spec['scenario']}"
    return " · ".join(str(x) for x in (run["model"], run["engine"], run["target"], f"b{run['batch']}",
                                       spec.get("precision", "fp32")))
