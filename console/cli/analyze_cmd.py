"""`labconsole analyze`: a run (the same options as `run`), then the engine's own profile taken apart from the
timed measurement: the op table, the roofs of this machine's card, the verdict, and a Chrome trace."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from typing import Any

from console.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_spec_options,
    console_partition,
    db_path,
    emit_json,
    fail,
    fmt,
    open_writer,
    status_exit,
    wants_json,
)
from console.cli.run_options import add_run_options, spec_and_rules

NAME = "analyze"
HELP = "run a model, then profile it apart: op table, roofs, verdict, Chrome trace"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from console.analysis.profile_view import PROFILE_ITERATIONS
    from engines.spec import spec_fields

    add_spec_options(parser, spec_fields(), defaults={"profile_iterations": PROFILE_ITERATIONS})
    parser.add_argument("--trace", metavar="FILE", default=None,
                        help="also write the Chrome trace here (open it in Perfetto or chrome://tracing)")
    add_run_options(parser)
    from console.cli.analyze_confirm import add_arguments as add_confirm_arguments

    add_confirm_arguments(parser)
    parser.add_argument_group("lab cluster (needs lab-console[cluster])").add_argument(
        "--cluster", metavar="ADDRESS", default=None,
        help="with --ranks: Ray places the ranks on the nodes of this lab cluster (HOST:PORT of its head); the "
             "worker, the profile and the analysis stay here")


def main(args: argparse.Namespace) -> int:
    from console.cli.run_cmd import _noise_floor, _run_report
    from console.run.session import RunSession

    found = spec_and_rules(args)
    if isinstance(found, int):
        return found
    spec, rules = found
    if args.cluster is not None:  # Ray places the ranks; the worker stays here
        spec = _ranks_on_cluster(spec, args.cluster)
        if isinstance(spec, int):
            return spec
    from console.cli.arguments import data_dir_problem

    trace = _trace_target(args.trace, db_path(args))  # before the machine card, the history or a worker: nothing measured
    if isinstance(trace, int):
        return trace
    problem = None if args.cluster else data_dir_problem(getattr(spec.scenario_options, "data_dir", None),
                                                         spec.model)  # with --cluster, each node's own folder
    if problem:
        if trace is not None:
            trace.close()
        return fail(problem)
    # The card first (measured once per host and target when none is stored), so the verdict stored with the run
    # is judged against it, as the report below is.
    card, card_note = _machine_card(spec.target, args)
    writer = open_writer(args)
    if writer is None:
        if trace is not None:
            trace.close()
        return EXIT_FAILED
    as_json = wants_json(args)
    noise_floor = _noise_floor(args, spec, None, as_json)  # the card's when just measured, else recent or quick
    from console.cli.progress import live_listener

    listener, line = live_listener(spec, as_json, _print_phase, f"analyze {spec.model}")  # live on a terminal
    session = RunSession(spec, writer, listener=listener,
                         telemetry_hz=None if args.no_telemetry else 10.0, partition=console_partition(args),
                         rules=rules, noise_floor=noise_floor)
    previous = signal.signal(signal.SIGINT, lambda *_: session.cancel())
    try:
        session.start()
        record = session.wait()
    finally:
        line.close()
        signal.signal(signal.SIGINT, previous)
        writer.close()
    report = _run_report(record, spec)
    report.update(_analysis(record, card, card_note))
    report["repeats"] = _repeats(record, report.get("bottleneck"), args)
    trace_failed = False
    if trace is not None:
        report["trace_file"] = _copy_trace(report["profile"], trace)
        trace_failed = report["trace_file"] is None and bool((report["profile"] or {}).get("trace_path"))
    if not as_json:
        _print_analysis(report)
    confirmed = EXIT_OK
    if args.confirm:  # the verdict's experiments, after the analysis is shown (console.cli.analyze_confirm)
        from console.cli.analyze_confirm import confirm, print_confirmation

        confirmed = confirm(args, spec, record, report, card, as_json)
        if not as_json:
            print_confirmation(report["confirmation"])
    if as_json:
        emit_json(report)
    code = status_exit(record["status"])
    code = confirmed if code == EXIT_OK else code  # a confirmation round that failed is exit 1
    return EXIT_FAILED if code == EXIT_OK and trace_failed else code  # a --trace asked for and not written


# ---- Private API
def _ranks_on_cluster(spec, address: str) -> Any:
    """The spec with its --ranks placed by Ray at `address` (engine_options.torch.ranks_cluster), or an exit code
    after saying what is wrong: --cluster without --ranks (2), a cluster this worker could not join."""
    from console.cli.ranks_cluster import place_ranks
    from engines.ddp import is_distributed

    if not is_distributed(spec):
        return fail("--cluster on analyze places the --ranks of a data-parallel run on a lab cluster; the "
                    "analysis of a whole run is taken here: give --ranks N (with --mode training), or drop "
                    "--cluster (`labconsole run --cluster ADDRESS` runs a whole run on a node)")
    return place_ranks(spec, address)


def _analysis(record: dict[str, Any], card: dict[str, Any] | None, card_note: str) -> dict[str, Any]:
    """ops (with efficiency and bound where a machine card gives roofs), profile, machine, bottleneck (the one
    stored with the run)."""
    from console.analysis.finished_run import analysis_verdict, op_table

    profile = record.get("profile")
    notes = list((profile or {}).get("notes") or []) + ([card_note] if card_note else [])
    return {"ops": op_table(record, card), "profile": {**profile, "notes": notes} if profile else None,
            "machine": card, "bottleneck": analysis_verdict(record, card)}


def _repeats(record: dict[str, Any], verdict: dict[str, Any] | None, args: argparse.Namespace
             ) -> dict[str, Any] | None:
    """Whether the earlier analyses of this configuration (its fingerprint in the history) gave the same class
    (console.analysis.verdict_stability.repeat_agreement); None without a verdict."""
    if not verdict or not record.get("run_id"):
        return None
    from console.analysis.verdict_stability import earlier_verdicts, repeat_agreement
    from console.history import HistoryError, open_reader

    try:
        with open_reader(db_path(args)) as store:
            earlier = earlier_verdicts(store, record["run_id"])
    except HistoryError:  # a history that cannot be read has no earlier analyses to compare with
        earlier = []
    return repeat_agreement(earlier, current=verdict)


def _machine_card(target: str, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """This host's card for the target: the stored one, else measured now and stored (once per host and target;
    `labconsole machine --refresh` measures again) — console.machine.cards.card_for_analysis, the window's Analyze's too. The
    note says why there is none."""
    from console.machine.cards import card_before_analysis, card_for_analysis

    if card_before_analysis(target, db_path(args)) is None:
        print(f"  … measuring the machine card of {target} (once; kept in the history)", file=sys.stderr,
              flush=True)
    answer = card_for_analysis(target, db_path(args))
    return answer.card, answer.note


def _trace_target(text: str | None, history=None):
    """--trace FILE checked before anything runs (console.files.output_file, as every --out): a directory, a missing or
    read-only folder, a name too long, a FIFO nobody reads is exit 2. Standard output carries the report, so `-`
    is refused. None without --trace."""
    if text is None:
        return None
    from console.files.output_file import OutputError, check_out

    try:
        target = check_out(text, option="--trace", example="trace.json", keep=history)
    except OutputError as exc:
        return fail(str(exc))
    if target.is_stdout:
        return fail(f"--trace {text}: standard output carries the analysis; give a file such as trace.json")
    return target


def _copy_trace(profile: dict[str, Any] | None, target) -> str | None:
    """The recorded trace written whole at the checked --trace target; None (said on stderr) when it was not."""
    from console.files.output_file import OutputError, shown, write_out

    with target:
        source = (profile or {}).get("trace_path")
        if not source:
            print("labconsole: warning: no Chrome trace was recorded, --trace not written", file=sys.stderr)
            return None
        try:
            with open(source, "rb") as recorded:
                write_out(target, lambda stream: shutil.copyfileobj(recorded, stream), binary=True, option="--trace")
        except (OSError, OutputError) as exc:
            print(f"labconsole: error: could not write the trace to {shown(target.text)} "
                  f"({getattr(exc, 'strerror', None) or exc}); the run is stored and its trace is at {source}",
                  file=sys.stderr)
            return None
        return target.text


def _print_phase(event: dict[str, Any]) -> None:
    if event["type"] == "phase":
        print(f"  … {event['phase']}", file=sys.stderr, flush=True)


COLUMNS = (  # header, key, formatter
    ("op", "op", str), ("calls", "calls", str), ("share %", "share", lambda v: fmt(v * 100)),
    ("time ms", "time_s", lambda v: fmt(v * 1e3)), ("GFLOP", "flops", lambda v: fmt(v / 1e9)),
    ("MB", "bytes", lambda v: fmt(v / 1e6)), ("FLOP/B", "intensity", fmt),
    ("GFLOP/s", "achieved_flops_s", lambda v: fmt(v / 1e9)), ("GB/s", "achieved_bytes_s", lambda v: fmt(v / 1e9)),
    ("eff %", "efficiency", lambda v: fmt(v * 100)), ("bound", "bound", str),
)


def op_table_lines(ops: list[dict[str, Any]]) -> list[str]:
    """The op table as aligned text lines, one header line then one line per op."""
    cells = [[header for header, _, _ in COLUMNS]]
    for op in ops:
        cells.append([fmt(None) if op.get(key) is None else show(op[key]) for _, key, show in COLUMNS])
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in cells]


def _print_analysis(report: dict[str, Any]) -> None:
    from console.cli.run_cmd import _print_run

    _print_run(report)
    profile = report.get("profile")
    if not profile:
        print("  no profile: the run ended before its profiling phase")
        return
    print(f"\n  profile: {profile['iterations']} iterations in {fmt(profile['wall_s'])} s, "
          f"{fmt(profile['op_time_s'])} s inside ops ({profile['engine']})")
    if report["ops"]:
        for line in op_table_lines(report["ops"]):
            print(f"  {line}")
    for note in profile.get("notes") or []:
        print(f"  note: {note}")
    counters = profile.get("counters")
    if counters and counters.get("available"):
        print(f"  counters: IPC {fmt(counters.get('ipc'))}, LLC miss rate {fmt(counters.get('llc_miss_rate'))} "
              f"({counters.get('method')})")
    elif counters:
        print(f"  counters: {counters.get('reason')}")
    verdict = report.get("bottleneck")
    if verdict:
        print(f"\n  verdict: {verdict['sentence']}")
        if verdict["recommendation"] not in verdict["sentence"]:
            print(f"  {verdict['recommendation']}")
        stability = verdict.get("stability") or {}
        if stability.get("available"):
            split = ", ".join(f"{name} {'<1%' if share < 0.01 else format(share, '.0%')}"
                              for name, share in stability["classes"].items())
            print(f"  stability: {split} of {stability['resamples']} resamples of the profiled iterations")
        elif stability:
            print(f"  stability: not available ({stability.get('reason')})")
        if report.get("repeats"):
            print(f"  repeats: {report['repeats']['text']}")
    if profile.get("trace_path"):
        print(f"  trace: {profile['trace_path']}" + (f" (copied to {report['trace_file']})"
                                                      if report.get("trace_file") else ""))
