"""`labconsole run`: one run, measured in a worker, stored in the history; the flags come from the spec."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from console.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    add_cluster_options,
    add_spec_options,
    console_partition,
    emit_json,
    error,
    fail,
    fmt,
    on_cluster,
    open_writer,
    spec_values,
    status_exit,
    wants_json,
)
from console.cli.run_options import add_run_options, spec_and_rules

NAME = "run"
HELP = "run a model once and store the run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.spec import spec_fields

    add_spec_options(parser, spec_fields())
    parser.add_argument("--spec", metavar="FILE", default=None,
                        help="run the spec in this JSON file (a RunSpec, or one run written by `labconsole export "
                             "--format json`) instead of spec flags")
    add_run_options(parser)
    add_cluster_options(parser, "run on a node of this Ray lab cluster (HOST:PORT of its head) instead of here",
                        "fail when no node starts the run within S seconds (default 60)", on=True)

def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError
    from console.run.session import RunSession
    from engines.spec import spec_fields

    from_file = None
    if args.spec is not None:
        from_file = _spec_from_file(args, spec_fields())
        if from_file is None:
            return EXIT_USAGE
    found = spec_and_rules(args, from_file)
    if isinstance(found, int):
        return found
    spec, rules = found
    remote = None
    ranks_cluster = _ranks_cluster(args, spec)  # --cluster with --ranks: Ray places the ranks, the worker is here
    if isinstance(ranks_cluster, int):
        return ranks_cluster
    if ranks_cluster is None and (args.cluster is not None or args.on or args.send_model):
        remote = _remote(args)
        if isinstance(remote, int):
            return remote
    elif ranks_cluster is None:  # here, the data folder is this machine's: checked before a worker loads the model
        from console.cli.arguments import data_dir_problem

        problem = data_dir_problem(getattr(spec.scenario_options, "data_dir", None), spec.model)
        if problem:
            return fail(problem)
    writer = open_writer(args)
    if writer is None:
        return EXIT_FAILED
    as_json = wants_json(args)
    noise_floor = _noise_floor(args, spec, remote, as_json)
    from console.cli.progress import live_listener

    listener, line = live_listener(spec, as_json, _print_phase, f"run {spec.model}")  # a live line on a terminal
    session = RunSession(spec, writer, listener=listener,
                         telemetry_hz=None if args.no_telemetry else 10.0, remote=remote,
                         partition=console_partition(args), rules=rules, noise_floor=noise_floor)
    previous = signal.signal(signal.SIGINT, lambda *_: session.cancel())
    try:
        try:
            session.start()
        except HistoryError as exc:  # the run cannot be recorded (e.g. a name SQLite cannot store): not started
            return error(exc)
        record = session.wait()
    finally:
        line.close()
        signal.signal(signal.SIGINT, previous)
        writer.close()
    record = _checked_storage(record, writer)
    report = _run_report(record, spec)
    if as_json:
        emit_json(report)
    else:
        _print_run(report)
    return status_exit(record["status"])


# ---- Private API
def _checked_storage(record: dict[str, Any], writer: Any) -> dict[str, Any]:
    """After the writer closed: a run whose data did not all reach the file is `failed` (exit 1), never
    `completed` — the last commit at close can fail too (disk full)."""
    from console.analysis.finished_run import failed_storing
    from console.run.session import storage_problem

    if record["status"] == "failed":  # a run that lost data is failed already (findings' storage reads are no loss)
        return record
    lost = storage_problem(writer, record["run_id"], int(record["summary"]["iterations"] or 0))
    if lost is None:
        return record
    summary = {**record["summary"], "notes": list(record["summary"].get("notes") or [])}
    status, message = failed_storing(summary, lost, record["status"], record["message"])
    return {**record, "status": status, "message": message, "summary": summary}


def _ranks_cluster(args: argparse.Namespace, spec) -> str | int | None:
    """With --ranks: the cluster address now in the spec (engine_options.torch.ranks_cluster), None without
    --cluster, or an exit code after saying what is wrong (--on or --send-model beside --ranks: 2)."""
    from engines.ddp import is_distributed

    if not is_distributed(spec) or (args.cluster is None and not getattr(args, "on", None)
                                    and not getattr(args, "send_model", False)):
        return None
    from console.cli.ranks_cluster import place_ranks, refused_with_ranks

    refused = refused_with_ranks(getattr(args, "on", None), getattr(args, "send_model", False))
    if refused is not None:
        return refused
    placed = place_ranks(spec, args.cluster)
    return placed if isinstance(placed, int) else args.cluster


def _remote(args: argparse.Namespace) -> Any:
    """The RemoteRun factory for --cluster/--on, or an exit code after saying what is wrong."""
    import functools

    on = on_cluster(args, "--on and --send-model are about a node of a lab cluster")
    if isinstance(on, int):
        return on
    from console.cluster.dispatch import RemoteRun

    return functools.partial(RemoteRun, address=args.cluster, on=on, schedule_timeout_s=args.schedule_timeout,
                             send_model=args.send_model)


def _spec_from_file(args: argparse.Namespace, fields) -> Any:
    """The spec of --spec FILE, or None after saying why; spec flags beside it are refused, not merged — except
    --trust-code: a file never grants trust in its model's code (it may come from anyone), the user does."""
    from console.spec.build import flag_for
    from console.spec.reproduce import SpecFileError, load_spec

    given = spec_values(args, fields)
    trusted = bool(given.pop("trust_code", False))
    if given:
        flags = ", ".join(flag_for(path) for path in given)
        fail(f"--spec runs the file's spec as it is; drop {flags} (or edit the file)")
        return None
    try:
        spec = load_spec(args.spec)
    except SpecFileError as exc:
        fail(f"--spec {exc}")
        return None
    if spec.trust_code and not trusted:
        fail(f"--spec {args.spec} asks to trust its model file as code (trust_code: true), and a spec file never "
             f"grants that: add --trust-code if you trust {spec.model}")
        return None
    spec.trust_code = trusted
    return spec


def _run_report(record: dict[str, Any], spec) -> dict[str, Any]:
    summary = record["summary"]
    energy = summary.get("energy")
    return {
        "run_id": record["run_id"], "status": record["status"], "message": record["message"],
        "name": spec.name, "model": spec.model, "engine": spec.engine, "target": spec.target, "batch": spec.batch,
        "precision": spec.precision, "mode": spec.mode, "iterations": summary["iterations"],
        "duration_s": summary["duration_s"], "load_s": summary["load_s"],
        "first_inference_ms": summary["first_inference_ms"], "throughput_per_s": summary["throughput_per_s"],
        "latency_ms": {k: summary["latency_ms"][k] for k in ("p50", "p90", "p99", "mean", "min", "max", "ci95")},
        "cv": summary["cv"], "valid": summary["valid"], "invalid_reasons": summary["invalid_reasons"],
        "stable": summary["stable"], "scenario": {"name": spec.scenario, **summary["scenario"]},
        "cold_start": summary["cold_start"],
        # the machine's (hygiene) and the inputs' (a named dim given two sizes: engines.inputs.symbol_warnings)
        "warnings": summary.get("warnings", []) + list(((record.get("environment") or {}).get("engine") or {})
                                                       .get("input_warnings") or []),
        "hygiene": (record.get("environment") or {}).get("hygiene"),
        "energy": {k: energy.get(k) for k in ("joules", "joules_per_inference", "method", "source", "scope")}
        if energy else None,
        "telemetry": {metric: {k: v.get(k) for k in ("mean", "max", "unit", "method")}
                      for metric, v in (summary.get("telemetry") or {}).items()},
        "method": summary["method"],
        "baseline": _baseline(summary.get("baseline")),
        "details": (record.get("environment") or {}).get("engine", {}),
        "node": _node((record.get("environment") or {}).get("node")),
        "storage": summary.get("stored"),  # set when the history lacks part of the run (then status is failed)
        "partition": summary.get("partition"),  # worker and console CPUs, or not confined (why)
        "console_cpu": summary.get("console_cpu"),  # the console's own CPU while measuring
        "until_stable": summary.get("until_stable"),  # windows taken and the spread it ended with (--until-stable)
        "rules": (record.get("environment") or {}).get("validity_rules"),  # the rules it was judged by, and whence
        "stability": _stability(summary),  # stable, jittery (noise stated) or drift (console.analysis.drift)
    }


def _noise_floor(args: argparse.Namespace, spec, remote: Any, as_json: bool) -> dict[str, Any] | None:
    """This machine's noise floor for judging the run: a recent one, or a quick one measured now (about 3 s,
    said on stderr); None for a cluster run (the node's noise is not this host's)."""
    from console.machine.noise import noise_floor_for

    if remote is not None or getattr(spec.options_for("torch"), "ranks_cluster", None):
        return None
    say = None if as_json else (lambda text: print(f"  … {text}", file=sys.stderr, flush=True))
    return noise_floor_for(spec.target, getattr(args, "db", None), on_progress=say)


def _stability(summary: dict[str, Any]) -> dict[str, Any] | None:
    """`stability` of run --json: the verdict, its text, the spread against what was allowed, the noise and the
    trend test (verdict None when too few windows were measured to judge); None for a run without windows."""
    from console.analysis.stability_text import stability_line, stability_of

    stability = stability_of(summary)
    if not stability:
        return None
    return {**{k: stability.get(k) for k in ("verdict", "text", "spread", "allowance", "tolerance", "noise",
                                             "trend", "noise_floor")}, "line": stability_line(summary)}


def _node(node: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where a cluster run ran (None for a local run): the node's id, host and labels."""
    if not node:
        return None
    host = node.get("host") or {}
    return {"node_id": node.get("node_id"), "hostname": host.get("hostname"), "host_id": host.get("host_id"),
            "labels": node.get("labels") or {}}


def _baseline(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """`baseline` of run --json: the verdict against the configuration's baseline, None when it has none."""
    if not block:
        return None
    return {key: block.get(key) for key in ("run_id", "verdict", "ratio", "ci95", "p_value", "explanation",
                                            "changed")}


def _noise_beside(report: dict[str, Any]) -> str:
    """"   (machine noise 15% between windows)" beside the figures, when the noise floor is known."""
    noise = (report.get("stability") or {}).get("noise")
    return f"   (machine noise {noise:.0%} between windows)" if isinstance(noise, (int, float)) else ""


def _print_cores(report: dict[str, Any]) -> None:
    """The partition and the console's own CPU while measuring (a local run)."""
    from console.run.console_cpu import sentence

    partition = report.get("partition") or {}
    if partition.get("text"):
        used = sentence(report.get("console_cpu"))
        print(f"  cores        {partition['text']}" + (f"; {used}" if used else ""))


def _print_phase(event: dict[str, Any]) -> None:
    if event["type"] == "node":
        print(f"  … on node {event['host'].get('hostname')} ({str(event['node_id'])[:8]})", file=sys.stderr,
              flush=True)
    elif event["type"] == "phase":
        print(f"  … {event['phase']}", file=sys.stderr, flush=True)


def _print_run(report: dict[str, Any]) -> None:
    lat = report["latency_ms"]
    print(f"run {report['run_id'][:8]}  {report['status']}  {report['model']} · {report['engine']} · "
          f"{report['target']} · batch {report['batch']}")
    if report["message"]:
        print(f"  {report['message']}")
    print(f"  latency ms   p50 {fmt(lat['p50'])}   p90 {fmt(lat['p90'])}   p99 {fmt(lat['p99'])}   "
          f"mean {fmt(lat['mean'])}" + _noise_beside(report))
    print(f"  throughput   {fmt(report['throughput_per_s'], 4)} samples/s over {report['iterations']} iterations "
          f"in {fmt(report['duration_s'])} s")
    print(f"  model load   {fmt(report['load_s'])} s   first inference {fmt(report['first_inference_ms'])} ms")
    _print_cores(report)
    if report.get("until_stable"):
        print(f"  windows      {report['until_stable']['text']}")
    energy = report.get("energy")
    if energy and energy.get("joules") is not None:
        print(f"  energy       {fmt(energy['joules'])} J ({energy['method']}, {energy['scope']}), "
              f"{fmt(energy.get('joules_per_inference'))} J per inference")
    baseline = report.get("baseline")
    if baseline and baseline.get("verdict"):
        low, high = baseline["ci95"]
        relation = {"equivalent": "equally fast as", "undecided": "not told apart from",
                    "no difference": "not told apart from"}.get(baseline["verdict"], f"{baseline['verdict']} than")
        print(f"  vs baseline  {relation} {baseline['run_id'][:8]}: ratio {baseline['ratio']:.3f} "
              f"(95% CI {low:.3f}–{high:.3f}, block test p = {baseline['p_value']:.2g})")
    elif baseline:
        print(f"  vs baseline  {baseline['explanation']}")
    for warning in report["warnings"]:
        print(f"  warning: {warning}")
    if (report.get("stability") or {}).get("line"):
        print(f"  stability    {report['stability']['line']}")
    kv = (report.get("scenario") or {}).get("kv_offload")
    if kv:  # generate --kv-offload: the KV cache on storage (console.analysis.kv_offload)
        from console.analysis.kv_offload import lines

        for index, line in enumerate(lines(kv)):
            print(f"  {'kv cache' if index == 0 else '':<12} {line}")
    print(f"  {'VALID' if report['valid'] else 'INVALID'}" + ("" if report["valid"] else ":"))
    for reason in report["invalid_reasons"]:
        print(f"    - {reason['detail']}. Fix: {reason['fix']}")
    if report.get("rules"):
        from console.analysis.rules_file import describe

        print(f"  judged by    {describe(report['rules'])} (`labconsole rules show`)")
