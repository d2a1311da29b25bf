"""`labconsole sweep`: a grid of runs as one sweep, every point checked first; the knee of the curve.

The axes (batch, threads, precision, engine, target, request rate) take comma-separated values; every other run
option is the same flag as for `labconsole run`, built into the points by the one spec builder.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from console.cli.common import (
    EXIT_FAILED,
    add_cluster_options,
    add_spec_options,
    console_partition,
    emit_json,
    fail,
    fmt,
    join_cluster,
    open_writer,
    option_problem,
    parse_on,
    spec_values,
    status_exit,
    wants_json,
)
from console.cli.run_options import add_run_options

NAME = "sweep"
HELP = "run a grid of configurations as one sweep; find the knee"
DESCRIPTION = ("Each axis takes comma-separated values; every combination is one stored run. Every point is "
               "checked before anything runs. Other options are those of `labconsole run`.")
AXIS_HELP = {"batch": ("N,N,…", "batch sizes, e.g. 1,2,4,8"),
             "threads": ("N,N,…", "intra-op thread counts, e.g. 1,2"),
             "precision": ("P,P,…", "e.g. fp32,bf16 (default fp32)"),
             "engine": ("E,E,…", "e.g. torch,onnxruntime (default torch)"),
             "target": ("T,T,…", "e.g. cpu,cuda:0 (default cpu)"),
             "qps": ("R,R,…", "request rates (queries/s) for the server scenario, e.g. 10,20,40"),
             "on": ("LABEL=V,…", "lab nodes to sweep over, one node label each (needs --cluster), e.g. "
                                 "accel=h200,accel=cpu; every point is recorded under its node's host"),
             "ranks": ("N,N,…", "data-parallel ranks for --mode training (a scaling curve), e.g. 1,2,4; with "
                                "--cluster Ray places them on the lab cluster's nodes"),
             "bucket_mb": ("MB,MB,…", "DDP gradient bucket sizes with --ranks, e.g. 1,25,100 (default 25)"),
             "grad_accum": ("N,N,…", "micro-batches per optimizer step with --ranks, e.g. 1,2,4 (default 1)"),
             "loader_workers": ("N,N,…", "loader processes of the input-pipeline scenario, e.g. 0,2,4")}
AXIS_PATHS = {"qps": "scenario_options.qps", "ranks": "torch.ranks", "bucket_mb": "torch.bucket_mb",
              "grad_accum": "torch.grad_accum",
              "loader_workers": "scenario_options.loader_workers"}  # an axis → the spec option it replaces
SWEEP_DEFAULTS = {"duration_s": 2.0, "warmup_s": 0.5}  # short points: a sweep has many


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.sweep import AXIS_OPTIONS

    for axis, flag in AXIS_OPTIONS.items():
        metavar, text = AXIS_HELP.get(axis, ("V,V,…", f"values of {axis}"))
        parser.add_argument(flag, dest=f"axis.{axis}", default=None, metavar=metavar, help=text)
    add_spec_options(parser, _base_fields(), defaults=SWEEP_DEFAULTS)
    parser.add_argument("--skip-impossible", action="store_true",
                        help="run the points that can run and list the others (default: refuse the sweep)")
    add_run_options(parser, "the runs")
    add_cluster_options(parser, "run the points on the nodes of this Ray lab cluster (HOST:PORT of its head); "
                                "without --on, each on any node that has the target",
                        "a point fails when no node starts it within S seconds (default 60)", on=False)

def main(args: argparse.Namespace) -> int:
    """Every point checked first, then run one at a time; Ctrl+C stops after the point."""
    from console.machine.targets import discover_targets
    from console.spec.build import SpecError, spec_data
    from console.sweep import AXIS_OPTIONS, SweepError, SweepGrid, SweepRun, knee_text, report

    axes = {axis: getattr(args, f"axis.{axis}") for axis in AXIS_OPTIONS}
    values = spec_values(args, _base_fields())
    if axes.get("qps") and "scenario" not in values:
        values["scenario"] = "server"
    try:
        grid = SweepGrid.parse(**axes)
        base = spec_data(values)
    except SweepError as exc:
        return fail(_sweep_problem(exc))
    except SpecError as exc:
        return fail(option_problem(exc))
    base.setdefault("scenario", "single-stream")
    from console.cli.rules_cmd import rules_for

    rules = rules_for(args)
    if isinstance(rules, int):
        return rules
    remote_for = None
    ranks_cluster = _ranks_cluster(args, grid, base)  # --cluster with --ranks: Ray places each point's ranks
    if isinstance(ranks_cluster, int):
        return ranks_cluster
    if ranks_cluster is None and (args.cluster is not None or grid.on or args.send_model):
        remote_for = _remote_for(args)
        if isinstance(remote_for, int):
            return remote_for
    elif ranks_cluster is None:  # here, the data folder is this machine's: checked before any point runs
        from console.cli.arguments import data_dir_problem

        problem = data_dir_problem((base.get("scenario_options") or {}).get("data_dir"), base.get("model"))
        if problem:
            return fail(problem)
    writer = open_writer(args)
    if writer is None:
        return EXIT_FAILED
    interrupts: list[int] = []
    from console.cli.progress import sweep_listeners

    on_point, on_event, line = sweep_listeners(base, wants_json(args), _print_sweep_progress)  # live on a terminal
    try:
        try:
            sweep = SweepRun(base, grid, writer, name=values.get("name", ""), on_point=on_point, on_event=on_event,
                             targets=None if remote_for else discover_targets(),  # nodes check their own
                             strict=not args.skip_impossible, remote_for=remote_for,
                             session_options={"telemetry_hz": None if args.no_telemetry else 10.0,
                                              "partition": console_partition(args), "rules": rules},
                             noise_floor=_floor_provider(args))
        except SweepError as exc:
            return fail(_sweep_problem(exc))

        def on_interrupt(*_: Any) -> None:
            interrupts.append(1)
            sweep.stop(now=len(interrupts) > 1)
            print("  … stopping " + ("now" if len(interrupts) > 1 else
                                      "after this point (Ctrl+C again to stop the current run too)"),
                  file=sys.stderr, flush=True)

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:
            record = sweep.run()
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        line.close()
        writer.close()
    if wants_json(args):
        emit_json(report(record))
    else:
        _print_sweep(record, knee_text(record["knee"], record["knee_axis"]))
    return status_exit(record["status"])


# ---- Private API
def _remote_for(args: argparse.Namespace) -> Any:
    """point → the RemoteRun factory of its node (the point's `on` label, else any node), or an exit code after
    saying what is wrong (no --cluster, no Ray, no token, nothing at the address)."""
    import functools

    problem = join_cluster(args.cluster, "--on and --send-model are about the nodes of a lab cluster")
    if problem is not None:
        return problem
    from console.cluster.dispatch import RemoteRun

    def remote_for(point: dict[str, Any]) -> Any:
        on = parse_on([point["on"]]) if point.get("on") else None
        return functools.partial(RemoteRun, address=args.cluster, on=on, schedule_timeout_s=args.schedule_timeout,
                                 send_model=args.send_model)

    return remote_for


def _ranks_cluster(args: argparse.Namespace, grid: Any, base: dict[str, Any]) -> str | int | None:
    """With ranks (the axis or a base --ranks) and --cluster: the address, now in the base as
    engine_options.torch.ranks_cluster (the workers stay here); None without ranks or without a cluster; an exit
    code after saying what is wrong (--on or --send-model beside ranks: 2)."""
    ranks = grid.ranks or ((base.get("engine_options") or {}).get("torch") or {}).get("ranks") is not None
    if not ranks or (args.cluster is None and not grid.on and not args.send_model):
        return None
    from console.cli.ranks_cluster import place_ranks_in, refused_with_ranks

    refused = refused_with_ranks(grid.on, args.send_model)
    if refused is not None:
        return refused
    problem = place_ranks_in(base, args.cluster)
    return problem if problem is not None else args.cluster


def _base_fields() -> list[Any]:
    """The run options a sweep's base takes: all but the axes."""
    from console.sweep import AXIS_OPTIONS
    from engines.spec import spec_fields

    replaced = {AXIS_PATHS.get(axis, axis) for axis in AXIS_OPTIONS}
    return [fld for fld in spec_fields() if fld.path not in replaced]


def _sweep_problem(exc) -> str:
    """The message for a refused sweep: the option at fault, or each impossible point with its reason."""
    from console.spec.build import flag_for
    from console.sweep import impossible_lines

    if exc.headline:
        hint = "\n(--skip-impossible runs the points that can run)" if "cannot run" in exc.headline else ""
        return f"{exc.headline}:\n  " + "\n  ".join(impossible_lines(exc.impossible)) + hint
    if not exc.axis:
        return exc.detail
    option = exc.axis if exc.axis.startswith("-") else flag_for(exc.axis)
    return f"{option}: {exc.detail}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def _print_sweep_progress(event: dict[str, Any]) -> None:
    from console.sweep import format_rate

    kind = event["type"]
    if kind == "sweep_started":
        skipped = len(event["impossible"])
        print(f"sweep {event['sweep_id'][:8]}: {event['total']} points" + (f", {skipped} impossible ones skipped"
                                                                           if skipped else ""),
              file=sys.stderr, flush=True)
    elif kind == "point_started":
        print(f"  [{event['index'] + 1}/{event['total']}] {event['label'] or 'the point'} …", file=sys.stderr,
              flush=True)
    elif kind == "point_finished":
        r = event["result"]
        lat = r["latency_ms"]
        line = (f"  [{event['index'] + 1}/{event['total']}] {r['label'] or 'the point'}: {r['status']}")
        if r["status"] == "completed":
            line += (f"  p50 {_ms(lat['p50'])}  p99 {_ms(lat['p99'])}  "
                     f"{format_rate(r['throughput_per_s'])} samples/s")
            if r.get("until_stable"):
                line += f"  ({r['until_stable']})"
        elif r["message"]:
            line += f" — {r['message']}"
        print(line, file=sys.stderr, flush=True)


def _print_sweep(record: dict[str, Any], knee_line: str) -> None:
    from console.sweep import format_rate

    points = record["points"]
    width = max([len("point")] + [len(p["label"]) for p in points + record.get("skipped", [])])
    hosts = len({p.get("hostname") for p in points if p.get("hostname")}) > 1 or "on" in record["grid"]
    print(f"sweep {record['sweep_id'][:8]}  {record['status']}  {record['name']}".rstrip())
    print(f"  {'point':{width}}  {'status':10} {'p50 ms':>9} {'p99 ms':>9} {'samples/s':>11}  run"
          + ("       host" if hosts else ""))
    for p in points:
        lat = p["latency_ms"]
        print(f"  {p['label']:{width}}  {p['status']:10} {fmt(lat['p50']):>9} {fmt(lat['p99']):>9} "
              f"{format_rate(p['throughput_per_s']):>11}  {(p['run_id'] or '')[:8]}"
              + (f"{' ' * (8 - len((p['run_id'] or '')[:8]))}  {p.get('hostname') or '—'}" if hosts else ""))
    for p in record.get("skipped", []):
        print(f"  {p['label']:{width}}  {'skipped':10} {'':>9} {'':>9} {'':>11}  {p['reason']}")
    failed = [p for p in points if p["status"] == "failed"]
    for p in failed:
        print(f"  {p['label']} failed: {p['message']}")
    if any(p["status"] == "completed" and p["latency_ms"]["p99"] is None for p in points):
        print("  — : percentile withheld, too few samples back it (a longer --duration gives more)")
    print(f"  {knee_line}")


def _floor_provider(args: argparse.Namespace) -> Any:
    """The sweep's noise floor per target: the stored one, else a quick one measured before its first point (said
    on stderr unless --json), as `run` does; the sweep judges and aims every local point by it."""
    from console.machine.noise import noise_floor_for

    say = None if wants_json(args) else (lambda text: print(f"  … {text}", file=sys.stderr, flush=True))
    return lambda target: noise_floor_for(target, getattr(args, "db", None), on_progress=say)
