"""`labconsole whatif RUN`: project an analysed run onto another machine card, or another thread count.

The card is another host's (from the history: `labconsole machine` kept it there) or typed-in ceilings on top of
the run's own card. Every projection states its method; when the history holds a measured run of the same
configuration on the target, the projection's error against it is reported too (a projection is never shown as
a measurement).

`--ranks N` projects a data-parallel run (one measured with `run --ranks`) onto N ranks from its measured
breakdown (console.analysis.whatif_ranks): no profile needed; with --onto the compute also scales by the two cards'
compute roofs, and the report says which ratio it applied.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable
from typing import Any

from console.cli.arguments import history_failure
from console.cli.common import EXIT_OK, db_path, emit_json, fail, fmt, wants_json
from console.cli.numbers import number, whole

NAME = "whatif"
HELP = "project an analysed run onto another machine's card, another thread count or (a DDP run) N ranks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="an analysed run (labconsole analyze): id or unique prefix")
    parser.add_argument("--onto", metavar="HOST[/TARGET]", help="the newest stored card of another host")
    parser.add_argument("--peak-gflops", type=number(0, 1e9, low_open=True, unit="GFLOP/s"), metavar="X",
                        help="typed-in peak of the run's precision (GFLOP/s)")
    parser.add_argument("--bandwidth-gbs", type=number(0, 1e8, low_open=True, unit="GB/s"), metavar="X",
                        help="typed-in memory bandwidth (GB/s)")
    parser.add_argument("--call-floor-us", type=number(0, 1e9, low_open=True, unit="µs"), metavar="X",
                        help="typed-in per-call floor of the engine (µs)")
    parser.add_argument("--threads", type=whole(1, 4096), metavar="N", help="project onto N intra-op threads")
    parser.add_argument("--storage-onto", metavar="CARD_ID|MB_S",
                        help="a feed or input-pipeline run: project AU and samples/s onto another device's measured "
                             "read (a stored machine card's id or prefix, or a typed-in MB/s)")
    parser.add_argument("--ranks", type=whole(1, 1024), metavar="N",
                        help="a data-parallel run (run --ranks): project its step onto N ranks from its measured "
                             "parts, no analyze needed (with --onto: that host's compute roof too)")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError, damage, open_reader
    from console.machine.cards import newest_card

    try:
        with open_reader(db_path(args)) as store:
            run = store.get_run(args.run)
            if run is None:
                return fail(f"RUN: no run {args.run!r} in the history (`labconsole history` lists them)")
            if getattr(args, "ranks", None) is not None:
                report, problem = _ranks_projection(store, run, args)
                if problem:
                    return fail(problem)
                return _answer(args, report, _print_ranks)
            if getattr(args, "storage_onto", None):
                report, problem = _storage_projection(store, run, args.storage_onto)
                if problem:
                    return fail(problem)
                return _answer(args, report, _print_storage)
            ops = store.ops(run["run_id"])
            profile = (run.get("summary") or {}).get("profile")
            if not ops or not profile:
                return fail(f"RUN: run {run['run_id'][:8]} has no profile; analyse it first: `labconsole analyze` "
                            "with the same options")
            host = store.hostname_of(run)
            own = newest_card(store, run["target"], hostname=host)
            if own is None:
                return fail(f"no machine card of {host} / {run['target']} in the history: run `labconsole machine "
                            f"--target {run['target']}` on {host} first")
            target_card, problem = _target_card(store, own, args)
            if problem:
                return fail(problem)
            report = _project(store, run, ops, profile, own, target_card, args)
            damage.print_skipped(store)  # a damaged run could have been the measured counterpart: say so
    except HistoryError as exc:  # an id prefix too short or ambiguous: 2, like an unknown id
        return history_failure(exc)
    return _answer(args, report, _print)


def _answer(args: argparse.Namespace, report: dict[str, Any], print_text: Callable[[dict[str, Any]], None]) -> int:
    """Every projection answers the same way: the report as JSON with --json, else as text."""
    if wants_json(args):
        emit_json(report)
    else:
        print_text(report)
    return EXIT_OK


# ---- Private API
def _target_card(store, own: dict[str, Any], args) -> tuple[dict[str, Any] | None, str]:
    typed = {"peak_gflops": args.peak_gflops, "bandwidth_gbs": args.bandwidth_gbs, "call_floor_us": args.call_floor_us}
    for name, value in typed.items():
        if value is not None and not value > 0:
            return None, f"--{name.replace('_', '-')}: must be > 0, got {value:g}"
    if args.threads is not None and args.threads < 1:
        return None, f"--threads: must be ≥ 1, got {args.threads}"
    card = own
    if args.onto:
        host, _, target = args.onto.partition("/")
        found = store.machine_cards(hostname=host, target=target or own.get("target"), latest_only=True)
        if not found:
            hosts = sorted({f"{c.get('host')}/{c.get('target')}" for c in store.machine_cards(latest_only=True)})
            return None, f"--onto: no card of {args.onto} in the history; cards kept: {', '.join(hosts) or 'none'}"
        card = found[0]
    if any(v is not None for v in typed.values()):
        card = copy.deepcopy(card)
        card["host"] = f"{card.get('host')} with typed-in ceilings"
        if args.peak_gflops is not None:
            card["peak_flops"] = {p: args.peak_gflops * 1e9 for p in (card.get("peak_flops") or {"fp32": 0})}
        if args.bandwidth_gbs is not None:
            card["memory_bandwidth_gbs"] = args.bandwidth_gbs
        if args.call_floor_us is not None:
            card["call_floor_us"] = {e: args.call_floor_us for e in (card.get("call_floor_us") or {"torch": 0})}
    elif card is own and args.threads is None:
        return None, "nothing to project onto: give --onto HOST, typed-in ceilings or --threads N"
    return card, ""


def _project(store, run, ops, profile, own, card, args) -> dict[str, Any]:
    from console.analysis.whatif import error, project

    spec = run.get("spec") or {}
    threads_from = spec.get("threads") or own.get("threads")
    projected = project(ops, profile, run.get("summary"), own, card, spec.get("precision", "fp32"),
                        threads_from=threads_from if args.threads else None, threads_to=args.threads)
    check = _measured_counterpart(store, run, card, args.threads or threads_from)
    if check is not None:
        projected["measured_run"] = check["run_id"]
        projected["measured_latency_ms"] = check["p50"]
        projected["error"] = error(projected, check["p50"])
    else:
        projected["error"] = None
        projected["error_note"] = ("no measured run of this configuration on the target in the history to check "
                                   "against: run it there to learn this projection's error")
    return {"run_id": run["run_id"], "from": _card_label(own), "onto": _card_label(card),
            "threads": {"from": threads_from, "to": args.threads}, **projected}


def _measured_counterpart(store, run, card, threads) -> dict[str, Any] | None:
    """A completed run of the same configuration measured on the target host (and thread count)."""
    spec = run.get("spec") or {}
    for other in store.list_runs(limit=500, status="completed"):
        o = other.get("spec") or {}
        same = all(o.get(k) == spec.get(k) for k in ("model", "engine", "precision", "batch", "scenario",
                                                      "model_params"))
        if (same and other["run_id"] != run["run_id"] and store.hostname_of(other) == card.get("host")
                and (o.get("threads") or None) == (threads or None)):
            p50 = ((other.get("summary") or {}).get("latency_ms") or {}).get("p50")
            if p50:
                return {"run_id": other["run_id"], "p50": p50}
    return None


def _card_label(card: dict[str, Any]) -> str:
    return f"{card.get('host')} / {card.get('target')} (measured {str(card.get('measured_at', ''))[:10]})"


def _print(report: dict[str, Any]) -> None:
    print(f"what-if for run {report['run_id'][:8]}: {report['from']} → {report['onto']}")
    if report["threads"]["to"]:
        print(f"  threads {report['threads']['from']} → {report['threads']['to']}")
    print(f"  projected p50 {fmt(report.get('latency_ms'))} ms, {fmt(report.get('throughput_per_s'), 4)} samples/s "
          f"(× {fmt(report.get('ratio'))} of the time) — a projection, not a measurement")
    for term, t in (report.get("terms") or {}).items():
        if t.get("from_ms"):
            print(f"    {term:12} {fmt(t['from_ms'])} ms → {fmt(t.get('to_ms'))} ms (× {fmt(t.get('scale'))})")
    print(f"  method: {report.get('method')}")
    if report.get("error") is not None:
        print(f"  error against run {report['measured_run'][:8]} measured there: {report['error']:+.1%}")
    else:
        print(f"  error: {report['error_note']}")
    for note in report.get("notes") or []:
        print(f"  note: {note}")


def _ranks_projection(store, run, args) -> tuple[dict[str, Any], str]:
    """--ranks N: (report, "") or ({}, the problem and its fix). Busbw rows at N from the newest matching
    collectives run when the history has one; with --onto (or typed-in ceilings) the compute scales by whatif's
    peak-FLOP/s roof ratio of the two cards, and the report says which ratio it applied."""
    from console.analysis import roofline
    from console.analysis.scaling_verdict import collectives_rows, ddp_of
    from console.analysis.whatif_ranks import project_ranks
    from console.machine.cards import newest_card

    ddp = ddp_of(run)
    if ddp is None:
        return {}, (f"RUN: run {run['run_id'][:8]} has no data-parallel breakdown: --ranks projects a run measured "
                    "with --ranks N (labconsole run --mode training --ranks 2 ...)")
    if args.threads is not None or getattr(args, "storage_onto", None):
        return {}, "--ranks: project ranks alone or with --onto/typed-in ceilings, not with --threads or --storage-onto"
    ratio, applied = 1.0, "none: the same card (compute per rank scaled by the per-rank batch only)"
    typed = (args.peak_gflops, args.bandwidth_gbs, args.call_floor_us)
    if args.onto or any(v is not None for v in typed):
        host = store.hostname_of(run)
        own = newest_card(store, run["target"], hostname=host)
        if own is None:
            return {}, (f"--onto: no machine card of {host} / {run['target']} in the history to take the ratio from: "
                        f"run `labconsole machine --target {run['target']}` on {host} first")
        card, problem = _target_card(store, own, args)
        if problem:
            return {}, problem
        precision = str((run.get("spec") or {}).get("precision") or "fp32")
        try:
            ratio = roofline.roofs(own, precision)["peak_flops"] / roofline.roofs(card, precision)["peak_flops"]
        except roofline.RooflineError as exc:
            return {}, f"--onto: {exc}"
        applied = (f"compute × {ratio:.3g}: the peak {precision} FLOP/s ratio of {_card_label(own)} → "
                   f"{_card_label(card)} (whatif's compute roof); data wait, optimizer and communication not scaled "
                   "by it")
    rows, source = (None, "")
    if args.ranks >= 2:
        from console.collectives import latest

        rows, source = collectives_rows(latest(store, n=20), str(ddp.get("backend")), args.ranks,
                                        str(ddp.get("placement") or "local"))
    try:
        projected = project_ranks(ddp, args.ranks, busbw_rows=rows, compute_ratio=ratio,
                                  rows_source=source or "a collectives run")
    except ValueError as exc:
        return {}, f"--ranks: {exc}"
    return {"run_id": run["run_id"], "projection": "ranks", "compute_ratio_applied": applied,
            "busbw_rows_from": source or None, **projected}, ""


def _print_ranks(report: dict[str, Any]) -> None:
    print(f"ranks what-if for run {report['run_id'][:8]}: {report['ranks_from']} → {report['ranks_to']} ranks "
          f"({report['scaling']} scaling)")
    print(f"  measured step {fmt(report['measured_step_s'] * 1e3)} ms; projected {fmt(report['step_s'] * 1e3)} ms, "
          f"{fmt(report.get('samples_per_s'), 4)} samples/s — a projection, not a measurement")
    for name, part in report["parts"].items():
        print(f"    {name.removesuffix('_s').replace('_', ' '):18} {fmt(part['from_s'] * 1e3)} ms → "
              f"{fmt(part['to_s'] * 1e3)} ms: {part['how']}")
    print(f"  compute ratio applied: {report['compute_ratio_applied']}")
    print(f"  method: {report['method']}")
    for note in report.get("notes") or []:
        print(f"  note: {note}")


def _storage_projection(store, run, onto: str) -> tuple[dict[str, Any], str]:
    """--storage-onto: (report, "") or ({}, the problem and its fix)."""
    from console.analysis.storage import feed_facts, storage_verdict
    from console.analysis.whatif import project_storage
    from console.machine.cards import newest_card

    summary = run.get("summary") or {}
    nested = summary.get("storage_bench") or summary.get("result")  # a stored storage run keeps it under storage_bench
    facts = feed_facts(nested if isinstance(nested, dict) and nested.get("kind") == "feed" else summary)
    if facts is None:
        return {}, (f"RUN: run {run['run_id'][:8]} is neither an input-pipeline nor a storage feed run: --storage-onto "
                    "projects how a device feeds a run (labconsole run --scenario input-pipeline, or storage feed)")
    try:
        to_mb_s, to_label = float(onto), f"a typed-in {float(onto):g} MB/s device"
    except ValueError:
        cards = [c for c in store.machine_cards() if str(c.get("card_id", "")).startswith(onto)]
        if len(cards) != 1:
            kept = ", ".join(f"{str(c.get('card_id'))[:8]} ({c.get('host')})" for c in store.machine_cards()[:8])
            what = "matches several cards" if cards else "is no stored card id"
            return {}, f"--storage-onto: {onto!r} {what} nor a number of MB/s; cards kept: {kept or 'none'}"
        card = cards[0]
        gbs = card.get("storage_read_gbs")
        if not isinstance(gbs, (int, float)) or gbs <= 0:
            why = (card.get("not_available") or {}).get("storage_read_gbs") or "no storage read on it"
            return {}, (f"--storage-onto: card {str(card['card_id'])[:8]} ({card.get('host')}) has no measured storage "
                        f"read ({why}); measure one with labconsole machine --storage DIR there")
        to_mb_s = gbs * 1e3
        to_label = f"{card.get('host')}'s {(card.get('storage') or {}).get('dir') or 'storage'} (card {str(card['card_id'])[:8]})"
    host = store.hostname_of(run)
    own = newest_card(store, str(run.get("target") or "cpu"), hostname=host)
    verdict = storage_verdict(summary, own)
    facts["lever"] = verdict["lever"] if verdict else None
    from_gbs = (own.get("storage_read_gbs") if own else None)
    from_mb_s = from_gbs * 1e3 if isinstance(from_gbs, (int, float)) and from_gbs > 0 else None
    try:
        projected = project_storage(facts, to_mb_s, to_label, from_mb_s,
                                    f"{host}'s measured storage read (card)" if from_mb_s else "")
    except ValueError as exc:
        return {}, f"--storage-onto: {exc}"
    return {"run_id": run["run_id"], **projected}, ""


def _print_storage(report: dict[str, Any]) -> None:
    print(f"storage what-if for run {report['run_id'][:8]} onto {report['onto']} ({report['onto_mb_s']:.6g} MB/s)")
    measured = report.get("measured") or {}
    print(f"  measured:  AU {fmt(measured.get('au_percent'))}%, {fmt(measured.get('samples_per_s'), 4)} samples/s")
    print(f"  projected: AU {fmt(report['au_percent'])}%, {fmt(report['samples_per_s'], 4)} samples/s, step "
          f"{fmt(report['step_ms'])} ms bound by {report['bound_by']} — a projection, not a measurement")
    check = report.get("model_check")
    if check and check.get("error") is not None:
        print(f"  model check at {check['device']} ({check['mb_s']:.4g} MB/s): {check['error']:+.0%} against the "
              "measured samples/s")
    print(f"  method: {report['method']}")
    for note in report.get("notes") or []:
        print(f"  note: {note}")
