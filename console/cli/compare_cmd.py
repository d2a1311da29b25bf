"""`labconsole compare A B`: is run B faster or slower than run A, beyond the noise? With what differs between
them, and `--fail-on` for CI (exit status 1 when the verdict is the one named)."""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import EXIT_FAILED, EXIT_OK, db_path, emit_json, fmt, undecided, wants_json
from console.cli.numbers import number

NAME = "compare"
FAIL_ON = ("slower", "faster", "different")
HELP = "is run B faster or slower than run A?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="run id or a unique prefix (≥ 4 characters)")
    parser.add_argument("run_b", metavar="RUN_B")
    parser.add_argument("--noise", type=number(0, 1, high_open=True), default=0.02, help="ratio band treated as noise (default 0.02 = ±2%%)")
    parser.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True), default=0.01, help="Mann-Whitney U significance (default 0.01)")
    parser.add_argument("--fail-on", choices=FAIL_ON, default=None,
                        help="exit with status 1 when B is slower / faster / either (for CI)")


def main(args: argparse.Namespace) -> int:
    from console.analysis.compare import compare
    from console.analysis.fingerprint import differences
    from console.history import HistoryError, open_reader

    try:
        with open_reader(db_path(args)) as store:
            runs = []
            for option, ref in (("RUN_A", args.run_a), ("RUN_B", args.run_b)):
                run = store.get_run(ref)
                if run is None:
                    return undecided(f"{option}: no run {ref!r} in the history (`labconsole history` lists them)")
                latency_ns = store.latencies(run["run_id"])[1]
                if latency_ns.size < 2:
                    return undecided(f"{option}: run {run['run_id'][:8]} has {latency_ns.size} measured "
                                     "iterations; a comparison needs at least 2 in each run")
                runs.append((run, latency_ns / 1e6))
    except HistoryError as exc:
        return undecided(exc)
    (run_a, a_ms), (run_b, b_ms) = runs
    result = compare(a_ms, b_ms, noise=args.noise, alpha=args.alpha)
    changes = differences(run_a, run_b)
    from console.analysis.partition_note import partition_note

    partition = partition_note(run_a, run_b)  # a window run and a headless one compare alike only when equal
    same = not any(change["kind"] == "configuration" for change in changes)
    report = {"run_a": run_a["run_id"], "run_b": run_b["run_id"], "label_a": _run_label(run_a),
              "label_b": _run_label(run_b), **result, "same_configuration": same, "differences": changes,
              "partition": partition}
    if wants_json(args):
        emit_json(report)
    else:
        print(f"A {run_a['run_id'][:8]}  {report['label_a']}\nB {run_b['run_id'][:8]}  {report['label_b']}")
        print(f"  B/A median ratio {result['ratio']:.4f}  95% CI [{fmt(result['ci95'][0], 4)}, "
              f"{fmt(result['ci95'][1], 4)}]  Mann-Whitney p = {result['p_value']:.3g}")
        print(f"  verdict: {result['verdict']} — {result['explanation']}")
        _print_differences(changes, same)
        if partition["same"] is not True:
            print(f"  {partition['text']}")
    failing = {"slower": ("slower",), "faster": ("faster",), "different": ("slower", "faster")}
    return EXIT_FAILED if args.fail_on and result["verdict"] in failing[args.fail_on] else EXIT_OK


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


def _run_label(run: dict[str, Any]) -> str:
    spec = run.get("spec") or {}
    return " · ".join(str(x) for x in (run["model"], run["engine"], run["target"], f"b{run['batch']}",
                                       spec.get("precision", "fp32")))
