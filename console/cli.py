"""The command line: same engine, same history as the window; `--json` on every read command."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from console import paths

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


# ---- Public API
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="labconsole", description="Lab Console: run, measure and keep AI workloads.")
    parser.add_argument("--version", action=_VersionAction)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH",
                        help=f"history database (default: ${paths.DB_ENV} or {paths.history_db(None)})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    parser.add_argument("--db", default=None, metavar="PATH", help="history database")
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", parents=[common], help="run a model once and store the run")
    run.add_argument("--model", default="mlp", help="catalog name (`labconsole models`) or a model file path "
                                                    "(.onnx, .pt2, .pt/.jit TorchScript)")
    run.add_argument("--engine", default="torch", help="torch | onnxruntime")
    run.add_argument("--target", default="cpu", help="cpu | cuda:N | mps (`labconsole targets`)")
    run.add_argument("--precision", default="fp32", help="fp32 | fp16 | bf16 | int8")
    run.add_argument("--mode", default="inference", help="inference | training (forward, backward, optimizer step)")
    run.add_argument("--scenario", default="single-stream",
                     help="single-stream | offline | server | multi-stream | generate (decoder models)")
    run.add_argument("--batch", type=int, default=1)
    run.add_argument("--duration", type=float, default=5.0, help="measurement seconds (default 5)")
    run.add_argument("--iterations", type=int, default=None, help="measure exactly N iterations instead")
    run.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds (default 1)")
    run.add_argument("--threads", type=int, default=None, help="intra-op threads (default: engine's choice)")
    run.add_argument("--name", default="")
    run.add_argument("--param", action="append", default=[], metavar="KEY=N",
                     help="catalog model size, e.g. --param layers=2 (repeatable)")
    run.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE",
                     help="input shape, e.g. --input pixel_values=1x3x224x224 (repeatable)")
    run.add_argument("--input-value", action="append", default=[], metavar="NAME=NUMBER",
                     help="value of a scalar input, e.g. --input-value sample_rate=16000 (repeatable)")
    run.add_argument("--channels-last", action="store_true", help="torch: channels-last memory format")
    run.add_argument("--compile", default=None, metavar="MODE",
                     help="torch: torch.compile mode (default | reduce-overhead | max-autotune)")
    run.add_argument("--provider", default=None, help="onnxruntime: execution provider, e.g. CUDAExecutionProvider")
    run.add_argument("--provider-option", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--allow-fallback", action="store_true",
                     help="onnxruntime: accept a fall-back to another provider instead of failing")
    run.add_argument("--graph-opt", default="all", help="onnxruntime: disabled | basic | extended | all")
    run.add_argument("--inter-threads", type=int, default=None, help="onnxruntime: inter-op threads")
    run.add_argument("--execution-mode", default="sequential", help="onnxruntime: sequential | parallel")
    run.add_argument("--opset", type=int, default=18, help="ONNX opset for exported catalog models")
    run.add_argument("--prompt-tokens", type=int, default=32, help="generate: prompt length")
    run.add_argument("--output-tokens", type=int, default=32, help="generate: tokens to generate")
    run.add_argument("--qps", type=float, default=None, metavar="RATE",
                     help="server: Poisson arrival rate (queries/s); multi-stream: queries/s at a fixed cadence "
                          "(default 20 = every 50 ms)")
    run.add_argument("--latency-bound-ms", type=float, default=None, metavar="MS",
                     help="server: p99 bound for --find-peak (otherwise reported as met or not)")
    run.add_argument("--find-peak", action="store_true",
                     help="server: search for the highest rate whose p99 stays under --latency-bound-ms")
    run.add_argument("--concurrency", type=int, default=None, metavar="N",
                     help="offline: threads calling the model at once (default 1)")
    run.add_argument("--streams", type=int, default=None, metavar="N",
                     help="multi-stream: samples per query (default 8; --batch N serves a query in one call)")
    run.add_argument("--samples-per-query", type=int, default=None, metavar="N",
                     help="offline: one query of N samples; the run ends when it is done")
    run.add_argument("--max-queries", type=int, default=None, metavar="N",
                     help="offline, server, multi-stream: stop after N queries even before --duration")
    run.add_argument("--warmup-until-stable", action="store_true",
                     help="warm up until the last three 100-ms windows agree within 10%% (instead of --warmup "
                          "seconds), at most --warmup-cap seconds")
    run.add_argument("--warmup-cap", type=float, default=None, metavar="S",
                     help="with --warmup-until-stable: the most warm-up seconds (default 30)")
    run.add_argument("--no-telemetry", action="store_true", help="do not sample CPU/memory during the run")

    history = sub.add_parser("history", parents=[common], help="list stored runs, newest first")
    history.add_argument("--limit", type=int, default=50)
    targets = sub.add_parser("targets", parents=[common], help="hardware targets on this machine")
    targets.add_argument("--refresh", action="store_true", help="rediscover instead of using the per-host cache")
    sub.add_parser("models", parents=[common], help="the model catalog")
    compare = sub.add_parser("compare", parents=[common], help="is run B faster or slower than run A?")
    compare.add_argument("run_a", metavar="RUN_A", help="run id or a unique prefix (≥ 4 characters)")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("--noise", type=float, default=0.02,
                         help="ratio band treated as noise (default 0.02 = ±2%%)")
    compare.add_argument("--alpha", type=float, default=0.01, help="Mann-Whitney U significance (default 0.01)")
    sweep = sub.add_parser("sweep", parents=[common], help="run a grid of configurations as one sweep; find the knee",
                           description="Each axis takes comma-separated values; every combination is one stored run. "
                                       "Every point is checked before anything runs.")
    sweep.add_argument("--model", default="mlp", help="catalog name or model file, as for `run`")
    sweep.add_argument("--batch", default=None, metavar="N,N,…", help="batch sizes, e.g. 1,2,4,8")
    sweep.add_argument("--threads", default=None, metavar="N,N,…", help="intra-op thread counts, e.g. 1,2")
    sweep.add_argument("--precision", default=None, metavar="P,P,…", help="e.g. fp32,bf16 (default fp32)")
    sweep.add_argument("--engine", default=None, metavar="E,E,…", help="e.g. torch,onnxruntime (default torch)")
    sweep.add_argument("--target", default=None, metavar="T,T,…", help="e.g. cpu,cuda:0 (default cpu)")
    sweep.add_argument("--qps", default=None, metavar="R,R,…",
                       help="request rates (queries/s) for the server scenario, e.g. 10,20,40")
    sweep.add_argument("--scenario", default=None,
                       help="default single-stream, or server when --qps is given")
    sweep.add_argument("--duration", type=float, default=2.0, help="measurement seconds per point (default 2)")
    sweep.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds per point (default 0.5)")
    sweep.add_argument("--param", action="append", default=[], metavar="KEY=N", help="catalog model size (repeatable)")
    sweep.add_argument("--name", default="")
    sweep.add_argument("--skip-impossible", action="store_true",
                       help="run the points that can run and list the others (default: refuse the sweep)")
    sweep.add_argument("--no-telemetry", action="store_true", help="do not sample CPU/memory during the runs")
    selftest = sub.add_parser("self-test", parents=[common], help="prove this install works (window, run, history)")
    selftest.add_argument("--out", required=True, metavar="DIR")
    telemetry = sub.add_parser("telemetry", help="what every telemetry source sees: available or why not, metrics")
    telemetry.add_argument("--seconds", type=float, default=3.0, help="how long to sample (default 3)")
    telemetry.add_argument("--rate", type=float, default=10.0, help="samples per second, 0.5-50 (default 10)")
    telemetry.add_argument("--source", action="append", default=None, metavar="NAME",
                           help="only this source (repeatable): psutil, nvml, rapl, amdsmi, estimated")
    telemetry.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None:
        from console.ui.app import run_app

        return run_app(db=args.db)
    handler = {"run": _run, "history": _history, "targets": _targets, "models": _models,
               "self-test": _self_test, "telemetry": _telemetry, "compare": _compare,
               "sweep": _sweep}[args.command]
    return handler(args)


# ---- Private API
class _VersionAction(argparse.Action):
    """`--version`: the console's, torch's, onnxruntime's, Qt's and Python's versions, and a bundle's build date.

    Computed only when asked (package metadata lookups cost start-up time), never by importing the engines.
    """

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the versions of Lab Console, its engines, Qt and Python, then exit"):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from console.about import version_text

        print(version_text(), file=sys.stdout, flush=True)
        parser.exit()


def _emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _fail(problem: str) -> int:
    print(f"labconsole: error: {problem}", file=sys.stderr)
    return EXIT_USAGE


def _open_writer(args):
    from console.history import HistoryError, HistoryWriter

    try:
        return HistoryWriter.open(paths.history_db(getattr(args, "db", None)))
    except HistoryError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return None


def _run(args) -> int:
    from console.session import RunSession

    try:
        spec = _spec_from_args(args)
    except _OptionError as exc:
        return _fail(str(exc))
    writer = _open_writer(args)
    if writer is None:
        return EXIT_FAILED
    as_json = getattr(args, "json", False)
    session = RunSession(spec, writer, listener=None if as_json else _print_phase,
                         telemetry_hz=None if args.no_telemetry else 10.0)
    previous = signal.signal(signal.SIGINT, lambda *_: session.cancel())
    try:
        session.start()
        record = session.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        writer.close()
    report = _run_report(record, spec)
    if as_json:
        _emit_json(report)
    else:
        _print_run(report)
    return {"completed": EXIT_OK, "cancelled": EXIT_CANCELLED}.get(record["status"], EXIT_FAILED)


class _OptionError(ValueError):
    """A command-line option is wrong; the message names the option as typed."""


# RunSpec field → the option that sets it, so an error names what the user typed.
_FLAGS = {"duration_s": "--duration", "warmup_s": "--warmup", "model_params": "--param", "inputs": "--input",
          "input_values": "--input-value", "torch.compile": "--compile", "torch.channels_last": "--channels-last",
          "ort.provider": "--provider", "ort.provider_options": "--provider-option",
          "ort.graph_optimization": "--graph-opt", "ort.inter_op_threads": "--inter-threads",
          "ort.execution_mode": "--execution-mode", "ort.opset": "--opset",
          "generation.prompt_tokens": "--prompt-tokens", "generation.output_tokens": "--output-tokens",
          "scenario_options.qps": "--qps", "scenario_options.latency_bound_ms": "--latency-bound-ms",
          "scenario_options.find_peak": "--find-peak", "scenario_options.concurrency": "--concurrency",
          "scenario_options.streams": "--streams", "scenario_options.samples_per_query": "--samples-per-query",
          "scenario_options.max_queries": "--max-queries",
          "scenario_options.warmup_until_stable": "--warmup-until-stable",
          "scenario_options.warmup_cap_s": "--warmup-cap"}


def _flag(field: str) -> str:
    head, _, rest = field.partition(".")
    if field in _FLAGS:
        return _FLAGS[field]
    if head in _FLAGS:
        return f"{_FLAGS[head]} {rest}"
    return "--" + field.replace("_", "-")


def _pairs(option: str, items: list[str], convert) -> dict:
    values = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _OptionError(f"{option}: expected NAME=VALUE, got {item!r}")
        try:
            values[key] = convert(value)
        except ValueError as exc:
            raise _OptionError(f"{option} {key}: {exc}") from None
    return values


def _number(text: str) -> float | int:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


def _spec_from_args(args):
    from engines.inputs import parse_shape
    from engines.spec import RunSpec, SpecError

    try:
        spec = RunSpec.from_dict({
            "model": args.model, "engine": args.engine, "target": args.target, "precision": args.precision,
            "mode": args.mode, "scenario": args.scenario, "batch": args.batch, "duration_s": args.duration,
            "iterations": args.iterations, "warmup_s": args.warmup, "threads": args.threads, "name": args.name,
            "model_params": _pairs("--param", args.param, _whole),
            "inputs": _pairs("--input", args.input, parse_shape),
            "input_values": _pairs("--input-value", args.input_value, _number),
            "torch": {"channels_last": args.channels_last, "compile": args.compile},
            "ort": {"provider": args.provider, "provider_options": _pairs("--provider-option", args.provider_option, str),
                    "allow_fallback": args.allow_fallback, "graph_optimization": args.graph_opt,
                    "inter_op_threads": args.inter_threads, "execution_mode": args.execution_mode,
                    "opset": args.opset},
            "generation": {"prompt_tokens": args.prompt_tokens, "output_tokens": args.output_tokens},
            "scenario_options": {"qps": args.qps, "latency_bound_ms": args.latency_bound_ms,
                                 "find_peak": args.find_peak, "concurrency": args.concurrency,
                                 "streams": args.streams, "samples_per_query": args.samples_per_query,
                                 "max_queries": args.max_queries, "warmup_until_stable": args.warmup_until_stable,
                                 "warmup_cap_s": args.warmup_cap},
        })
        return spec.validate()
    except SpecError as exc:
        raise _OptionError(f"{_flag(exc.field)}: {str(exc).split(': ', 1)[1]}") from None


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
        "cold_start": summary["cold_start"], "warnings": summary.get("warnings", []),
        "hygiene": (record.get("environment") or {}).get("hygiene"),
        "energy": {k: energy.get(k) for k in ("joules", "joules_per_inference", "method", "source", "scope")}
        if energy else None,
        "telemetry": {metric: {k: v.get(k) for k in ("mean", "max", "unit", "method")}
                      for metric, v in (summary.get("telemetry") or {}).items()},
        "method": summary["method"],
        "details": (record.get("environment") or {}).get("engine", {}),
    }


def _print_phase(event: dict[str, Any]) -> None:
    if event["type"] == "phase":
        print(f"  … {event['phase']}", file=sys.stderr, flush=True)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _print_run(report: dict[str, Any]) -> None:
    lat = report["latency_ms"]
    print(f"run {report['run_id'][:8]}  {report['status']}  {report['model']} · {report['engine']} · "
          f"{report['target']} · batch {report['batch']}")
    if report["message"]:
        print(f"  {report['message']}")
    print(f"  latency ms   p50 {_fmt(lat['p50'])}   p90 {_fmt(lat['p90'])}   p99 {_fmt(lat['p99'])}   "
          f"mean {_fmt(lat['mean'])}")
    print(f"  throughput   {_fmt(report['throughput_per_s'], 4)} samples/s over {report['iterations']} iterations "
          f"in {_fmt(report['duration_s'])} s")
    print(f"  model load   {_fmt(report['load_s'])} s   first inference {_fmt(report['first_inference_ms'])} ms")
    energy = report.get("energy")
    if energy and energy.get("joules") is not None:
        print(f"  energy       {_fmt(energy['joules'])} J ({energy['method']}, {energy['scope']}), "
              f"{_fmt(energy.get('joules_per_inference'))} J per inference")
    for warning in report["warnings"]:
        print(f"  warning: {warning}")
    print(f"  {'VALID' if report['valid'] else 'INVALID'}" + ("" if report["valid"] else ":"))
    for reason in report["invalid_reasons"]:
        print(f"    - {reason['detail']}. Fix: {reason['fix']}")


def _history(args) -> int:
    from console.history import HistoryError, HistoryStore

    if args.limit < 1:
        return _fail(f"--limit: must be ≥ 1, got {args.limit}")
    try:
        with HistoryStore(paths.history_db(getattr(args, "db", None))) as store:
            runs = store.list_runs(limit=args.limit)
    except HistoryError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    rows = [{"run_id": r["run_id"], "started_at": r["started_at"], "status": r["status"], "name": r["name"],
             "model": r["model"], "engine": r["engine"], "target": r["target"], "batch": r["batch"],
             "latency_ms": {"p50": ((r["summary"] or {}).get("latency_ms") or {}).get("p50")},
             "throughput_per_s": (r["summary"] or {}).get("throughput_per_s"), "error": r["error"]}
            for r in runs]
    if getattr(args, "json", False):
        _emit_json(rows)
    else:
        print(f"{'run':8}  {'started (UTC)':19}  {'status':11}  {'model':8} {'engine':6} {'target':7} "
              f"{'p50 ms':>8}  {'samples/s':>10}")
        for r in rows:
            print(f"{r['run_id'][:8]}  {r['started_at'][:19]:19}  {r['status']:11}  {r['model']:8} {r['engine']:6} "
                  f"{r['target']:7} {_fmt(r['latency_ms']['p50']):>8}  {_fmt(r['throughput_per_s'], 4):>10}")
    return EXIT_OK


def _compare(args) -> int:
    from console.analysis.compare import compare
    from console.history import HistoryError, HistoryStore

    if not 0 <= args.noise < 1:
        return _fail(f"--noise: must be from 0 to 1 (a fraction: 0.02 = ±2%), got {args.noise}")
    if not 0 < args.alpha < 1:
        return _fail(f"--alpha: must be between 0 and 1, got {args.alpha}")
    try:
        with HistoryStore(paths.history_db(getattr(args, "db", None))) as store:
            runs = []
            for option, ref in (("RUN_A", args.run_a), ("RUN_B", args.run_b)):
                run = store.get_run(ref)
                if run is None:
                    return _fail(f"{option}: no run {ref!r} in the history (`labconsole history` lists them)")
                latency_ns = store.latencies(run["run_id"])[1]
                if latency_ns.size < 2:
                    return _fail(f"{option}: run {run['run_id'][:8]} has {latency_ns.size} measured iterations; "
                                 "a comparison needs at least 2 in each run")
                runs.append((run, latency_ns / 1e6))
    except HistoryError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    (run_a, a_ms), (run_b, b_ms) = runs
    result = compare(a_ms, b_ms, noise=args.noise, alpha=args.alpha)
    report = {"run_a": run_a["run_id"], "run_b": run_b["run_id"], "label_a": _run_label(run_a),
              "label_b": _run_label(run_b), **result}
    if getattr(args, "json", False):
        _emit_json(report)
    else:
        print(f"A {run_a['run_id'][:8]}  {report['label_a']}\nB {run_b['run_id'][:8]}  {report['label_b']}")
        print(f"  B/A median ratio {result['ratio']:.4f}  95% CI [{_fmt(result['ci95'][0], 4)}, "
              f"{_fmt(result['ci95'][1], 4)}]  Mann-Whitney p = {result['p_value']:.3g}")
        print(f"  verdict: {result['verdict']} — {result['explanation']}")
    return EXIT_OK


def _run_label(run: dict[str, Any]) -> str:
    spec = run.get("spec") or {}
    return " · ".join(str(x) for x in (run["model"], run["engine"], run["target"], f"b{run['batch']}",
                                       spec.get("precision", "fp32")))


def _targets(args) -> int:
    from console.targets import discover_targets

    targets = discover_targets(refresh=args.refresh)
    if getattr(args, "json", False):
        _emit_json(targets)
    else:
        for t in targets:
            state = "available" if t["available"] else f"not available ({t['reason']})"
            print(f"{t['id']:8} {t['name'][:48]:48} {state}")
    return EXIT_OK


def _models(args) -> int:
    from engines import catalog

    models = catalog.describe()
    if getattr(args, "json", False):
        _emit_json(models)
    else:
        for m in models:
            print(f"{m['name']:6} {m['description']}  input {m['input']}")
    return EXIT_OK


def _self_test(args) -> int:
    from console.ui.selftest import self_test

    return self_test(args.out, db=getattr(args, "db", None))


def _telemetry(args) -> int:
    from console.telemetry.snapshot import collect, format_text

    if not args.seconds > 0:
        return _fail(f"--seconds: must be > 0, got {args.seconds:g}")
    try:
        report = collect(args.seconds, rate_hz=args.rate, sources=args.source)
    except ValueError as exc:
        return _fail(str(exc).replace("rate_hz", "--rate"))
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except RuntimeError as exc:
        print(f"labconsole: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        _emit_json(report)
    else:
        print(format_text(report))
    return EXIT_OK


def _sweep(args) -> int:
    """`labconsole sweep`: every point checked first, then run one at a time; Ctrl+C stops after the point."""
    from console.sweep import SweepError, SweepGrid, SweepRun, knee_text, report
    from console.targets import discover_targets

    as_json = getattr(args, "json", False)
    try:
        grid = SweepGrid.parse(batch=args.batch, threads=args.threads, precision=args.precision,
                               engine=args.engine, target=args.target, qps=args.qps)
        base = {"model": args.model, "scenario": args.scenario or ("server" if args.qps else "single-stream"),
                "duration_s": args.duration, "warmup_s": args.warmup, "name": args.name,
                "model_params": _pairs("--param", args.param, _whole)}
    except (SweepError, _OptionError) as exc:
        return _fail(str(exc))
    writer = _open_writer(args)
    if writer is None:
        return EXIT_FAILED
    interrupts: list[int] = []
    try:
        try:
            sweep = SweepRun(base, grid, writer, name=args.name, on_point=_print_sweep_progress,
                             targets=discover_targets(), strict=not args.skip_impossible,
                             session_options={"telemetry_hz": None if args.no_telemetry else 10.0})
        except SweepError as exc:
            return _fail(_sweep_problem(exc))

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
        writer.close()
    if as_json:
        _emit_json(report(record))
    else:
        _print_sweep(record, knee_text(record["knee"], record["knee_axis"]))
    return {"completed": EXIT_OK, "cancelled": EXIT_CANCELLED}.get(record["status"], EXIT_FAILED)


def _sweep_problem(exc) -> str:
    """The message for a refused sweep: the option at fault, or each impossible point with its reason."""
    from console.sweep import impossible_lines

    if exc.headline:
        hint = "\n(--skip-impossible runs the points that can run)" if "cannot run" in exc.headline else ""
        return f"{exc.headline}:\n  " + "\n  ".join(impossible_lines(exc.impossible)) + hint
    if not exc.axis:
        return exc.detail
    option = exc.axis if exc.axis.startswith("-") else _flag(exc.axis)
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
        elif r["message"]:
            line += f" — {r['message']}"
        print(line, file=sys.stderr, flush=True)


def _print_sweep(record: dict[str, Any], knee_line: str) -> None:
    from console.sweep import format_rate

    points = record["points"]
    width = max([len("point")] + [len(p["label"]) for p in points + record.get("skipped", [])])
    print(f"sweep {record['sweep_id'][:8]}  {record['status']}  {record['name']}".rstrip())
    print(f"  {'point':{width}}  {'status':10} {'p50 ms':>9} {'p99 ms':>9} {'samples/s':>11}  run")
    for p in points:
        lat = p["latency_ms"]
        print(f"  {p['label']:{width}}  {p['status']:10} {_fmt(lat['p50']):>9} {_fmt(lat['p99']):>9} "
              f"{format_rate(p['throughput_per_s']):>11}  {(p['run_id'] or '')[:8]}")
    for p in record.get("skipped", []):
        print(f"  {p['label']:{width}}  {'skipped':10} {'':>9} {'':>9} {'':>11}  {p['reason']}")
    failed = [p for p in points if p["status"] == "failed"]
    for p in failed:
        print(f"  {p['label']} failed: {p['message']}")
    if any(p["status"] == "completed" and p["latency_ms"]["p99"] is None for p in points):
        print("  — : percentile withheld, too few samples back it (a longer --duration gives more)")
    print(f"  {knee_line}")
